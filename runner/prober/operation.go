package prober

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

// operation is the state of one run: its calls (a single probe's one, or
// each step of a multi-step probe, SPEC §11), the budget they share, the
// attempts they made and what the deciding call received. Each run has
// its own, on the goroutine that called Executor.Run, so it needs no
// locking.
type operation struct {
	e      *Executor
	p      *checks.Probe
	parent context.Context // the caller's: its end means canceled

	// canned, when set, answers every call from a probe fixture's canned
	// answers by step name, without the network or waiting (toolpulse test).
	canned map[string][]consumers.Fixture

	budget   context.Context // parent, bounded by the run's budget
	deadline time.Time       // the budget's end, by e.now
	vars     *vars

	loop     *attemptLoop      // the loop in flight, for a panic's record; nil before one
	attempts []results.Attempt // every finished loop's attempts, in order
	steps    []results.StepResult
	// stepShape and poll are the step in flight's last answer's shape and
	// its verification, for its StepResult.
	stepShape *results.Shape
	poll      *poller

	// secrets are the values the run's steps captured as secret: scrubbed
	// from everything the run reports, as the config's are.
	secrets []string

	payload []byte // the deciding call's answer, for the failure sample
	// lastStatus is the HTTP status of the deciding call's last try.
	lastStatus int
	// replay is the whole answer the rules saw, for the shape sample that
	// `toolpulse test --from-db` replays: the payload of an HTTP probe, the
	// whole CallToolResult of an MCP probe (its response derives from it,
	// and a rule may read result).
	replay []byte
}

// redactor scrubs the config's secrets and the run's own.
func (op *operation) redactor() *results.Redactor {
	return op.e.redactor.Load().With(op.secrets...)
}

// maxMessage bounds a message built from an error's text.
const maxMessage = 300

// run makes the probe's calls in order, each under its retry policy and
// all within the run's budget, judging each answer as it comes; the first
// call that fails decides the outcome, and always steps run last,
// whatever happened. It fills res's outcome and the fields only it knows.
func (op *operation) run(res *results.Result) {
	st := op.e.transports.acquire(op.p.TLS)
	defer op.e.transports.release(st)
	budget, cancel := context.WithTimeout(op.parent, op.p.RunBudget())
	defer cancel()
	op.budget, op.deadline = budget, res.StartedAt.Add(op.p.RunBudget())
	op.vars = newVars(res.OperationID)

	calls := plan(op.p)
	failed := false
	for _, c := range calls {
		if c.step != nil && c.step.Always {
			continue
		}
		if !op.call(res, c, st.front, true) {
			failed = true
			break
		}
	}
	if !failed {
		res.Step = ""
	}
	for _, c := range calls {
		if c.step != nil && c.step.Always {
			op.always(res, c, st.front)
		}
	}
}

// always runs an always step: after everything else, whatever happened.
// Its failure is logged and its attempts recorded, but it never changes
// the run's outcome. A step that names a capture an earlier step never
// made (it failed first) is skipped: a clean-up of a refund that was
// never made has nothing to clean.
func (op *operation) always(res *results.Result, c call, t http.RoundTripper) {
	if op.canned != nil && len(op.canned[c.step.Name]) == 0 {
		return // a fixture need not give a clean-up's answer
	}
	for _, name := range c.step.Needs {
		if _, ok := op.vars.captured[name]; !ok {
			op.e.logger.Info("always step skipped: a capture it needs was not made", "probe", op.p.Name,
				"operation_id", res.OperationID, "step", c.step.Name, "capture", name)
			op.steps = append(op.steps, results.StepResult{Name: c.step.Name, Outcome: results.Pass,
				StartedAt: op.e.now(), Always: true, Skipped: true})
			return
		}
	}
	scratch := results.Result{OperationID: res.OperationID, StartedAt: res.StartedAt}
	if !op.call(&scratch, c, t, false) {
		op.e.logger.Warn("always step failed; the run's outcome stands", "probe", op.p.Name,
			"operation_id", res.OperationID, "step", c.step.Name, "code", scratch.Code(),
			"message", op.redactor().Redact(scratch.Error.Message))
	}
}

