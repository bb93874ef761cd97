package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// Failures whose message is longer than a table row, as the engine words
// them: the observation or the argument's name is at the end.
var (
	claimMessage = "step verify: claim not confirmed within 10s (11 polls): " +
		"`response.state == \"refunded\" && response.refund_id == vars.refund_id` was false: state: \"paid\""
	toolInputMessage = `tools/call "get-weather": JSON-RPC error -32602 "validating \"arguments\": validating root: ` +
		`required: missing properties: [\"location\"]": the server rejects the arguments`
)

func longMessageResults(at time.Time) []results.Result {
	return []results.Result{
		{OperationID: "op-claim", Probe: "refund_order_31", StartedAt: at, Duration: 40 * time.Millisecond,
			Outcome: results.ContractError, HTTPStatus: 200, Kind: results.ProbeSteps, Step: "verify",
			Error:    results.NewError(results.CodeClaimMismatch, "%s", claimMessage),
			Attempts: []results.Attempt{{Number: 1, StartedAt: at, Duration: 40 * time.Millisecond, HTTPStatus: 200, Step: "verify"}}},
		{OperationID: "op-input", Probe: "weather_tool", StartedAt: at.Add(time.Second), Duration: 12 * time.Millisecond,
			Outcome: results.ContractError, HTTPStatus: 200, Kind: results.ProbeMCP,
			MCP:   &results.MCPTarget{Server: "http://127.0.0.1:3901/mcp", Tool: "get-weather"},
			Error: results.NewError(results.CodeToolInput, "%s", toolInputMessage),
			Attempts: []results.Attempt{{Number: 1, StartedAt: at.Add(time.Second), Duration: 12 * time.Millisecond,
				HTTPStatus: 200, Code: results.CodeToolInput, Message: toolInputMessage}}},
	}
}

// kept are what a shortened message must still say: where it happened and
// what was observed.
var kept = []string{"step verify: claim not confirmed", `was false: state: "paid"`,
	`tools/call "get-weather"`, `properties: [\"location\"]`}

// TestTablesKeepTheObservation: the check and history tables shorten a
// long message by its rule text and middle, never by what was observed.
func TestTablesKeepTheObservation(t *testing.T) {
	all := longMessageResults(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var check, history bytes.Buffer
	if err := printTable(&check, all); err != nil {
		t.Fatal(err)
	}
	if err := writeHistoryTable(&history, all, true, false); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"check": check.String(), "history --attempts": history.String()} {
		for _, want := range kept {
			if !strings.Contains(out, want) {
				t.Errorf("the %s table lacks %q:\n%s", name, want, out)
			}
		}
		if strings.Contains(out, "vars.refund_id") {
			t.Errorf("the %s table shows the whole rule, it is longer than a row:\n%s", name, out)
		}
	}
	// The attempt row shows the server's words too.
	if n := strings.Count(history.String(), `[\"location\"]`); n != 2 {
		t.Errorf("history --attempts names the argument %d times, want the run's row and its attempt's:\n%s", n, history.String())
	}
}
