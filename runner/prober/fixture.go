package prober

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"

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

// JudgeFixture returns the verdict a run of a probe with consumer c and
// expect.status expectStatus would reach on f's canned exchange: the status
// is classified exactly as a live response's is (so a 503 fixture is
// unavailable/server_error), then the consumer judges the body under the
// fixture's min_results. The rules see no request and no probe name.
func JudgeFixture(c *consumers.Consumer, f consumers.Fixture, expectStatus []int) FixtureVerdict {
	status := cmp.Or(f.Status, http.StatusOK)
	if code := codeOf(nil, status, expectStatus); code != "" {
		return FixtureVerdict{Outcome: code.Outcome(),
			Error: results.NewError(code, "HTTP %d %s", status, http.StatusText(status))}
	}
	in := consumers.Input{Response: f.Response, Status: status, Headers: f.Headers}
	if result, ok := f.ToolResult(); ok {
		response, isError, err := fixtureResponse(f)
		if err != nil {
			return FixtureVerdict{Outcome: results.ContractError, Error: results.NewError(results.CodeInternalError, "%v", err)}
		}
		if isError {
			return FixtureVerdict{Outcome: results.ContractError,
				Error: results.NewError(results.CodeToolError, "the fixture's result says isError: true")}
		}
		in.Response, in.Result = response, result
	}
	v := c.Apply(in, f.MinResults)
	out := FixtureVerdict{Outcome: results.Pass, Error: v.Err, Selected: v.Selected, Validated: v.Validated}
	if v.Err != nil {
		out.Outcome = v.Err.Code.Outcome()
	}
	return out
}
