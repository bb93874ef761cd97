package prober

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// An exchange is one kind of conversation with a provider: an HTTP request
// and its response (httpExchange), an MCP session's tool call
// (mcpExchange, SPEC §10), or a fixture's canned answers (cannedExchange);
// a step of a multi-step probe (SPEC §11) is the kind its call is. The
// attempt loop repeats it until it gets a usable answer or gives up: the
// exchange knows its protocol, the loop knows the probe's retry policy and
// gives every kind bounded attempts, the budget, back-off, Retry-After and
// an attempt row for every try (one per exchange when a try reports
// several: attemptResult.exchanges).
type exchange interface {
	// attempt makes one attempt, bounded by a.ctx, and says how it went.
	// It classifies its own failures (a.failure does so for errors every
	// kind shares: timeouts, cancellation, the network) and leaves what it
	// received for answer. It must not retry on its own.
	attempt(a *attempt) attemptResult
	// answer is what the last attempt received, once the loop is done,
	// whatever it ended with: the raw payload (nil when nothing came), for
	// decoding and the result's samples, and what the consumer's rules see
	// beside the decoded payload.
	answer() (payload []byte, meta answerMeta)
}

// answerMeta is what an exchange tells the consumer's rules about its
// answer beside the payload (consumers.Input).
type answerMeta struct {
	status  int               // the HTTP status
	headers map[string]string // lower-case names, first value
	// result and tool are an MCP probe's raw CallToolResult and tools/list
	// entry (SPEC §10); nil for HTTP.
	result, tool []byte
	// session is an MCP probe's whole answer, what its definition is made
	// of (tooldef.go); nil for HTTP.
	session *mcpsdk.Answer
}

// attemptResult is how one attempt went.
type attemptResult struct {
	code    results.Code // "" when the answer is usable
	message string       // why it failed; "" when it did not
	// httpStatus is the HTTP status the attempt got, 0 for none.
	httpStatus int
	// retryAfter, when retryAfterSet, is how long the provider asked to
	// be left alone (a Retry-After header): it replaces the back-off.
	retryAfter    time.Duration
	retryAfterSet bool
	// exchanges are the attempt's exchanges, when it made several (an MCP
	// session): one attempt row each, in order, with StartedAt, Duration,
	// HTTPStatus and Method set; the loop numbers them and puts the
	// attempt's verdict on exchanges[blamed], or on the last one when
	// blamed is out of range. nil: the attempt is one row.
	exchanges []results.Attempt
	blamed    int
}

// attempt is one try of an exchange, as the loop hands it over.
type attempt struct {
	// ctx ends at the probe's per-attempt timeout, at the run's budget, or
	// when the caller gives up (shutdown), whichever comes first.
	ctx    context.Context
	number int // from 1
	loop   *attemptLoop
}

// Phases of an attempt, for messages.
const (
	phaseHeaders = "waiting for the response"
	phaseBody    = "reading the response body"
)

// failure classifies err, what ended the attempt during phase, and
// describes it. Once the caller's context has ended, whatever the
// transport says, toolpulse stopped the attempt: that is canceled, never a
// timeout the provider caused.
func (a *attempt) failure(err error, phase string) (results.Code, string) {
	l := a.loop
	if l.parent.Err() != nil {
		err = fmt.Errorf("%w: %w", errCanceled, l.parent.Err())
	}
	code := codeOf(err, 0, nil)
	switch code {
	case results.CodeCanceled:
		return code, "run canceled before the attempt finished"
	case results.CodeTimeout:
		if l.parent.Err() == nil && errors.Is(l.budget.Err(), context.DeadlineExceeded) {
			return code, fmt.Sprintf("retry budget of %s exhausted %s", l.policy.Budget, phase)
		}
		return code, fmt.Sprintf("timed out after %s %s", l.timeout, phase)
	}
	return code, errorText(err)
}

// attemptLoop runs an exchange under a probe's retry policy: at most
// max_attempts attempts, each bounded by the probe's timeout, all of them
// and the waits between them by the run's budget. Only unavailable causes
// (results.Code.Retryable) are retried, after a full-jitter back-off or
// the provider's Retry-After, and only while the wait and another whole
// attempt fit in what is left of the budget: an attempt cut short by the
// budget would report a timeout the provider did not cause. Every attempt
// is recorded. A loop serves one call of a run (a single probe's, a step's
// or one poll of a verification), on the run's goroutine; the calls of a
// run share its budget.
type attemptLoop struct {
	e       *Executor
	op      *operation // the run, for its redactor
	probe   string
	step    string // the step the attempts belong to; "" for a single probe's call
	policy  checks.Retries
	timeout time.Duration
	parent  context.Context // the caller's: its end means canceled
	budget  context.Context // parent, bounded by the run's budget

	deadline time.Time // the budget's end, by e.now
	first    int       // the number of the run's attempts before this loop's
	poll     int       // the poll of a verification the loop asks for, from 1; 0 for a call that does not poll
	attempts []results.Attempt
	// last is how the last finished try ended, which its rows need not
	// show alone: an MCP try's verdict sits on one of its exchanges.
	last attemptResult

	// The attempt in flight, for a panic's record.
	inAttempt bool
	number    int
	started   time.Time
	status    int
}

