package prober

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

// operation is the state of one run: its steps (a single probe's one
// call, or each step of a multi-step probe, SPEC §11), the budget they share, the
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
	// trace is the run's trace; the zero Trace when the probe has trace
	// off (runner/prober/trace.go).
	trace results.Trace

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

// addSecret scrubs v, a secret the run came to hold (an OAuth token),
// from everything the run reports.
func (op *operation) addSecret(v string) {
	if !slices.Contains(op.secrets, v) {
		op.secrets = append(op.secrets, v)
	}
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

	failed := false
	for i := range op.p.Steps {
		s := &op.p.Steps[i]
		if s.Always {
			continue
		}
		if !op.call(res, s, st.front, true) {
			failed = true
			break
		}
	}
	if !failed {
		res.Step = ""
	}
	for i := range op.p.Steps {
		if s := &op.p.Steps[i]; s.Always {
			op.always(res, s, st.front)
		}
	}
}

// always runs an always step: after everything else, whatever happened.
// Its failure is logged and its attempts recorded, but it never changes
// the run's outcome. A step that names a capture an earlier step never
// made (it failed first) is skipped: a clean-up of a refund that was
// never made has nothing to clean.
func (op *operation) always(res *results.Result, s *checks.Step, t http.RoundTripper) {
	if op.canned != nil && len(op.canned[s.Name]) == 0 {
		return // a fixture need not give a clean-up's answer
	}
	for _, name := range s.Needs {
		if _, ok := op.vars.captured[name]; !ok {
			op.e.logger.Info("always step skipped: a capture it needs was not made", "probe", op.p.Name,
				"operation_id", res.OperationID, "step", s.Name, "capture", name)
			op.steps = append(op.steps, results.StepResult{Name: s.Name, Outcome: results.Pass,
				StartedAt: op.e.now(), Always: true, Skipped: true})
			return
		}
	}
	scratch := results.Result{OperationID: res.OperationID, StartedAt: res.StartedAt}
	if !op.call(&scratch, s, t, false) {
		op.e.logger.Warn("always step failed; the run's outcome stands", "probe", op.p.Name,
			"operation_id", res.OperationID, "step", s.Name, "code", scratch.Code(),
			"message", op.redactor().Redact(scratch.Error.Message))
	}
}

// call makes step s's call and judges its answer into res; it reports
// whether the step passed. A verification (until) repeats the call every `every`
// until its claim holds or `within` runs out. Captures are taken once the
// call passed. decides says whether the call's answer is the run's (its
// shape, counts and samples), as it is for every call but an always
// step's.
func (op *operation) call(res *results.Result, s *checks.Step, t http.RoundTripper, decides bool) (passed bool) {
	fail := func(f *results.Error) bool {
		res.Step = s.Name
		res.Fail(stepError(s, f))
		return false
	}
	if op.p.MultiStep() {
		start := op.e.now()
		op.stepShape, op.poll = nil, nil
		defer func() { op.recordStep(res, s, start, passed) }()
	}
	q, err := expandStep(s, op.vars)
	if err != nil {
		return fail(results.NewError(results.CodeCaptureFailed, "%s", err.Error()))
	}
	ex, failure := op.exchange(q, t)
	if failure != nil {
		return fail(failure)
	}
	var poll *poller
	if s.Until != nil {
		poll = newPoller(op, s)
		poll.canned, _ = ex.(*cannedExchange)
		op.poll = poll
	}
	for {
		op.loop = newAttemptLoop(op, q)
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
			if q.MCP != nil && !op.p.MultiStep() {
				// Whatever the outcome after the listing: definition drift
				// is judged on every run that got that far.
				res.Tool = definitionOf(meta.session, q.MCP.Watch)
			}
		}
		if failure != nil {
			return fail(failure)
		}
		in, failure := op.judge(res, q, payload, meta, decides)
		if failure != nil {
			return fail(failure)
		}
		held := true
		if poll != nil {
			if held, failure = poll.check(in); failure != nil {
				return fail(failure)
			}
		}
		if held {
			if failure := op.capture(s, in); failure != nil {
				return fail(failure)
			}
			res.Outcome, res.Error = results.Pass, nil
			return true
		}
		if failure := poll.wait(); failure != nil {
			return fail(failure)
		}
	}
}

// recordStep appends how step s went, started at start, to the run's
// steps: res holds its verdict (the run's own, or an always step's).
func (op *operation) recordStep(res *results.Result, s *checks.Step, start time.Time, passed bool) {
	sr := results.StepResult{Name: s.Name, Outcome: results.Pass, StartedAt: start,
		Duration: op.e.now().Sub(start), Always: s.Always, Shape: op.stepShape}
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

// exchange builds the exchange of step s, its templates expanded: a
// canned one when the run replays a fixture.
func (op *operation) exchange(s *checks.Step, t http.RoundTripper) (exchange, *results.Error) {
	if op.canned != nil {
		answers := op.canned[s.Name]
		if len(answers) == 0 {
			return nil, results.NewError(results.CodeInternalError, "the fixture gives no answer for this step")
		}
		return &cannedExchange{s: s, answers: answers}, nil
	}
	if s.MCP != nil {
		mx := newMCPExchange(op.e, s, op.p.MaxBodyBytes, t, newBearer(op, s, s.MCP.OAuth, s.MCP.URL, t))
		mx.trace = op.trace
		return mx, nil
	}
	hx, err := newHTTPExchange(op.e, s, op.p.MaxBodyBytes, t, newBearer(op, s, s.Request.OAuth, s.Request.URL, t))
	if err != nil {
		return nil, results.NewError(results.CodeInternalError, "building the request: %v", err)
	}
	if op.trace.On() {
		// Outside the redirect policy, so that every hop is a span.
		hx.client.Transport = &traceTransport{next: hx.client.Transport, trace: op.trace}
	}
	return hx, nil
}

// judge runs step q's consumer on the payload of a usable answer and
// returns what the rules saw, for until and the captures. A step without
// a consumer (one that only needs an accepted status) passes; its answer
// is decoded only when a rule of the step reads it. With decides, the
// answer's counts are the run's, and a single probe's shape too.
func (op *operation) judge(res *results.Result, q *checks.Step, payload []byte, meta answerMeta, decides bool) (consumers.Input, *results.Error) {
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
		if readsInput(q, "result") {
			in.Result = ruleObject(meta.result)
		}
		if readsInput(q, "tool") {
			in.Tool = ruleObject(meta.tool)
		}
	}
	readsAnswer := q.Consumer != nil || q.Until != nil || len(q.Capture) > 0
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
	case op.p.MultiStep():
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

// capture takes the values step s names for later steps from in, the
// answer its rules saw. A rule that fails, or gives null, fails the run at
// this step: a later step would otherwise send an empty token or refund
// id. A secret capture is scrubbed from everything the run reports.
func (op *operation) capture(s *checks.Step, in consumers.Input) *results.Error {
	for _, cp := range s.Capture {
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

// readsInput reports whether a rule of step s may read input name
// (result, tool): its consumer's, by what the rules name, or its until's
// and captures', which may read anything.
func readsInput(s *checks.Step, name string) bool {
	return s.Until != nil || len(s.Capture) > 0 || s.Consumer.ReadsInput(name)
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
