package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/results"
)

// refundDesk is a refund service with its token endpoint and the order
// whose state tells whether a refund really happened (seed 002).
type refundDesk struct {
	mu           sync.Mutex
	lie          bool          // refunds claim success and change nothing
	settle       time.Duration // how long a real refund takes to show
	ordersStatus int           // GET /orders answers this instead (0: 200)
	ordersFlaky  int           // GET /orders answers 503 this many times first
	refundStatus int           // POST /refunds answers this instead (0: 201)
	noToken      bool          // the token endpoint answers without one

	state      string
	refundedAt time.Time
	refunds    int      // POST /refunds received
	deletes    []string // DELETE paths received
	keys       []string // Idempotency-Key of each refund request
	orderPaths []string // GET /orders paths received, escaped
}

const deskToken = "tok-SECRET-7f3a9c"

func newRefundDesk() *refundDesk { return &refundDesk{state: "paid"} }

func (d *refundDesk) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		if d.noToken {
			fmt.Fprint(w, `{"token_type": "bearer"}`)
			return
		}
		fmt.Fprintf(w, `{"access_token": %q, "token_type": "bearer"}`, deskToken)
	case r.Method == http.MethodPost && r.URL.Path == "/refunds":
		d.refunds++
		d.keys = append(d.keys, r.Header.Get("Idempotency-Key"))
		if r.Header.Get("Authorization") != "Bearer "+deskToken {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error": "bad credentials %s"}`, r.Header.Get("Authorization"))
			return
		}
		if d.refundStatus != 0 {
			w.WriteHeader(d.refundStatus)
			// A provider that echoes the credential it was sent.
			fmt.Fprintf(w, `{"error": "busy, retry later (%s)"}`, r.Header.Get("Authorization"))
			return
		}
		if !d.lie {
			d.state, d.refundedAt = "refunded", time.Now()
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"status": "success", "data": {"refund_id": "rf_31", "amount": 19.99}}`)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/orders/"):
		d.orderPaths = append(d.orderPaths, r.URL.EscapedPath())
		if d.ordersFlaky > 0 {
			d.ordersFlaky--
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error": "tracker busy"}`)
			return
		}
		if d.ordersStatus != 0 {
			w.WriteHeader(d.ordersStatus)
			fmt.Fprint(w, `{"error": "tracker down"}`)
			return
		}
		state, refundID := d.state, "null"
		if state == "refunded" && time.Since(d.refundedAt) < d.settle {
			state = "paid" // not visible yet
		}
		if state == "refunded" {
			refundID = `"rf_31"`
		}
		fmt.Fprintf(w, `{"id": 31, "state": %q, "refund_id": %s}`, state, refundID)
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/refunds/"):
		d.deletes = append(d.deletes, r.URL.Path)
		d.state = "paid"
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error": "no such route"}`)
	}
}

