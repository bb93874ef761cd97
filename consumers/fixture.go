package consumers

import "github.com/toolpulse/toolpulse/results"

// Fixture is a canned response a consumer must judge in a known way; run
// by `toolpulse test` (SPEC §4).
type Fixture struct {
	Name     string
	Response any // rule values, as DecodeJSON or Normalize return them
	Status   int // 0 means 200
	Headers  map[string]string
	Expect   Expectation
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
