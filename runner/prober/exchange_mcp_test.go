package prober

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/probetest"
	"github.com/toolpulse/toolpulse/results"
)

var (
	searchTool = probetest.SearchTool
	mcpProbe   = probetest.MCPProbe
)

// TestMCPProbeRuns: an MCP probe runs the consumer's rules on the tool's
// answer, each attempt in a fresh session that carries the probe's
// headers; a tool error is the probe's is_error outcome, retried only when
// that is unavailable.
func TestMCPProbeRuns(t *testing.T) {
	for _, era := range []mcptest.Era{mcptest.Legacy, mcptest.Stateless} {
		t.Run("pass", func(t *testing.T) {
			srv := mcptest.Start(t, mcptest.Config{Era: era, Tools: []mcptest.Tool{searchTool()}})
			res := NewExecutor(Options{}).Run(context.Background(), mcpProbe(srv, results.ContractError))
			if res.Outcome != results.Pass || res.ValidatedCount != 1 || res.AttemptCount() != 1 || res.HTTPStatus != 200 {
				t.Fatalf("run = %s %v, validated %d, %d attempts, HTTP %d; want a pass of one item in one attempt",
					res.Outcome, res.Error, res.ValidatedCount, res.AttemptCount(), res.HTTPStatus)
			}
			if res.Shape == nil || res.Shape.Fingerprint == "" {
				t.Errorf("the answer has no shape: %+v", res.Shape)
			}
			for _, r := range srv.Requests() {
				if r.Header.Get("Authorization") != "Bearer sk-mcp-SECRET" {
					t.Errorf("%s %s went without the probe's Authorization header", r.HTTPMethod, r.Method)
				}
			}
		})
		for _, tt := range []struct {
			isError  results.Outcome
			code     results.Code
			attempts int
		}{
			{results.ContractError, results.CodeToolError, 1},
			{results.Unavailable, results.CodeToolUnavailable, 3},
		} {
			t.Run("is_error "+string(tt.isError), func(t *testing.T) {
				srv := mcptest.Start(t, mcptest.Config{Era: era, Tools: []mcptest.Tool{searchTool()},
					Faults: []mcptest.Fault{mcptest.ToolError("the index is rebuilding")}})
				res := NewExecutor(Options{}).Run(context.Background(), mcpProbe(srv, tt.isError))
				if res.Outcome != tt.isError || res.Code() != tt.code || res.AttemptCount() != tt.attempts {
					t.Errorf("run = %s %s, %d attempts; want %s %s in %d", res.Outcome, res.Code(), res.AttemptCount(),
						tt.isError, tt.code, tt.attempts)
				}
				if got := len(srv.Calls("tools/call")); got != tt.attempts {
					t.Errorf("%d tools/call requests, want %d: one per attempt", got, tt.attempts)
				}
				if era == mcptest.Legacy {
					if got := len(srv.Calls("initialize")); got != tt.attempts {
						t.Errorf("%d sessions for %d attempts, want a fresh one each", got, tt.attempts)
					}
					if open := srv.Sessions(); open != 0 {
						t.Errorf("%d sessions left open, want every one closed with its attempt", open)
					}
				}
			})
		}
	}
}

// TestMCPProbeRuleSeesToolAndResult: the consumer's rules see the tool's
// listed definition as tool and the whole CallToolResult as result.
func TestMCPProbeRuleSeesToolAndResult(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Config{Era: mcptest.Legacy, Tools: []mcptest.Tool{searchTool()}})
	p := mcpProbe(srv, results.ContractError)
	p.Steps[0].Consumer = mustConsumer("tool_aware", `tool.name == "search" && result.isError != true && len(result.content) == 1 ? response.results : []`,
		`type(.id) == "string"`)
	res := NewExecutor(Options{}).Run(context.Background(), p)
	if res.Outcome != results.Pass || res.ValidatedCount != 1 {
		t.Errorf("run = %s %v, validated %d; want a pass: the rule sees tool and result", res.Outcome, res.Error, res.ValidatedCount)
	}
}

// TestMCPProbeKeepsOutputSchema: the executor compiles a tool's
// outputSchema once for all its runs, and every run still checks the
// answer against it.
func TestMCPProbeKeepsOutputSchema(t *testing.T) {
	typed := searchTool()
	typed.OutputSchema = json.RawMessage(`{"type":"object","properties":{"results":{"type":"array"}},"required":["results"]}`)
	srv := mcptest.Start(t, mcptest.Config{Era: mcptest.Legacy, Tools: []mcptest.Tool{typed}})
	e := NewExecutor(Options{})
	defer e.CloseIdleConnections()
	p := mcpProbe(srv, results.ContractError)
	for range 2 {
		if res := e.Run(context.Background(), p); res.Outcome != results.Pass {
			t.Fatalf("run = %s %v, want a pass", res.Outcome, res.Error)
		}
	}
	if n := e.schemas.Len(); n != 1 {
		t.Errorf("the executor holds %d compiled schemas after two runs, want the tool's one", n)
	}
	srv.SetFaults(mcptest.StructuredMismatch())
	if res := e.Run(context.Background(), p); res.Code() != results.CodeOutputSchema {
		t.Errorf("run = %s %s, want output_schema: the kept schema still judges the answer", res.Outcome, res.Code())
	}
}
