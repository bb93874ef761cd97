package prober

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/probetest"
	"github.com/toolpulse/toolpulse/results"
)

// want is what one run must produce.
type want struct {
	outcome   results.Outcome
	code      results.Code // "" on pass
	retryable bool
	attempts  int
	status    int // final HTTP status; 0 when no response arrived
	validated int // on pass: at least this many validated items
	// waits are the recorded back-offs of attempts 1..n-1; nil means the
	// probe's jitter with Rand 0.5: 0.5 * min(4ms, 1ms * 2^n).
	waits []time.Duration
	shape bool          // a JSON body was decoded, so a shape is set
	under time.Duration // the run must take less than this; 0: no bound
	// message, when set, must match the result's message.
	message *regexp.Regexp
}

// row is one misbehaving (or behaving) provider and what a run against it
// must produce.
type row struct {
	name     string
	provider func(testing.TB) string
	probe    func(*checks.Probe)
	opts     func(*Options)
	cancel   time.Duration // cancel the caller's context after this long; 0: never
	deadline time.Duration // give the caller's context this deadline; 0: none
	want     want
}

// Per-attempt timeouts of the rows that time out: short to keep the suite
// fast, long enough for a loopback exchange under -race.
const shortTimeout = 250 * time.Millisecond

func withTimeout(d time.Duration, attempts int) func(*checks.Probe) {
	return func(p *checks.Probe) { p.Steps[0].Timeout, p.Steps[0].Retries.MaxAttempts = d, attempts }
}