// newAttemptLoop returns the loop of step s within op's run: s's retry
// policy and timeout, op's budget.
func newAttemptLoop(op *operation, s *checks.Step) *attemptLoop {
	policy := s.Retries
	policy.Budget = op.p.RunBudget() // what the messages name
	return &attemptLoop{
		e:        op.e,
		op:       op,
		probe:    op.p.Name,
		step:     s.Name,
		policy:   policy,
		timeout:  s.Timeout,
		parent:   op.parent,
		budget:   op.budget,
		deadline: op.deadline,
		first:    len(op.attempts),
	}
}

// run makes the exchange's attempts and returns why the run has no usable
// answer, or nil when the last attempt got one.
func (l *attemptLoop) run(ex exchange) *results.Error {
	for {
		l.number++
		res := l.try(ex)
		if res.code == "" {
			l.record(res, 0)
			return nil
		}
		wait, again, note := l.next(res)
		l.record(res, wait)
		if !again {
			return results.NewError(res.code, "%s%s", res.message, note)
		}
		if err := l.sleep(wait); err != nil {
			return err
		}
	}
}

// try makes one attempt, under its own timeout; a probe without one
// (timeout 0, only code sets it) gives it what is left of the budget.
func (l *attemptLoop) try(ex exchange) attemptResult {
	ctx, cancel := l.budget, context.CancelFunc(func() {})
	if l.timeout > 0 {
		ctx, cancel = context.WithTimeout(l.budget, l.timeout)
	}
	defer cancel()
	l.inAttempt, l.started, l.status = true, l.e.now(), 0
	res := ex.attempt(&attempt{ctx: ctx, number: l.number, loop: l})
	l.status = res.httpStatus
	return res
}

// next decides whether another attempt follows a failed one and how long
// to wait before it. It stops at max_attempts, once the budget is spent
// (the attempt's message says so), and when the wait plus a whole attempt
// would overrun the budget; only then does note say why.
func (l *attemptLoop) next(res attemptResult) (wait time.Duration, again bool, note string) {
	if !res.code.Retryable() || l.number >= l.policy.MaxAttempts || l.budget.Err() != nil {
		return 0, false, ""
	}
	now := l.e.now()
	remaining := l.deadline.Sub(now)
	wait = backoff(l.policy, l.number-1, res.retryAfter, res.retryAfterSet, remaining, l.e.rand)
	if wait+l.timeout <= remaining {
		return wait, true, ""
	}
	if res.retryAfterSet && res.retryAfter > remaining-l.timeout {
		return 0, false, fmt.Sprintf("; not retried: Retry-After %s leaves no room for another attempt in the %s budget",
			res.retryAfter, l.policy.Budget)
	}
	return 0, false, fmt.Sprintf("; not retried: another attempt would not fit in the %s budget", l.policy.Budget)
}

// sleep waits before the next attempt. The budget's end cannot cut it
// short (plan leaves room for a whole attempt after it), but the caller's
// can: then no attempt follows and the run is canceled.
func (l *attemptLoop) sleep(wait time.Duration) *results.Error {
	if l.op.canned != nil {
		return nil // a fixture's answers come at once
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-l.budget.Done():
	}
	// The wait was abandoned, so no attempt follows the last one.
	l.attempts[len(l.attempts)-1].Wait = 0
	last := l.last
	if l.parent.Err() != nil {
		return results.NewError(results.CodeCanceled, "run canceled during back-off after %d attempt(s)", l.number)
	}
	// Only a clock that disagrees with the context's gets here.
	return results.NewError(last.code, "%s; the retry budget ran out during back-off", last.message)
}

// record appends the rows of the attempt in flight, ended with res,
// followed by wait: one row, or one per exchange the attempt reported.
// Every row carries the try's number; the try's verdict goes on the
// exchange it blames and the wait on its last row, so that a try is never
// lost and never counted twice.
func (l *attemptLoop) record(res attemptResult, wait time.Duration) {
	rows := res.exchanges
	blamed := res.blamed
	if len(rows) == 0 {
		rows = []results.Attempt{{StartedAt: l.started, Duration: l.e.now().Sub(l.started), HTTPStatus: res.httpStatus}}
		blamed = 0
	}
	if blamed < 0 || blamed >= len(rows) {
		blamed = len(rows) - 1
	}
	for i, row := range rows {
		row.Number, row.Try, row.Poll, row.Step = l.first+len(l.attempts)+1, l.number, l.poll, l.step
		row.Wait = 0
		if len(res.exchanges) == 0 {
			row.Code, row.Message = "", ""
		}
		if i == blamed {
			row.Code, row.Message = res.code, res.message
		}
		if i == len(rows)-1 {
			row.Wait = wait
		}
		l.attempts = append(l.attempts, row)
	}
	l.last = res
	l.inAttempt = false
	if res.code != "" {
		l.e.logger.Debug("attempt failed", "probe", l.probe, "step", l.step, "attempt", l.number, "code", res.code,
			"message", l.op.redactor().Redact(res.message), "wait", wait)
	}
}

// recordPanic records the attempt in flight, if any, as ended by a panic.
func (l *attemptLoop) recordPanic(code results.Code, msg string) {
	if l.inAttempt {
		l.record(attemptResult{code: code, message: msg, httpStatus: l.status}, 0)
	}
}
