package runner

import (
	"cmp"
	"net/http"

	"github.com/toolpulse/toolpulse/consumers"
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

// JudgeFixture returns the verdict a run of a probe with consumer c and
// expect.status expectStatus would reach on f's canned exchange: the status
// is classified exactly as a live response's is (so a 503 fixture is
// unavailable/server_error), then the consumer judges the body under the
// fixture's min_results. The rules see no request and no probe name.
func JudgeFixture(c *consumers.Consumer, f consumers.Fixture, expectStatus []int) FixtureVerdict {
	status := cmp.Or(f.Status, http.StatusOK)
	if code := classify(nil, status, expectStatus); code != "" {
		return FixtureVerdict{Outcome: code.Outcome(),
			Error: results.NewError(code, "HTTP %d %s", status, http.StatusText(status))}
	}
	v := c.Apply(consumers.Input{Response: f.Response, Status: status, Headers: f.Headers}, f.MinResults)
	out := FixtureVerdict{Outcome: results.Pass, Error: v.Err, Selected: v.Selected, Validated: v.Validated}
	if v.Err != nil {
		out.Outcome = v.Err.Code.Outcome()
	}
	return out
}