// call makes call c and judges its answer into res; it reports whether
// the call passed. A verification (until) repeats the call every `every`
// until its claim holds or `within` runs out. Captures are taken once the
// call passed. decides says whether the call's answer is the run's (its
// shape, counts and samples), as it is for every call but an always
// step's.
func (op *operation) call(res *results.Result, c call, t http.RoundTripper, decides bool) (passed bool) {
	if c.step != nil {
		start := op.e.now()
		op.stepShape, op.poll = nil, nil
		defer func() { op.recordStep(res, c, start, passed) }()
	}
	q, err := expandCall(op.p, c, op.vars)
	if err != nil {
		res.Step = c.name()
		res.Fail(stepError(c, results.NewError(results.CodeCaptureFailed, "%s", err.Error())))
		return false
	}
	ex, failure := op.exchange(q, c, t)
	if failure != nil {
		res.Step = c.name()
		res.Fail(stepError(c, failure))
		return false
	}
	var poll *poller
	if c.step != nil && c.step.Until != nil {
		poll = newPoller(op, c.step)
		poll.canned, _ = ex.(*cannedExchange)
		op.poll = poll
	}
	for {
		op.loop = newAttemptLoop(op, q, c.name())
		if poll != nil {
			op.loop.poll = poll.polls + 1
		}
		failure := op.loop.run(ex)
		op.attempts = append(op.attempts, op.loop.attempts...)
		last := op.loop.last
		op.loop = nil
		payload, meta := ex.answer()
		if decides {
			op.payload, op.replay, op.lastStatus = payload, payload, last.httpStatus
			if q.MCP != nil {
				op.replay = meta.result
			}
			if q.MCP != nil && c.step == nil {
				// Whatever the outcome after the listing: definition drift
				// is judged on every run that got that far.
				res.Tool = toolDefinitionOf(meta.tool)
			}
		}
		if failure != nil {
			res.Step = c.name()
			res.Fail(stepError(c, failure))
			return false
		}
		in, failure := op.judge(res, q, c, payload, meta, decides)
		if failure != nil {
			res.Step = c.name()
			res.Fail(stepError(c, failure))
			return false
		}
		if poll == nil {
			if failure := op.capture(c, in); failure != nil {
				res.Step = c.name()
				res.Fail(stepError(c, failure))
				return false
			}
			res.Outcome, res.Error = results.Pass, nil
			return true
		}
		switch held, failure := poll.check(in); {
		case failure != nil:
			res.Step = c.name()
			res.Fail(stepError(c, failure))
			return false
		case held:
			if failure := op.capture(c, in); failure != nil {
				res.Step = c.name()
				res.Fail(stepError(c, failure))
				return false
			}
			res.Outcome, res.Error = results.Pass, nil
			return true
		}
		if failure := poll.wait(); failure != nil {
			res.Step = c.name()
			res.Fail(stepError(c, failure))
			return false
		}
	}
}

// recordStep appends how step c went, started at start, to the run's
// steps: res holds its verdict (the run's own, or an always step's).
func (op *operation) recordStep(res *results.Result, c call, start time.Time, passed bool) {
	sr := results.StepResult{Name: c.step.Name, Outcome: results.Pass, StartedAt: start,
		Duration: op.e.now().Sub(start), Always: c.step.Always, Shape: op.stepShape}
	if !passed {
		sr.Outcome = res.Outcome
		if res.Error != nil {
			e := *res.Error
			sr.Error = &e
		}
	}
	if op.poll != nil {
		sr.Polls = op.poll.polls
	}
	op.steps = append(op.steps, sr)
}

// exchange builds the exchange of call c, whose probe is q: a canned one
// when the run replays a fixture.
func (op *operation) exchange(q *checks.Probe, c call, t http.RoundTripper) (exchange, *results.Error) {
	if op.canned != nil {
		answers := op.canned[c.name()]
		if len(answers) == 0 {
			return nil, results.NewError(results.CodeInternalError, "the fixture gives no answer for this step")
		}
		return &cannedExchange{q: q, answers: answers}, nil
	}
	if q.MCP != nil {
		return newMCPExchange(op.e, q, t), nil
	}
	hx, err := newHTTPExchange(op.e, q, t)
	if err != nil {
		return nil, results.NewError(results.CodeInternalError, "building the request: %v", err)
	}
	return hx, nil
}

