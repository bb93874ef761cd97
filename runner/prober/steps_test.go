package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/refunddesk"
	"github.com/toolpulse/toolpulse/results"
)

func runSteps(t *testing.T, p *checks.Probe) results.Result {
	t.Helper()
	return NewExecutor(Options{Redactor: results.NewRedactor()}).Run(context.Background(), p)
}

// TestStepsRealRefund: a refund that happened passes: the token is sent,
// the idempotency key is the run's id, the verification polls until the
// order shows the refund, and the clean-up runs last.
func TestStepsRealRefund(t *testing.T) {
	d := refunddesk.New()
	d.Settle = 150 * time.Millisecond
	res := runSteps(t, refunddesk.Probe(t, refunddesk.Serve(t, d), nil))
	if res.Outcome != results.Pass || res.Step != "" {
		t.Fatalf("run = %s %v (step %q), want a pass", res.Outcome, res.Error, res.Step)
	}
	steps := refunddesk.StepsOf(res)
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
	if d.Refunds != 1 || len(d.Keys) != 1 || d.Keys[0] != res.OperationID {
		t.Errorf("%d refunds, keys %v; want one, keyed by the operation id %s", d.Refunds, d.Keys, res.OperationID)
	}
	if len(d.Deletes) != 1 || d.Deletes[0] != "/refunds/rf_31" {
		t.Errorf("clean-up requests %v, want DELETE /refunds/rf_31", d.Deletes)
	}
	if got := refunddesk.StepVerdicts(res); got != "token pass, refund pass, verify pass, cleanup pass" {
		t.Errorf("steps: %s", got)
	}
	if v := res.Steps[2]; v.Polls < 2 || v.Shape == nil || res.Steps[3].Shape != nil || !res.Steps[3].Always {
		t.Errorf("verify judged %d polls (shape %v), cleanup shape %v always %v; want several polls, each step its own shape",
			v.Polls, v.Shape, res.Steps[3].Shape, res.Steps[3].Always)
	}
}

// TestStepsCleanLie: a refund that claims success while the order stays
// paid is claim_mismatch at the verification, which says what it saw; the
// clean-up still runs.
func TestStepsCleanLie(t *testing.T) {
	d := refunddesk.New()
	d.Lie = true
	start := time.Now()
	res := runSteps(t, refunddesk.Probe(t, refunddesk.Serve(t, d), nil))
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
	if len(d.Deletes) != 1 {
		t.Errorf("clean-up requests %v, want one: always steps run after a failure", d.Deletes)
	}
	if got := refunddesk.StepVerdicts(res); got != "token pass, refund pass, verify contract_error claim_mismatch, cleanup pass" {
		t.Errorf("steps: %s", got)
	}
}

// TestStepsVerificationDown: a verification whose endpoint fails cannot
// say the claim was false: it is unavailable with the transport code.
func TestStepsVerificationDown(t *testing.T) {
	d := refunddesk.New()
	d.OrdersStatus = http.StatusServiceUnavailable
	res := runSteps(t, refunddesk.Probe(t, refunddesk.Serve(t, d), nil))
	if res.Outcome != results.Unavailable || res.Code() != results.CodeServerError || res.Step != "verify" ||
		!strings.HasPrefix(res.Error.Message, "step verify: ") {
		t.Fatalf("run = %s %v (step %q), want unavailable server_error at verify", res.Outcome, res.Error, res.Step)
	}
}

// TestStepsCaptureFailed: a token step that gives no token fails there;
// the refund is never attempted, and the clean-up, which needs the refund
// id, is skipped.
func TestStepsCaptureFailed(t *testing.T) {
	d := refunddesk.New()
	d.NoToken = true
	res := runSteps(t, refunddesk.Probe(t, refunddesk.Serve(t, d), nil))
	if res.Outcome != results.ContractError || res.Code() != results.CodeCaptureFailed || res.Step != "token" {
		t.Fatalf("run = %s %v (step %q), want contract_error capture_failed at token", res.Outcome, res.Error, res.Step)
	}
	if want := "step token: capture access_token: response.access_token gave null"; res.Error.Message != want {
		t.Errorf("message %q, want %q", res.Error.Message, want)
	}
	if d.Refunds != 0 || len(d.Deletes) != 0 || refunddesk.StepsOf(res) != "token" {
		t.Errorf("%d refunds, deletes %v, attempts %s; want the run to stop at the token", d.Refunds, d.Deletes, refunddesk.StepsOf(res))
	}
	if got := refunddesk.StepVerdicts(res); got != "token contract_error capture_failed, cleanup pass (skipped)" {
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
			d := refunddesk.New()
			d.RefundStatus = http.StatusServiceUnavailable
			res := runSteps(t, refunddesk.Probe(t, refunddesk.Serve(t, d), tt.edit))
			if res.Outcome != results.Unavailable || res.Step != "refund" {
				t.Fatalf("run = %s %v (step %q), want unavailable at refund", res.Outcome, res.Error, res.Step)
			}
			if d.Refunds != tt.want {
				t.Errorf("the provider got %d refund requests, want %d", d.Refunds, tt.want)
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
	d := refunddesk.New()
	d.Settle = 150 * time.Millisecond
	d.OrdersFlaky = 1
	res := runSteps(t, refunddesk.Probe(t, refunddesk.Serve(t, d), nil))
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
	d := refunddesk.New()
	d.RefundStatus = http.StatusBadRequest // a contract error, echoing the token
	res := runSteps(t, refunddesk.Probe(t, refunddesk.Serve(t, d), nil))
	if res.Outcome != results.ContractError || res.Step != "refund" {
		t.Fatalf("run = %s %v (step %q), want contract_error at refund", res.Outcome, res.Error, res.Step)
	}
	dump, _ := json.Marshal(res)
	if strings.Contains(string(dump), refunddesk.Token) {
		t.Errorf("the captured token shows in the result:\n%s", dump)
	}
	if !strings.Contains(res.ResponseSample, results.Redacted) {
		t.Errorf("sample %q: the echoed token was not scrubbed", res.ResponseSample)
	}
}

// TestStepsTemplateEscaping: a captured value lands escaped for where it
// goes: it can neither add a path segment nor a header.
func TestStepsTemplateEscaping(t *testing.T) {
	d := refunddesk.New()
	url := refunddesk.Serve(t, d)
	p := refunddesk.Probe(t, url, func(y string) string {
		y = strings.Replace(y, "capture: {refund_id: response.data.refund_id}", `capture: {refund_id: '"31/../x?y=1"'}`, 1)
		return strings.Replace(y, `url: "${URL}/orders/31"`, `url: "${URL}/orders/{{refund_id}}"`, 1)
	})
	res := runSteps(t, p)
	if len(d.OrderPaths) == 0 || d.OrderPaths[0] != "/orders/31%2F..%2Fx%3Fy=1" {
		t.Errorf("GET paths %v, want the captured value escaped into one segment", d.OrderPaths)
	}
	_ = res

	p = refunddesk.Probe(t, url, func(y string) string {
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
	d := refunddesk.New()
	url := refunddesk.Serve(t, d)
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
	p := refunddesk.Probe(t, "http://127.0.0.1:9", withFixtures)
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
	p := refunddesk.Probe(t, "http://127.0.0.1:9", withFixtures)
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
	p := refunddesk.Probe(t, "http://127.0.0.1:9", func(y string) string {
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