// refundProbe is SPEC §11's drill against the desk at url; edit changes
// the YAML before it is loaded.
func refundProbe(t *testing.T, url string, edit func(string) string) *checks.Probe {
	t.Helper()
	yaml := `version: 1
defaults:
  timeout: 2s
  retries: {max_attempts: 3, base_delay: 1ms, max_delay: 2ms, budget: 5s}
consumers:
  - name: refund_envelope
    select: 'response.status == "success" ? [response.data] : fail("refund_failed", "status is " + string(response.status))'
    validate: type(.refund_id) == "string"
probes:
  - name: refund_order_31
    steps:
      - name: token
        request: {method: POST, url: "${URL}/token", json: {client_id: probe}}
        capture: {access_token: {rule: response.access_token, secret: true}}
      - name: refund
        request:
          method: POST
          url: ${URL}/refunds
          headers: {Authorization: "Bearer {{access_token}}", Idempotency-Key: "{{operation_id}}"}
          json: {order_id: 31, amount: 19.99}
        expect: {status: [201]}
        consumer: refund_envelope
        capture: {refund_id: response.data.refund_id}
      - name: verify
        request: {url: "${URL}/orders/31"}
        until: 'response.state == "refunded" && response.refund_id == vars.refund_id'
        within: 600ms
        every: 50ms
      - name: cleanup
        always: true
        request: {method: DELETE, url: "${URL}/refunds/{{refund_id}}"}
        expect: {status: [204]}
`
	if edit != nil {
		yaml = edit(yaml)
	}
	cfg, err := checks.Parse("checks.yaml", []byte(yaml), t.TempDir(), func(k string) (string, bool) {
		if k == "URL" {
			return url, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Probes[0]
}

func serveDesk(t *testing.T, d *refundDesk) string {
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return srv.URL
}

// stepsOf lists the step of each attempt, run-length encoded:
// "token refund verify×3 cleanup".
func stepsOf(res results.Result) string {
	var out []string
	n := 0
	for i, a := range res.Attempts {
		n++
		if i+1 < len(res.Attempts) && res.Attempts[i+1].Step == a.Step {
			continue
		}
		if n > 1 {
			out = append(out, fmt.Sprintf("%s×%d", a.Step, n))
		} else {
			out = append(out, a.Step)
		}
		n = 0
	}
	return strings.Join(out, " ")
}

func runSteps(t *testing.T, p *checks.Probe) results.Result {
	t.Helper()
	return NewExecutor(Options{Redactor: results.NewRedactor()}).Run(context.Background(), p)
}

// TestStepsRealRefund: a refund that happened passes: the token is sent,
// the idempotency key is the run's id, the verification polls until the
// order shows the refund, and the clean-up runs last.
func TestStepsRealRefund(t *testing.T) {
	d := newRefundDesk()
	d.settle = 150 * time.Millisecond
	res := runSteps(t, refundProbe(t, serveDesk(t, d), nil))
	if res.Outcome != results.Pass || res.Step != "" {
		t.Fatalf("run = %s %v (step %q), want a pass", res.Outcome, res.Error, res.Step)
	}
	steps := stepsOf(res)
	if !strings.HasPrefix(steps, "token refund verify×") || !strings.HasSuffix(steps, " cleanup") {
		t.Errorf("attempts by step: %s; want token, refund, several polls of verify, cleanup", steps)
	}
	polls := 0
	for i, a := range res.Attempts {
		if a.Number != i+1 {
			t.Errorf("attempt %d numbered %d", i+1, a.Number)
		}
		if a.Step == "verify" {
			polls++
			if a.Poll != polls || a.Try != 1 {
				t.Errorf("verify's poll %d is poll %d try %d; want each poll its own call, tried once", polls, a.Poll, a.Try)
			}
		} else if a.Poll != 0 || a.Try != 1 {
			t.Errorf("%s's attempt is poll %d try %d, want no poll, try 1", a.Step, a.Poll, a.Try)
		}
	}
	if n := res.AttemptCount(); n != 1 {
		t.Errorf("AttemptCount = %d, want 1: no exchange was retried (steps and polls are not retries)", n)
	}
	if d.refunds != 1 || len(d.keys) != 1 || d.keys[0] != res.OperationID {
		t.Errorf("%d refunds, keys %v; want one, keyed by the operation id %s", d.refunds, d.keys, res.OperationID)
	}
	if len(d.deletes) != 1 || d.deletes[0] != "/refunds/rf_31" {
		t.Errorf("clean-up requests %v, want DELETE /refunds/rf_31", d.deletes)
	}
	if got := stepVerdicts(res); got != "token pass, refund pass, verify pass, cleanup pass" {
		t.Errorf("steps: %s", got)
	}
	if v := res.Steps[2]; v.Polls < 2 || v.Shape == nil || res.Steps[3].Shape != nil || !res.Steps[3].Always {
		t.Errorf("verify judged %d polls (shape %v), cleanup shape %v always %v; want several polls, each step its own shape",
			v.Polls, v.Shape, res.Steps[3].Shape, res.Steps[3].Always)
	}
}

// stepVerdicts lists each step of a run with its outcome and code.
func stepVerdicts(res results.Result) string {
	var out []string
	for _, s := range res.Steps {
		v := s.Name + " " + string(s.Outcome)
		if s.Error != nil {
			v += " " + string(s.Error.Code)
		}
		if s.Skipped {
			v += " (skipped)"
		}
		out = append(out, v)
	}
	return strings.Join(out, ", ")
}

// TestStepsCleanLie: a refund that claims success while the order stays
// paid is claim_mismatch at the verification, which says what it saw; the
// clean-up still runs.
func TestStepsCleanLie(t *testing.T) {
	d := newRefundDesk()
	d.lie = true
	start := time.Now()
	res := runSteps(t, refundProbe(t, serveDesk(t, d), nil))
	took := time.Since(start)
	if res.Outcome != results.ContractError || res.Code() != results.CodeClaimMismatch || res.Step != "verify" {
		t.Fatalf("run = %s %v (step %q), want contract_error claim_mismatch at verify", res.Outcome, res.Error, res.Step)
	}
	want := "step verify: claim not confirmed within 600ms ("
	if !strings.HasPrefix(res.Error.Message, want) || !strings.HasSuffix(res.Error.Message, "`response.state == \"refunded\"` was false: state: \"paid\"") {
		t.Errorf("message %q, want it to start %q and show the observed state", res.Error.Message, want)
	}
	if took < 500*time.Millisecond || took > 3*time.Second {
		t.Errorf("the verification took %s; within is 600ms", took)
	}
	if len(d.deletes) != 1 {
		t.Errorf("clean-up requests %v, want one: always steps run after a failure", d.deletes)
	}
	if got := stepVerdicts(res); got != "token pass, refund pass, verify contract_error claim_mismatch, cleanup pass" {
		t.Errorf("steps: %s", got)
	}
}

// TestStepsVerificationDown: a verification whose endpoint fails cannot
// say the claim was false: it is unavailable with the transport code.
func TestStepsVerificationDown(t *testing.T) {
	d := newRefundDesk()
	d.ordersStatus = http.StatusServiceUnavailable
	res := runSteps(t, refundProbe(t, serveDesk(t, d), nil))
	if res.Outcome != results.Unavailable || res.Code() != results.CodeServerError || res.Step != "verify" ||
		!strings.HasPrefix(res.Error.Message, "step verify: ") {
		t.Fatalf("run = %s %v (step %q), want unavailable server_error at verify", res.Outcome, res.Error, res.Step)
	}
}

// TestStepsCaptureFailed: a token step that gives no token fails there;
// the refund is never attempted, and the clean-up, which needs the refund
// id, is skipped.
func TestStepsCaptureFailed(t *testing.T) {
	d := newRefundDesk()
	d.noToken = true
	res := runSteps(t, refundProbe(t, serveDesk(t, d), nil))
	if res.Outcome != results.ContractError || res.Code() != results.CodeCaptureFailed || res.Step != "token" {
		t.Fatalf("run = %s %v (step %q), want contract_error capture_failed at token", res.Outcome, res.Error, res.Step)
	}
	if want := "step token: capture access_token: response.access_token gave null"; res.Error.Message != want {
		t.Errorf("message %q, want %q", res.Error.Message, want)
	}
	if d.refunds != 0 || len(d.deletes) != 0 || stepsOf(res) != "token" {
		t.Errorf("%d refunds, deletes %v, attempts %s; want the run to stop at the token", d.refunds, d.deletes, stepsOf(res))
	}
	if got := stepVerdicts(res); got != "token contract_error capture_failed, cleanup pass (skipped)" {
		t.Errorf("steps: %s", got)
	}
}

// TestStepsNeverRepeatARefundBlindly: a failing POST step is attempted
// once, unless it sends an Idempotency-Key or sets retries; the provider
// counts the requests.
func TestStepsNeverRepeatARefundBlindly(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want int
	}{
		{"with an Idempotency-Key: retried", nil, 3},
		{"without: once", func(y string) string {
			return strings.Replace(y, `, Idempotency-Key: "{{operation_id}}"`, "", 1)
		}, 1},
		{"without, retries set: retried", func(y string) string {
			y = strings.Replace(y, `, Idempotency-Key: "{{operation_id}}"`, "", 1)
			return strings.Replace(y, "        expect: {status: [201]}\n", "        expect: {status: [201]}\n        retries: {max_attempts: 2}\n", 1)
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newRefundDesk()
			d.refundStatus = http.StatusServiceUnavailable
			res := runSteps(t, refundProbe(t, serveDesk(t, d), tt.edit))
			if res.Outcome != results.Unavailable || res.Step != "refund" {
				t.Fatalf("run = %s %v (step %q), want unavailable at refund", res.Outcome, res.Error, res.Step)
			}
			if d.refunds != tt.want {
				t.Errorf("the provider got %d refund requests, want %d", d.refunds, tt.want)
			}
			if got := res.AttemptCount(); got != tt.want {
				t.Errorf("AttemptCount = %d, want %d: the refund's tries, the token's one not a retry", got, tt.want)
			}
		})
	}
}

// TestStepsPollRetriedIsRetry: a verification whose first poll met a
// transient failure retries that poll; the run counts one retry, and each
// poll numbers its own tries.
func TestStepsPollRetriedIsRetry(t *testing.T) {
	d := newRefundDesk()
	d.settle = 150 * time.Millisecond
	d.ordersFlaky = 1
	res := runSteps(t, refundProbe(t, serveDesk(t, d), nil))
	if res.Outcome != results.Pass {
		t.Fatalf("run = %s %v, want a pass", res.Outcome, res.Error)
	}
	if got := res.AttemptCount(); got != 2 {
		t.Errorf("AttemptCount = %d, want 2: one retry of the first poll", got)
	}
	var verify []string
	for _, a := range res.Attempts {
		if a.Step == "verify" {
			verify = append(verify, fmt.Sprintf("poll %d try %d %s", a.Poll, a.Try, a.Code))
		}
	}
	if len(verify) < 3 || verify[0] != "poll 1 try 1 server_error" || verify[1] != "poll 1 try 2 " || verify[2] != "poll 2 try 1 " {
		t.Errorf("verify's attempts: %q; want poll 1 tried twice, then poll 2", verify)
	}
}

// TestStepsSecretCaptureScrubbed: a captured token that a provider
// echoes back is scrubbed from the run's message, attempts and sample.
func TestStepsSecretCaptureScrubbed(t *testing.T) {
	d := newRefundDesk()
	d.refundStatus = http.StatusBadRequest // a contract error, echoing the token
	res := runSteps(t, refundProbe(t, serveDesk(t, d), nil))
	if res.Outcome != results.ContractError || res.Step != "refund" {
		t.Fatalf("run = %s %v (step %q), want contract_error at refund", res.Outcome, res.Error, res.Step)
	}
	dump, _ := json.Marshal(res)
	if strings.Contains(string(dump), deskToken) {
		t.Errorf("the captured token shows in the result:\n%s", dump)
	}
	if !strings.Contains(res.ResponseSample, results.Redacted) {
		t.Errorf("sample %q: the echoed token was not scrubbed", res.ResponseSample)
	}
}

// TestStepsTemplateEscaping: a captured value lands escaped for where it
// goes: it can neither add a path segment nor a header.
func TestStepsTemplateEscaping(t *testing.T) {
	d := newRefundDesk()
	url := serveDesk(t, d)
	p := refundProbe(t, url, func(y string) string {
		y = strings.Replace(y, "capture: {refund_id: response.data.refund_id}", `capture: {refund_id: '"31/../x?y=1"'}`, 1)
		return strings.Replace(y, `url: "${URL}/orders/31"`, `url: "${URL}/orders/{{refund_id}}"`, 1)
	})
	res := runSteps(t, p)
	if len(d.orderPaths) == 0 || d.orderPaths[0] != "/orders/31%2F..%2Fx%3Fy=1" {
		t.Errorf("GET paths %v, want the captured value escaped into one segment", d.orderPaths)
	}
	_ = res

	p = refundProbe(t, url, func(y string) string {
		return strings.Replace(y, "rule: response.access_token", `rule: '"tok\nX-Evil: 1"'`, 1)
	})
	res = runSteps(t, p)
	if res.Code() != results.CodeCaptureFailed || res.Step != "refund" ||
		!strings.Contains(res.Error.Message, "cannot go in header Authorization") {
		t.Errorf("run = %s %v (step %q), want capture_failed at refund: a line break cannot go in a header", res.Outcome, res.Error, res.Step)
	}
}

// TestSingleProbeIsOneStep: a single probe runs on the same engine, its
// {{operation_id}} expanded, with no step on its attempts.
func TestSingleProbeIsOneStep(t *testing.T) {
	d := newRefundDesk()
	url := serveDesk(t, d)
	cfg, err := checks.Parse("checks.yaml", []byte(`version: 1
consumers: [{name: c, select: '[response.data]'}]
probes:
  - name: refund
    request: {method: POST, url: "`+url+`/token", headers: {Idempotency-Key: "{{operation_id}}"}}
    consumer: c
`), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := runSteps(t, cfg.Probes[0])
	if res.Step != "" || len(res.Attempts) != 1 || res.Attempts[0].Step != "" || res.Consumer.Name != "c" {
		t.Errorf("run: step %q, attempts %+v, consumer %v", res.Step, res.Attempts, res.Consumer)
	}
}

// withFixtures adds canned runs to the refund drill.
func withFixtures(y string) string {
	return y + `    fixtures:
      - name: real refund
        answers:
          token: {response: {access_token: tok-1}}
          refund: {status: 201, response: {status: success, data: {refund_id: rf_31}}}
          verify: [{response: {state: paid, refund_id: null}}, {response: {state: refunded, refund_id: rf_31}}]
          cleanup: {status: 204}
        expect: pass
      - name: clean lie
        answers:
          token: {response: {access_token: tok-1}}
          refund: {status: 201, response: {status: success, data: {refund_id: rf_31}}}
          verify: {response: {state: paid, refund_id: null}}
        expect: {outcome: contract_error, code: claim_mismatch, step: verify}
      - name: no token
        answers:
          token: {response: {token_type: bearer}}
        expect: {outcome: contract_error, code: capture_failed, step: token}
      - name: tracker down
        answers:
          token: {response: {access_token: tok-1}}
          refund: {status: 201, response: {status: success, data: {refund_id: rf_31}}}
          verify: {status: 503, response: {error: down}}
        expect: {outcome: unavailable, code: server_error, step: verify}
`
}

// TestJudgeProbeFixture: a multi-step probe's canned runs reach the
// verdicts a live run would, at once.
func TestJudgeProbeFixture(t *testing.T) {
	p := refundProbe(t, "http://127.0.0.1:9", withFixtures)
	e := NewExecutor(Options{})
	start := time.Now()
	for _, f := range p.Fixtures {
		v := e.JudgeProbeFixture(p, f)
		if v.Outcome != f.Expect.Outcome || (f.Expect.Code != "" && v.Code() != f.Expect.Code) || v.Step != f.Step {
			t.Errorf("fixture %q: %s %v at step %q; want %s %s at %q", f.Name, v.Outcome, v.Error, v.Step, f.Expect.Outcome, f.Expect.Code, f.Step)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the fixtures took %s: canned runs must not wait", took)
	}
}

// TestMutateProbeFixture: each step's answer is mutated in turn and the
// whole probe judged; what it still passes on is reported by step.
func TestMutateProbeFixture(t *testing.T) {
	p := refundProbe(t, "http://127.0.0.1:9", withFixtures)
	r := NewExecutor(Options{}).MutateProbeFixtures(p, []checks.ProbeFixture{p.Fixtures[0]})
	want := []string{"real refund: step token", "real refund: step refund", "real refund: step verify"}
	if strings.Join(r.Bases, ",") != strings.Join(want, ",") {
		t.Errorf("bases %v, want %v (cleanup reads nothing)", r.Bases, want)
	}
	if r.Total == 0 || r.Killed == 0 || r.Killed == r.Total {
		t.Errorf("%d of %d killed", r.Killed, r.Total)
	}
	survived := map[string]bool{}
	for _, s := range r.Survivors {
		survived[s.Base+" / "+s.Mutation.Name] = true
	}
	for _, name := range []string{"real refund: step verify / retype state string->number", "real refund: step refund / remove_field data.refund_id"} {
		if survived[name] {
			t.Errorf("%s survived: the claim check or the capture should reject it", name)
		}
	}
	// A token that turns into a number is still sent: nothing checks it.
	if !survived["real refund: step token / retype access_token string->number"] {
		t.Errorf("survivors %v; want the retyped token among them", survived)
	}
	if bad := NewExecutor(Options{}).MutateProbeFixtures(p, []checks.ProbeFixture{p.Fixtures[1]}); len(bad.Skipped) != 1 {
		t.Errorf("a fixture that does not pass was mutated: %+v", bad)
	}
}

// TestStepsMCPStep: a step may call an MCP tool; its answer is captured
// and read by the next step like an HTTP one's, and its tool call is
// attempted once unless the step sets retries.
func TestStepsMCPStep(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Config{Era: mcptest.Legacy, Tools: []mcptest.Tool{searchTool()}})
	var seen []string
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id": "doc_1", "published": true}`)
	}))
	t.Cleanup(docs.Close)
	cfg, err := checks.Parse("checks.yaml", []byte(`version: 1
consumers: [{name: results, select: response.results}]
probes:
  - name: search_then_open
    steps:
      - name: search
        mcp: {url: "`+srv.URL+`", tool: search, arguments: {query: guide}}
        consumer: results
        capture: {doc: 'response.results[0].id'}
      - name: open
        request: {url: "`+docs.URL+`/docs/{{doc}}"}
        until: response.published == true && response.id == vars.doc
        within: 1s
`), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Probes[0]
	res := runSteps(t, p)
	if res.Outcome != results.Pass || len(seen) != 1 || seen[0] != "/docs/doc_1" {
		t.Fatalf("run = %s %v (step %q), paths %v; want a pass that opened doc_1", res.Outcome, res.Error, res.Step, seen)
	}
	var methods []string
	for _, a := range res.Attempts {
		if a.Step == "search" {
			methods = append(methods, a.Method)
		}
	}
	if !slices.Contains(methods, "initialize") || !slices.Contains(methods, "tools/call") {
		t.Errorf("the MCP step's rows: %v, want its session's exchanges", methods)
	}
	if p.Steps[0].Retries.MaxAttempts != 1 {
		t.Errorf("an MCP step makes %d attempts, want 1 without retries of its own", p.Steps[0].Retries.MaxAttempts)
	}
}

// TestMutateProbeFixtureAccepts: a step's consumer acknowledges what its
// rules let through for the probe as for itself.
func TestMutateProbeFixtureAccepts(t *testing.T) {
	p := refundProbe(t, "http://127.0.0.1:9", func(y string) string {
		y = strings.Replace(y, "consumers:\n", `consumers:
  - name: token_issued
    select: '[response]'
    accept_mutations:
      - {mutation: retype, reason: "the token is opaque: the refund step's answer shows whether it worked"}
`, 1)
		y = strings.Replace(y, "        capture: {access_token: {rule: response.access_token, secret: true}}",
			"        consumer: token_issued\n        capture: {access_token: {rule: response.access_token, secret: true}}", 1)
		return withFixtures(y)
	})
	r := NewExecutor(Options{}).MutateProbeFixtures(p, []checks.ProbeFixture{p.Fixtures[0]})
	var retype, nest *consumers.Survivor
	for i, s := range r.Survivors {
		switch s.Mutation.Name {
		case "retype access_token string->number":
			retype = &r.Survivors[i]
		case "nest_field access_token":
			nest = &r.Survivors[i]
		}
	}
	if retype == nil || retype.Accepted == "" || nest == nil || nest.Accepted != "" {
		t.Errorf("retype %+v, nest %+v: want the retype accepted by its kind and the nesting still a blind spot", retype, nest)
	}
	if !r.Failed() {
		t.Errorf("the report passes with an unaccepted blind spot")
	}
}
