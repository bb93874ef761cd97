package consumers

import (
	"fmt"

	"github.com/toolpulse/toolpulse/results"
)

// Fixture is a canned response a consumer must judge in a known way; run
// by `toolpulse test` (SPEC §4). It gives either Response (the decoded
// answer) or, for a consumer of an MCP tool, Result (the whole
// CallToolResult, SPEC §10); the loader makes sure of exactly one.
type Fixture struct {
	Name     string
	Response any // rule values, as DecodeJSON or Normalize return them
	// Result is the fixture's CallToolResult as rule values: content (a
	// list of content items, each with a string type), structuredContent
	// (an object) and isError (a bool), each optional but content. nil
	// for a fixture that gives Response; see ToolResult.
	Result  map[string]any
	Status  int // 0 means 200
	Headers map[string]string
	// MinResults is the min_results the fixture is judged under, as a
	// probe's expect.min_results would be; the loader defaults it to 1.
	MinResults int
	Expect     Expectation
}

// ToolResult returns the fixture's CallToolResult and true when it gives
// result: instead of response:, so that what the rule sees as response
// is derived from it as from a tools/call answer.
func (f Fixture) ToolResult() (map[string]any, bool) {
	return f.Result, f.Result != nil
}

// Expectation is the verdict a fixture must produce: an outcome, and
// optionally the exact code (non-pass) or a minimum selected count (pass).
type Expectation struct {
	Outcome     results.Outcome
	Code        results.Code // "" matches any code
	MinSelected int          // 0 means no minimum beyond the probe's rules
}

// AcceptedMutation acknowledges a mutation that `toolpulse test --mutate`
// finds surviving, with the reason the author accepts it.
type AcceptedMutation struct {
	Mutation string
	Reason   string
}

// Mismatch says how a verdict (outcome, code "" on pass, items selected)
// misses the expectation, or "" when it meets it.
func (x Expectation) Mismatch(outcome results.Outcome, code results.Code, selected int) string {
	switch {
	case outcome != x.Outcome:
		return fmt.Sprintf("got %s, want %s", outcome, x.Outcome)
	case x.Code != "" && code != x.Code:
		return fmt.Sprintf("got code %s, want %s", code, x.Code)
	case selected < x.MinSelected:
		return fmt.Sprintf("selected %d, want at least %d", selected, x.MinSelected)
	}
	return ""
}

// String is the expectation as a table shows it: "pass", "pass (≥ 2
// selected)", "contract_error rule_error".
func (x Expectation) String() string {
	s := string(x.Outcome)
	if x.Code != "" {
		s += " " + string(x.Code)
	}
	if x.MinSelected > 0 {
		s += fmt.Sprintf(" (≥ %d selected)", x.MinSelected)
	}
	return s
}
