package prober

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// scriptedExchange is an exchange of no protocol at all: each attempt
// returns the next scripted result. It stands for the kinds to come (an MCP
// call, a verification step): the loop must serve it as it serves HTTP.
type scriptedExchange struct {
	script   []attemptResult
	deadline []time.Duration // each attempt's time left on its context
}

func (s *scriptedExchange) attempt(a *attempt) attemptResult {
	if d, ok := a.ctx.Deadline(); ok {
		s.deadline = append(s.deadline, time.Until(d))
	}
	res := s.script[0]
	if len(s.script) > 1 {
		s.script = s.script[1:]
	}
	return res
}

func (s *scriptedExchange) answer() ([]byte, answerMeta) { return []byte(`{}`), answerMeta{} }

// TestAttemptLoop drives the loop with a scripted exchange: the policy
// (max_attempts, the budget, which codes are retried, Retry-After, the
// attempt rows) is the loop's, whatever the exchange speaks.
func TestAttemptLoop(t *testing.T) {
	unavailable := attemptResult{code: results.CodeServerError, message: "the tool failed", httpStatus: 500}
	contract := attemptResult{code: results.CodeUnexpectedStatus, message: "HTTP 404 Not Found", httpStatus: 404}
	ok := attemptResult{httpStatus: 200}
	policy := checks.Retries{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Budget: 10 * time.Second}

	tests := []struct {
		name     string
		policy   checks.Retries
		timeout  time.Duration
		script   []attemptResult
		wantErr  string // the failure's code and message; "" for a usable answer
		wantRows []results.Code
	}{
		{name: "first attempt usable", policy: policy, script: []attemptResult{ok},
			wantRows: []results.Code{""}},
		{name: "unavailable retried until usable", policy: policy, script: []attemptResult{unavailable, unavailable, ok},
			wantRows: []results.Code{"server_error", "server_error", ""}},
		{name: "max_attempts ends it", policy: policy, script: []attemptResult{unavailable},
			wantErr:  "server_error: the tool failed",
			wantRows: []results.Code{"server_error", "server_error", "server_error"}},
		{name: "a contract error is never retried", policy: policy, script: []attemptResult{contract, ok},
			wantErr:  "unexpected_status: HTTP 404 Not Found",
			wantRows: []results.Code{"unexpected_status"}},
		{name: "Retry-After beyond the budget stops it", policy: policy, timeout: time.Second,
			script:   []attemptResult{{code: results.CodeRateLimited, message: "slow down", retryAfter: time.Hour, retryAfterSet: true}},
			wantErr:  "rate_limited: slow down; not retried: Retry-After 1h0m0s leaves no room for another attempt in the 10s budget",
			wantRows: []results.Code{"rate_limited"}},
		{name: "no room for another whole attempt", timeout: 10 * time.Second,
			policy:   checks.Retries{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Budget: 10 * time.Second},
			script:   []attemptResult{unavailable},
			wantErr:  "server_error: the tool failed; not retried: another attempt would not fit in the 10s budget",
			wantRows: []results.Code{"server_error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewExecutor(Options{Rand: func() float64 { return 0.5 }})
			p := &checks.Probe{Name: "tool", Steps: []checks.Step{{Retries: tt.policy, Timeout: tt.timeout}}}
			loop, cancel := testLoop(e, p, t.Context())
			defer cancel()
			ex := &scriptedExchange{script: tt.script}
			failure := loop.run(ex)

			got := ""
			if failure != nil {
				got = string(failure.Code) + ": " + failure.Message
			}
			if got != tt.wantErr {
				t.Errorf("failure = %q, want %q", got, tt.wantErr)
			}
			var rows []results.Code
			for i, a := range loop.attempts {
				rows = append(rows, a.Code)
				if a.Number != i+1 {
					t.Errorf("attempt %d numbered %d", i+1, a.Number)
				}
				last := i == len(loop.attempts)-1
				if last != (a.Wait == 0) {
					t.Errorf("attempt %d waits %v; only the last attempt waits for nothing", a.Number, a.Wait)
				}
			}
			if strings.Join(codes(rows), ",") != strings.Join(codes(tt.wantRows), ",") {
				t.Errorf("attempt rows %q, want %q", rows, tt.wantRows)
			}
			if tt.timeout > 0 {
				for i, left := range ex.deadline {
					if left > tt.timeout {
						t.Errorf("attempt %d had %v on its context, more than the %v timeout", i+1, left, tt.timeout)
					}
				}
			}
		})
	}
}

func codes(cs []results.Code) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// TestAttemptLoopCanceledDuringBackOff: the caller's end during a wait
// stops the loop as canceled, and the last attempt waits for nothing.
func TestAttemptLoopCanceledDuringBackOff(t *testing.T) {
	e := NewExecutor(Options{Rand: func() float64 { return 0.999 }})
	p := &checks.Probe{
		Name: "tool",
		Steps: []checks.Step{{
			Timeout: time.Second,
			Retries: checks.Retries{MaxAttempts: 3, BaseDelay: time.Minute, MaxDelay: time.Minute, Budget: time.Hour},
		}},
	}
	ctx, stop := context.WithCancel(t.Context())
	loop, cancel := testLoop(e, p, ctx)
	defer cancel()
	time.AfterFunc(50*time.Millisecond, stop)
	failure := loop.run(&scriptedExchange{script: []attemptResult{{code: results.CodeTimeout, message: "slow"}}})
	if failure == nil || failure.Code != results.CodeCanceled {
		t.Fatalf("failure = %+v, want canceled", failure)
	}
	if want := "run canceled during back-off after 1 attempt(s)"; failure.Message != want {
		t.Errorf("message = %q, want %q", failure.Message, want)
	}
	if len(loop.attempts) != 1 || loop.attempts[0].Wait != 0 {
		t.Errorf("attempts = %+v, want one that waits for nothing", loop.attempts)
	}
}

// testLoop is the attempt loop of a run of p on its own, as a single
// probe's run makes it; cancel releases its budget.
func testLoop(e *Executor, p *checks.Probe, parent context.Context) (*attemptLoop, context.CancelFunc) {
	op := &operation{e: e, p: p, parent: parent}
	budget, cancel := context.WithTimeout(parent, p.RunBudget())
	op.budget, op.deadline = budget, e.now().Add(p.RunBudget())
	return newAttemptLoop(op, &p.Steps[0]), cancel
}
