// Package longmessage holds failures whose message is longer than a table
// row, for the tests of every surface that shortens one (the CLI tables,
// the status page, list_tool_health). Only tests import it; it imports
// results, so it cannot live in internal/testkit, which results' own tests
// import.
package longmessage

import (
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// Messages as the engine words them: the observation or the argument's
// name is at the end.
const (
	Claim = "step verify: claim not confirmed within 10s (11 polls): " +
		"`response.state == \"refunded\" && response.refund_id == vars.refund_id` was false: state: \"paid\""
	ToolInput = `tools/call "get-weather": JSON-RPC error -32602 "validating \"arguments\": validating root: ` +
		`required: missing properties: [\"location\"]": the server rejects the arguments`
)

// Kept are what a shortened Claim and ToolInput must still say: where it
// happened and what was observed.
var Kept = []string{"step verify: claim not confirmed", `was false: state: "paid"`,
	`tools/call "get-weather"`, `properties: [\"location\"]`}

// Results are two failed runs, at at and a second later, one with each
// message: a steps probe's claim_mismatch and an MCP probe's tool_input.
func Results(at time.Time) []results.Result {
	return []results.Result{
		{OperationID: "op-claim", Probe: "refund_order_31", StartedAt: at, Duration: 40 * time.Millisecond,
			Outcome: results.ContractError, HTTPStatus: 200, Kind: results.ProbeSteps, Step: "verify",
			Error:    results.NewError(results.CodeClaimMismatch, "%s", Claim),
			Attempts: []results.Attempt{{Number: 1, StartedAt: at, Duration: 40 * time.Millisecond, HTTPStatus: 200, Step: "verify"}}},
		{OperationID: "op-input", Probe: "weather_tool", StartedAt: at.Add(time.Second), Duration: 12 * time.Millisecond,
			Outcome: results.ContractError, HTTPStatus: 200, Kind: results.ProbeMCP,
			MCP:   &results.MCPTarget{Server: "http://127.0.0.1:3901/mcp", Tool: "get-weather"},
			Error: results.NewError(results.CodeToolInput, "%s", ToolInput),
			Attempts: []results.Attempt{{Number: 1, StartedAt: at.Add(time.Second), Duration: 12 * time.Millisecond,
				HTTPStatus: 200, Code: results.CodeToolInput, Message: ToolInput}}},
	}
}
