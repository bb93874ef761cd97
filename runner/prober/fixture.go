package prober

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// FixtureVerdict is what a probe run would make of a fixture's exchange.
type FixtureVerdict struct {
	Outcome   results.Outcome
	Error     *results.Error // nil exactly on pass
	Selected  int
	Validated int
}

// Code is the verdict's code, "" on pass.
func (v FixtureVerdict) Code() results.Code {
	if v.Error == nil {
		return ""
	}
	return v.Error.Code
}

// fixtureResponse is what a consumer's rules see as response for fixture
// f: its response:, or, for a result: fixture (an MCP tool's whole
// CallToolResult), what a live call of the tool would give them (SPEC
// §10), with the result's isError.
func fixtureResponse(f consumers.Fixture) (response any, isError bool, err error) {
	result, ok := f.ToolResult()
	if !ok {
		return f.Response, false, nil
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return nil, false, fmt.Errorf("fixture %s: result: %w", f.Name, err)
	}
	resp, isError := mcpsdk.ResponseOf(raw)
	v, err := consumers.DecodeJSON(resp)
	if err != nil {
		return nil, false, fmt.Errorf("fixture %s: result: %w", f.Name, err)
	}
	return v, isError, nil
}

// FixtureBase is f as a mutation base for `toolpulse test --mutate`:
// what the rules see of it as response and, for a result: fixture, the
// whole result, which carries each mutated response where the response
// came from, so that a rule reading result.structuredContent is tested
// as one reading response is.
func FixtureBase(f consumers.Fixture) (consumers.MutationBase, error) {
	response, _, err := fixtureResponse(f)
	if err != nil {
		return consumers.MutationBase{}, err
	}
	b := consumers.MutationBase{Name: f.Name, Response: response, Status: f.Status, Headers: f.Headers,
		MinResults: f.MinResults}
	if result, ok := f.ToolResult(); ok {
		b.Result = result
		b.ResultWith = func(response any) map[string]any { return mcpsdk.ResultWith(result, response) }
	}
	return b, nil
}

// JudgeFixture returns the verdict a single probe whose call consumer c
// judges under expect.status expectStatus would reach on f's canned
// answer, run by the engine a live run uses (see runCanned): the status
// is classified exactly as a live response's is (so a 503 fixture is
// unavailable/server_error), a result's isError is a tool error, then the
// consumer judges the answer under the fixture's min_results. The rules
// see no request and no probe name.
func (e *Executor) JudgeFixture(c *consumers.Consumer, f consumers.Fixture, expectStatus []int) FixtureVerdict {
	call := checks.Step{Consumer: c, Expect: checks.Expect{Status: expectStatus, MinResults: f.MinResults},
		Retries: checks.Retries{MaxAttempts: 1, Budget: time.Minute}}
	if _, ok := f.ToolResult(); ok {
		call.MCP = &checks.MCP{IsError: results.ContractError} // a tool's answer
	}
	res := e.runCanned(&checks.Probe{Steps: []checks.Step{call}}, map[string][]consumers.Fixture{"": {f}})
	return FixtureVerdict{Outcome: res.Outcome, Error: res.Error, Selected: res.SelectedCount, Validated: res.ValidatedCount}
}