// rows has one row per SPEC §1 code, plus the passes that keep the table
// honest (a table that only expects failures would pass a runner that
// never passes anything).
func rows() []row {
	return []row{
		// unavailable: transport failures, each retried to max_attempts.
		{name: "closed port", provider: closedPort, want: want{
			outcome: results.Unavailable, code: results.CodeConnectionRefused, retryable: true, attempts: 3,
			message: regexp.MustCompile(`connection refused`)}},
		{name: "hang", provider: hang, probe: withTimeout(shortTimeout, 2), want: want{
			outcome: results.Unavailable, code: results.CodeTimeout, retryable: true, attempts: 2,
			message: regexp.MustCompile(`^timed out after 250ms waiting for the response$`)}},
		// The headers arrived, so the attempt keeps their status: the reset
		// came while reading the body.
		{name: "reset mid-response", provider: resetMidResponse, want: want{
			outcome: results.Unavailable, code: results.CodeConnectionReset, retryable: true, attempts: 3, status: 200,
			message: regexp.MustCompile(`connection reset by peer|connection closed before the response was complete`)}},
		{name: "dns failure", provider: func(testing.TB) string { return "http://toolpulse-no-such-host.invalid" }, want: want{
			outcome: results.Unavailable, code: results.CodeDNSError, retryable: true, attempts: 3,
			message: regexp.MustCompile(`no such host`)}},
		{name: "untrusted certificate", provider: untrustedTLS, want: want{
			outcome: results.Unavailable, code: results.CodeTLSError, retryable: true, attempts: 3,
			message: regexp.MustCompile(`certificate`)}},
		{name: "garbage instead of HTTP", provider: garbage, want: want{
			outcome: results.Unavailable, code: results.CodeNetworkError, retryable: true, attempts: 3,
			message: regexp.MustCompile(`malformed HTTP response`)}},

		// unavailable: transient statuses.
		{name: "500", provider: jsonBody(500, `{"error":"boom"}`), want: want{
			outcome: results.Unavailable, code: results.CodeServerError, retryable: true, attempts: 3, status: 500,
			message: regexp.MustCompile(`^HTTP 500 Internal Server Error$`)}},
		{name: "429 with Retry-After 1", provider: rateLimited("1"), probe: withTimeout(2*time.Second, 2), want: want{
			outcome: results.Unavailable, code: results.CodeRateLimited, retryable: true, attempts: 2, status: 429,
			waits: []time.Duration{time.Second}}},
		{name: "429 with Retry-After beyond the budget", provider: rateLimited("30"),
			probe: func(p *checks.Probe) { p.Steps[0].Timeout, p.Steps[0].Retries.Budget = time.Second, 3*time.Second },
			want: want{
				outcome: results.Unavailable, code: results.CodeRateLimited, retryable: true, attempts: 1, status: 429,
				under: time.Second, message: regexp.MustCompile(`Retry-After 30s leaves no room`)}},
		{name: "408", provider: jsonBody(408, `{}`), want: want{
			outcome: results.Unavailable, code: results.CodeTimeout, retryable: true, attempts: 3, status: 408}},

		// The budget bounds the whole run, attempts included.
		{name: "budget shorter than the timeout", provider: hang,
			probe: func(p *checks.Probe) { p.Steps[0].Retries.Budget = shortTimeout },
			want: want{
				outcome: results.Unavailable, code: results.CodeTimeout, retryable: true, attempts: 1, under: time.Second,
				message: regexp.MustCompile(`^retry budget of 250ms exhausted waiting for the response$`)}},
		// A clock that stands still makes plan() believe the budget is intact,
		// so the context ends the back-off: the cause stays the attempt's.
		// The provider answers after 100 ms of real time, so the budget's
		// deadline falls 100 ms into the back-off that the frozen clock
		// sizes at the whole budget: a margin no scheduler delay closes.
		{name: "budget runs out during back-off", provider: func(t testing.TB) string {
			return serve(t, func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(100 * time.Millisecond)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, `{}`)
			})
		},
			probe: func(p *checks.Probe) {
				p.Steps[0].Timeout, p.Steps[0].Retries.Budget, p.Steps[0].Retries.BaseDelay, p.Steps[0].Retries.MaxDelay = 0, shortTimeout, time.Second, time.Second
			},
			opts: func(o *Options) {
				o.Clock = clockwork.NewFakeClock() // its time never moves, so the budget never seems spent
			},
			want: want{
				outcome: results.Unavailable, code: results.CodeServerError, retryable: true, attempts: 1, status: 500,
				under: time.Second, message: regexp.MustCompile(`^HTTP 500 Internal Server Error; the retry budget ran out during back-off$`)}},

		// Run-level failures of toolpulse's own.
		{name: "shutdown during a hang", provider: hang, cancel: 100 * time.Millisecond, want: want{
			outcome: results.Unavailable, code: results.CodeCanceled, retryable: false, attempts: 1, under: time.Second}},
		// The caller's deadline is the caller stopping the run, not the
		// provider being slow: the probe's own timeout never fired.
		{name: "caller's deadline during a hang", provider: hang, deadline: 100 * time.Millisecond, want: want{
			outcome: results.Unavailable, code: results.CodeCanceled, retryable: false, attempts: 1, under: time.Second}},
		// The cancel leaves the first attempt room on a loaded machine (it
		// took 240 ms once under CI's parallel tests); the back-off is 5 s.
		{name: "shutdown during back-off", provider: jsonBody(500, `{}`), cancel: 600 * time.Millisecond,
			probe: func(p *checks.Probe) {
				p.Steps[0].Retries.BaseDelay, p.Steps[0].Retries.MaxDelay = 5*time.Second, 5*time.Second
			},
			want: want{
				outcome: results.Unavailable, code: results.CodeCanceled, retryable: false, attempts: 1, status: 500,
				under: 2 * time.Second, message: regexp.MustCompile(`^run canceled during back-off after 1 attempt\(s\)$`)}},
		{name: "panic inside the run", provider: jsonBody(500, `{}`),
			opts: func(o *Options) { o.Rand = func() float64 { panic("rand exploded") } },
			want: want{
				outcome: results.ContractError, code: results.CodeInternalError, attempts: 1, status: 500,
				message: regexp.MustCompile(`panic: rand exploded`)}},

		// contract_error before the rules: never retried.
		{name: "404", provider: jsonBody(404, `{"error":"not found"}`), want: want{
			outcome: results.ContractError, code: results.CodeUnexpectedStatus, attempts: 1, status: 404,
			message: regexp.MustCompile(`^HTTP 404 Not Found; expect.status is \[200\]$`)}},
		{name: "HTML with 200", provider: jsonBody(200, bodyHTML), want: want{
			outcome: results.ContractError, code: results.CodeInvalidJSON, attempts: 1, status: 200,
			message: regexp.MustCompile(`^response is not valid JSON \(Content-Type "application/json"\): invalid character '<'`)}},
		// The content type says at once whose page came back.
		{name: "HTML error page", provider: typedBody("text/html; charset=utf-8", bodyHTML), want: want{
			outcome: results.ContractError, code: results.CodeInvalidJSON, attempts: 1, status: 200,
			message: regexp.MustCompile(`^response is not valid JSON \(Content-Type "text/html; charset=utf-8"\): invalid character '<'`)}},
		{name: "no content type", provider: typedBody("", "ok"), want: want{
			outcome: results.ContractError, code: results.CodeInvalidJSON, attempts: 1, status: 200,
			message: regexp.MustCompile(`^response is not valid JSON \(no Content-Type\): `)}},
		{name: "3 MB body with Content-Length", provider: bigBody(3<<20, true), want: want{
			outcome: results.ContractError, code: results.CodeResponseTooLarge, attempts: 1, status: 200,
			message: regexp.MustCompile(`^Content-Length 3145728 exceeds max_body_bytes \(1048576\)$`)}},
		{name: "3 MB body streamed", provider: bigBody(3<<20, false), want: want{
			outcome: results.ContractError, code: results.CodeResponseTooLarge, attempts: 1, status: 200}},
		{name: "gzip bomb", provider: gzipBomb, want: want{
			outcome: results.ContractError, code: results.CodeResponseTooLarge, attempts: 1, status: 200,
			message: regexp.MustCompile(`after decoding`)}},
		{name: "slow body drip", provider: drip, probe: withTimeout(shortTimeout, 2), want: want{
			outcome: results.Unavailable, code: results.CodeTimeout, retryable: true, attempts: 2, status: 200,
			message: regexp.MustCompile(`^timed out after 250ms reading the response body$`)}},
		{name: "deep nesting", provider: jsonBody(200, strings.Repeat("[", 20000)+strings.Repeat("]", 20000)), want: want{
			outcome: results.ContractError, code: results.CodeInvalidJSON, attempts: 1, status: 200,
			message: regexp.MustCompile(`^response is not valid JSON \(Content-Type "application/json"\): nested deeper than`)}},

		// Seed 000: every fixture through the select_results consumer.
		{name: "seed 000 original list", provider: strictSearch, want: want{
			outcome: results.Pass, attempts: 1, status: 200, validated: 1, shape: true}},
		{name: "seed 000 items wrapper", provider: jsonBody(200, bodyItemsWrapper), want: want{
			outcome: results.Pass, attempts: 1, status: 200, validated: 1, shape: true}},
		{name: "seed 000 missing results", provider: jsonBody(200, bodyMissing), want: want{
			outcome: results.ContractError, code: "unsupported_results_container", attempts: 1, status: 200, shape: true,
			message: regexp.MustCompile(`^results is nil$`)}},
		{name: "seed 000 results null", provider: jsonBody(200, bodyNull), want: want{
			outcome: results.ContractError, code: "unsupported_results_container", attempts: 1, status: 200, shape: true}},
		{name: "seed 000 non-object items", provider: jsonBody(200, bodyNonObject), want: want{
			outcome: results.ContractError, code: results.CodeRuleError, attempts: 1, status: 200, shape: true}},
		{name: "seed 000 missing score", provider: jsonBody(200, bodyMissingScore), want: want{
			outcome: results.ContractError, code: results.CodeRuleError, attempts: 1, status: 200, shape: true}},
		{name: "seed 000 string score", provider: jsonBody(200, bodyStringScore), want: want{
			outcome: results.ContractError, code: results.CodeRuleError, attempts: 1, status: 200, shape: true}},
		{name: "seed 000 boolean score", provider: jsonBody(200, bodyBooleanScore), want: want{
			outcome: results.ContractError, code: results.CodeRuleError, attempts: 1, status: 200, shape: true}},
		{name: "seed 000 empty list", provider: jsonBody(200, bodyEmptyList), want: want{
			outcome: results.ContractError, code: results.CodeEmptySelection, attempts: 1, status: 200, shape: true}},

		// The remaining rule codes.
		{name: "item fails validate", provider: jsonBody(200, bodyIntegerID), want: want{
			outcome: results.ContractError, code: results.CodeInvalidItem, attempts: 1, status: 200, shape: true}},
		{name: "fewer than min_results", provider: jsonBody(200, bodyOriginalList),
			probe: func(p *checks.Probe) { p.Steps[0].Expect.MinResults = 2 },
			want: want{
				outcome: results.ContractError, code: results.CodeTooFewResults, attempts: 1, status: 200, shape: true}},
		{name: "select returns an object", provider: jsonBody(200, bodyOriginalList),
			probe: func(p *checks.Probe) { p.Steps[0].Consumer = mustConsumer("whole_body", "response", "") },
			want: want{
				outcome: results.ContractError, code: results.CodeSelectionNotList, attempts: 1, status: 200, shape: true}},

		// A run that passed only after a retry is a pass, with attempts 2.
		{name: "503 then 200", provider: unavailableThenOK, want: want{
			outcome: results.Pass, attempts: 2, status: 200, validated: 1, shape: true}},
	}
}

