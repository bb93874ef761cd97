package prober

import (
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

// poller runs a verification (SPEC §11): it judges each answer of its
// step with the until rule and waits `every` (jittered) between polls,
// until the claim holds or `within` runs out. A claim still false then is
// claim_mismatch, showing what was observed; an endpoint that fails is the
// step's failure as for any call (unavailable with its transport code), so
// "could not check" is never reported as "the claim was false".
type poller struct {
	op       *operation
	step     *checks.Step
	deadline time.Time // within after the first poll, or the run's budget if sooner
	polls    int
	last     consumers.Input // the last answer the claim was false on
	lastErr  *results.Error  // the rule's error on the last answer, if it could not be evaluated
	// canned is the step's exchange when the run replays a fixture: its
	// last answer stands for the deadline, and nothing waits.
	canned *cannedExchange
}

func newPoller(op *operation, s *checks.Step) *poller {
	deadline := op.e.now().Add(s.Within)
	if op.deadline.Before(deadline) {
		deadline = op.deadline
	}
	return &poller{op: op, step: s, deadline: deadline}
}

// check judges one answer: held when the claim is true. A rule that
// raises its own fail() code has decided: that is the step's failure. A
// rule that cannot be evaluated on this answer (a field not there yet) is
// polled again, and reported as what it is if it still cannot be at the
// deadline.
func (p *poller) check(in consumers.Input) (held bool, failure *results.Error) {
	p.polls++
	v, f := p.step.Until.Eval(in)
	if f != nil {
		if f.Code != results.CodeRuleError {
			return false, f
		}
		p.last, p.lastErr = in, f
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, results.NewError(results.CodeRuleError, "until returned %s, want a bool", typeOf(v))
	}
	p.last, p.lastErr = in, nil
	return b, nil
}

// wait sleeps until the next poll; it returns the step's failure when no
// poll fits before the deadline (another attempt included), or when the
// run is canceled meanwhile.
func (p *poller) wait() *results.Error {
	op := p.op
	if p.canned != nil {
		if p.canned.exhausted() {
			return p.mismatch()
		}
		return nil
	}
	every := p.step.Every
	if every > 0 {
		// ±20 %, so that probes started together do not poll in step.
		every = time.Duration(float64(every) * (0.8 + 0.4*op.e.rand()))
	}
	now := op.e.now()
	if now.Add(every).After(p.deadline) || now.Add(every+p.step.Timeout).After(op.deadline) {
		return p.mismatch()
	}
	timer := time.NewTimer(every)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-op.budget.Done():
	}
	if op.parent.Err() != nil {
		return results.NewError(results.CodeCanceled, "run canceled while verifying, after %d poll(s)", p.polls)
	}
	return p.mismatch()
}

// mismatch is the verdict at the deadline: the claim was false, or the
// rule could not be evaluated on the last answer.
func (p *poller) mismatch() *results.Error {
	if p.lastErr != nil {
		return results.NewError(results.CodeRuleError, "until could not be evaluated within %s (%d polls): %s",
			p.step.Within, p.polls, p.lastErr.Message)
	}
	observed := p.step.Until.Observed(p.last)
	if observed == "" {
		observed = "`" + truncate(p.step.Until.Text) + "` was false"
	}
	return results.NewError(results.CodeClaimMismatch, "claim not confirmed within %s (%d polls): %s",
		p.step.Within, p.polls, observed)
}

// typeOf names a rule value's type for a message.
func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case int, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "a value that is not a bool"
}
