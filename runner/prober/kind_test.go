package prober

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/results"
)

// TestResultSaysWhatItCalled: every result says what kind of probe ran
// it; an MCP probe's names its tool and server, without the URL's
// credentials or query, whether the run passed or never reached the
// server.
func TestResultSaysWhatItCalled(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Config{Era: mcptest.Legacy, Tools: []mcptest.Tool{searchTool()}})
	e := NewExecutor(Options{})

	res := e.Run(context.Background(), mcpProbe(srv, results.ContractError))
	if res.Outcome != results.Pass {
		t.Fatalf("MCP run: %s %v, want pass", res.Outcome, res.Error)
	}
	if want := (results.MCPTarget{Tool: "search", Server: srv.URL}); res.Kind != results.ProbeMCP || res.MCP == nil || *res.MCP != want {
		t.Errorf("MCP run: kind %q, mcp %+v; want mcp, %+v", res.Kind, res.MCP, want)
	}

	refused := mcpProbe(srv, results.ContractError)
	refused.Steps[0].MCP.URL = "http://user:pw-SECRET@127.0.0.1:1/mcp?token=t0k3n"
	refused.Steps[0].Retries.MaxAttempts = 1
	res = e.Run(context.Background(), refused)
	if res.Outcome != results.Unavailable {
		t.Fatalf("MCP run on a closed port: %s %v, want unavailable", res.Outcome, res.Error)
	}
	if want := (results.MCPTarget{Tool: "search", Server: "http://127.0.0.1:1/mcp"}); res.MCP == nil || *res.MCP != want {
		t.Errorf("MCP run on a closed port: mcp %+v, want %+v", res.MCP, want)
	}

	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(searchBody(2)))
	}))
	defer provider.Close()
	defer e.CloseIdleConnections()
	res = e.Run(context.Background(), testProbe(t, provider.URL))
	if res.Kind != results.ProbeHTTP || res.MCP != nil {
		t.Errorf("HTTP run: kind %q, mcp %+v; want http and no mcp", res.Kind, res.MCP)
	}
	if env := res.Envelope(); env.Kind != results.ProbeHTTP || env.MCP != nil {
		t.Errorf("HTTP envelope: %+v", env)
	}
}