// TestRun drives every row's provider through a real operation.
func TestRun(t *testing.T) {
	for _, r := range rows() {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			got := runRow(t, r)
			if err := checkOutcome(got, r.want); err != nil {
				t.Errorf("%v\nresult: %s", err, dump(got))
			}
		})
	}
}

// runRow starts the row's provider and runs its probe once.
func runRow(t *testing.T, r row) results.Result {
	t.Helper()
	p := testProbe(t, r.provider(t))
	if r.probe != nil {
		r.probe(p)
	}
	opts := Options{Rand: func() float64 { return 0.5 }, Version: "test"}
	if r.opts != nil {
		r.opts(&opts)
	}
	e := NewExecutor(opts)
	t.Cleanup(e.CloseIdleConnections)
	ctx := t.Context()
	if r.cancel > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		time.AfterFunc(r.cancel, cancel)
	}
	if r.deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.deadline)
		t.Cleanup(cancel)
	}
	return e.Run(ctx, p)
}

// checkOutcome returns why got is not what w describes, or nil. Beyond the
// row's own expectations it enforces what every result must satisfy: a
// pass has no error and at least one validated item, a failure has a code
// whose outcome and retryability agree, and every attempt is recorded with
// its code and its wait.
func checkOutcome(got results.Result, w want) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if got.Outcome != w.outcome {
		fail("outcome = %q, want %q", got.Outcome, w.outcome)
	}
	if got.Code() != w.code {
		fail("code = %q, want %q", got.Code(), w.code)
	}
	if got.OperationID == "" || got.Probe == "" || got.StartedAt.IsZero() {
		fail("operation id %q, probe %q, started at %v: all must be set", got.OperationID, got.Probe, got.StartedAt)
	}
	if w.under > 0 && got.Duration >= w.under {
		fail("duration = %v, want under %v", got.Duration, w.under)
	}

	switch got.Outcome {
	case results.Pass:
		// An empty list is never a pass (SPEC §1).
		if got.Error != nil {
			fail("pass with error %v", got.Error)
		}
		if got.ValidatedCount < max(w.validated, 1) || got.SelectedCount < got.ValidatedCount {
			fail("pass with %d selected, %d validated; want at least %d validated",
				got.SelectedCount, got.ValidatedCount, max(w.validated, 1))
		}
		if got.ResponseSample != "" {
			fail("pass keeps a response sample")
		}
	default:
		if got.Error == nil {
			fail("%s without an error", got.Outcome)
			break
		}
		if got.Error.Code.Outcome() != got.Outcome {
			fail("code %q belongs to %s, outcome is %s", got.Error.Code, got.Error.Code.Outcome(), got.Outcome)
		}
		if got.Error.Retryable != w.retryable || got.Error.Retryable != got.Error.Code.Retryable() {
			fail("retryable = %v, want %v", got.Error.Retryable, w.retryable)
		}
		if got.Error.Message == "" {
			fail("empty message")
		}
		if strings.Contains(got.Error.Message, "giving up") || got.Error.Message == context.DeadlineExceeded.Error() {
			fail("message %q is retryablehttp's or the context's, not the cause", got.Error.Message)
		}
	}
	if w.message != nil && (got.Error == nil || !w.message.MatchString(got.Error.Message)) {
		fail("message does not match %q", w.message)
	}
	if got.HTTPStatus != w.status {
		fail("http status = %d, want %d", got.HTTPStatus, w.status)
	}
	if w.shape != (got.Shape != nil) {
		fail("shape = %v, want one: %v", got.Shape, w.shape)
	} else if got.Shape != nil && (!regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(got.Shape.Fingerprint) || got.Shape.Canonical == "") {
		fail("shape = %+v, want a 16-hex fingerprint and its canonical text", *got.Shape)
	}

	if len(got.Attempts) != w.attempts {
		fail("%d attempts, want %d", len(got.Attempts), w.attempts)
		return errors.Join(errs...)
	}
	waits := w.waits
	if waits == nil && w.attempts > 1 {
		waits = []time.Duration{500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond}[:w.attempts-1]
	}
	for i, a := range got.Attempts {
		last := i == len(got.Attempts)-1
		if a.Number != i+1 || a.StartedAt.IsZero() || a.Duration < 0 {
			fail("attempt %d: number %d, started %v, duration %v", i+1, a.Number, a.StartedAt, a.Duration)
		}
		if (a.Code == "") != (a.Message == "") {
			fail("attempt %d: code %q with message %q", i+1, a.Code, a.Message)
		}
		switch {
		case !last && (!a.Code.Retryable() || a.Wait != waits[i]):
			fail("attempt %d was retried: code %q, wait %v; want a retryable code and wait %v", i+1, a.Code, a.Wait, waits[i])
		case last && a.Wait != 0:
			fail("last attempt waits %v", a.Wait)
		case last && got.Code() == results.CodeCanceled:
			// A shutdown may come between attempts: the last one keeps its cause.
		case last && a.Code != "" && a.Code != got.Code():
			fail("last attempt's code %q is not the result's %q", a.Code, got.Code())
		case last && got.Outcome == results.Unavailable && a.Code != got.Code():
			fail("unavailable, but the last attempt's code is %q", a.Code)
		case last && got.Outcome == results.Pass && a.Code != "":
			fail("pass, but the last attempt failed with %q", a.Code)
		}
	}
	return errors.Join(errs...)
}