// judge runs call q's consumer on the payload of a usable answer and
// returns what the rules saw, for until and the captures. A call without
// a consumer (a step that only needs an accepted status) passes; its
// answer is decoded only when a rule of the step reads it. With decides,
// the answer's shape and counts are the run's.
func (op *operation) judge(res *results.Result, q *checks.Probe, c call, payload []byte, meta answerMeta, decides bool) (consumers.Input, *results.Error) {
	in := consumers.Input{
		Status:  meta.status,
		Headers: meta.headers,
		Request: consumers.Request{JSON: q.Request.JSON, Query: q.Request.Query},
		Probe:   op.p.Name,
		Vars:    op.vars.rule(),
	}
	if q.MCP != nil {
		in.Request = consumers.Request{JSON: q.MCP.Arguments}
		// Decoding result costs about what decoding the response did:
		// rules that cannot see it do not pay for it. A step's until and
		// captures may read them too.
		if c.step != nil || q.Consumer.ReadsInput("result") {
			in.Result = ruleObject(meta.result)
		}
		if c.step != nil || q.Consumer.ReadsInput("tool") {
			in.Tool = ruleObject(meta.tool)
		}
	}
	readsAnswer := q.Consumer != nil || (c.step != nil && (c.step.Until != nil || len(c.step.Capture) > 0))
	if !readsAnswer {
		return in, nil
	}
	v, err := consumers.DecodeJSON(payload)
	if err != nil {
		jerr := &jsonError{err: err, contentType: meta.headers["content-type"]}
		return in, results.NewError(codeOf(jerr, 0, nil), "%s", truncate(jerr.Error()))
	}
	in.Response = v
	switch {
	case c.step != nil:
		// A step's answer has a baseline of its own (probe and step), which
		// the run's one shape cannot hold.
		op.stepShape = shapeOf(v)
	case decides:
		res.Shape = shapeOf(v)
	}
	if q.Consumer == nil {
		return in, nil
	}
	verdict := q.Consumer.Apply(in, q.Expect.MinResults)
	if decides {
		res.SelectedCount, res.ValidatedCount = verdict.Selected, verdict.Validated
		res.Consumer = q.Consumer.Ref()
	}
	if verdict.Err != nil {
		failure := *verdict.Err
		failure.Retryable = failure.Code.Retryable()
		return in, &failure
	}
	return in, nil
}

// capture takes the values call c names for later steps from in, the
// answer its rules saw. A rule that fails, or gives null, fails the run at
// this step: a later step would otherwise send an empty token or refund
// id. A secret capture is scrubbed from everything the run reports.
func (op *operation) capture(c call, in consumers.Input) *results.Error {
	if c.step == nil {
		return nil
	}
	for _, cp := range c.step.Capture {
		v, failure := cp.Rule.Eval(in)
		if failure != nil {
			return results.NewError(results.CodeCaptureFailed, "capture %s: %s: %s", cp.Name, failure.Code, failure.Message)
		}
		if v == nil {
			return results.NewError(results.CodeCaptureFailed, "capture %s: %s gave null", cp.Name, cp.Rule.Text)
		}
		op.vars.captured[cp.Name] = v
		if cp.Secret {
			op.secrets = append(op.secrets, op.vars.text(cp.Name))
		}
	}
	return nil
}

// ruleObject decodes raw JSON that mcpsdk checked is an object into a
// rule value; nil when there is none.
func ruleObject(raw []byte) map[string]any {
	if len(raw) == 0 {
		return nil
	}
	v, err := consumers.DecodeJSON(raw)
	if err != nil {
		return nil
	}
	m, _ := v.(map[string]any)
	return m
}

// allAttempts is what the run's attempts were, those of a loop a panic
// interrupted included.
func (op *operation) allAttempts() []results.Attempt {
	if op.loop == nil {
		return op.attempts
	}
	return append(op.attempts, op.loop.attempts...)
}

// errorText is the useful part of a transport error: without the url.Error
// wrapper, which only repeats the method and URL the probe already names.
func errorText(err error) string {
	if err == nil {
		return "no error"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "connection closed before the response was complete: " + msg
	}
	return truncate(msg)
}

// truncate bounds a message built from an error's or a rule's text as
// every shortened message is (results.Shorten): the start says where, the
// end what was seen, so the middle goes.
func truncate(s string) string { return results.Shorten(s, maxMessage) }