// TestCheckOutcomeCatchesEmptyPass is seed 003's mutation test: the buggy
// helper turned a timeout into an empty success. Its result must fail the
// timeout row, and must fail a pass row too (an empty list is never a
// pass), or the table only checks that some value came back. The real
// timeout and pass runs are the positive controls.
func TestCheckOutcomeCatchesEmptyPass(t *testing.T) {
	t.Parallel()
	var timeoutRow, passRow row
	for _, r := range rows() {
		switch r.name {
		case "hang":
			timeoutRow = r
		case "seed 000 original list":
			passRow = r
		}
	}
	timedOut := runRow(t, timeoutRow)
	if err := checkOutcome(timedOut, timeoutRow.want); err != nil {
		t.Fatalf("positive control: the real timeout fails its own row: %v", err)
	}
	passed := runRow(t, passRow)
	if err := checkOutcome(passed, passRow.want); err != nil {
		t.Fatalf("positive control: the real pass fails its own row: %v", err)
	}

	// The buggy helper: "except (TimeoutError, ConnectionError): return []".
	mutated := timedOut
	mutated.Outcome, mutated.Error = results.Pass, nil
	mutated.SelectedCount, mutated.ValidatedCount = 0, 0
	mutated.Attempts = append([]results.Attempt(nil), timedOut.Attempts...)
	for i := range mutated.Attempts {
		mutated.Attempts[i].Code, mutated.Attempts[i].Message = "", ""
	}
	if err := checkOutcome(mutated, timeoutRow.want); err == nil {
		t.Error("a timeout turned into an empty pass satisfies the timeout row")
	}
	if err := checkOutcome(mutated, passRow.want); err == nil {
		t.Error("a timeout turned into an empty pass satisfies the pass row")
	}
}

var dump = probetest.Dump
