package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
	"github.com/toolpulse/toolpulse/web"
)

// stepsTestRun is the order-31 drill as a steps probe records it: the
// refund answered a clean success, the verification found the order
// unrefunded after three polls, the clean-up ran.
func stepsTestRun(id string, at time.Time) results.Result {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	msg := `step verify: claim false after 3 polls: state: "pending"`
	return results.Result{
		OperationID: id, Probe: "refund_order_31", Kind: results.ProbeSteps, StartedAt: at, Duration: ms(2140),
		Outcome: results.ContractError, Error: &results.Error{Code: results.CodeClaimMismatch, Message: msg},
		Step: "verify", HTTPStatus: 200,
		Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"},
		Attempts: []results.Attempt{
			{Number: 1, Try: 1, StartedAt: at, Duration: ms(20), HTTPStatus: 201, Step: "refund"},
			{Number: 2, Try: 1, Poll: 1, StartedAt: at.Add(ms(30)), Duration: ms(8), HTTPStatus: 200, Step: "verify"},
			{Number: 3, Try: 1, Poll: 2, StartedAt: at.Add(ms(1040)), Duration: ms(9), HTTPStatus: 200, Step: "verify"},
			{Number: 4, Try: 1, Poll: 3, StartedAt: at.Add(ms(2050)), Duration: ms(7), HTTPStatus: 200, Step: "verify",
				Code: results.CodeClaimMismatch, Message: `claim false after 3 polls: state: "pending"`},
			{Number: 5, Try: 1, StartedAt: at.Add(ms(2100)), Duration: ms(6), HTTPStatus: 204, Step: "cleanup"},
		},
		Steps: []results.StepResult{
			{Name: "refund", Outcome: results.Pass, StartedAt: at, Duration: ms(20)},
			{Name: "verify", Outcome: results.ContractError, StartedAt: at.Add(ms(30)), Duration: ms(2027), Polls: 3,
				Error: &results.Error{Code: results.CodeClaimMismatch, Message: `claim false after 3 polls: state: "pending"`}},
			{Name: "cleanup", Outcome: results.Pass, StartedAt: at.Add(ms(2100)), Duration: ms(6), Always: true},
		},
	}
}

// recordStepsRun stores stepsTestRun in the run's database.
func recordStepsRun(t *testing.T, dir, id string, at time.Time) {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Record(context.Background(), stepsTestRun(id, at)); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryShowsSteps: history names a steps run's deciding step in a
// STEP column and each attempt's step with --attempts; its json carries
// step, each attempt's step and the steps.
func TestHistoryShowsSteps(t *testing.T) {
	h := newCLIRun(t)
	if code, out, _ := h.run("check", "--probe", "search"); code != exitOK {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	recordStepsRun(t, h.dir, "op-steps", time.Now().UTC())

	code, out, errOut := h.run("history", "--format", "json", "--attempts", "--probe", "refund_order_31")
	var row struct {
		Kind        string  `json:"kind"`
		Step        *string `json:"step"`
		Attempts    int     `json:"attempts"`
		AttemptList []struct {
			Number int     `json:"number"`
			Poll   *int    `json:"poll"`
			Step   *string `json:"step"`
		} `json:"attempt_list"`
		Steps []struct {
			Step    string  `json:"step"`
			Outcome string  `json:"outcome"`
			Code    *string `json:"code"`
			Polls   int     `json:"polls"`
			Always  bool    `json:"always"`
		} `json:"steps"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &row) != nil {
		t.Fatalf("history: exit %d, %q, %q", code, out, errOut)
	}
	if row.Kind != "steps" || row.Step == nil || *row.Step != "verify" {
		t.Errorf("history row: kind %q, step %v; want steps and verify", row.Kind, row.Step)
	}
	if len(row.AttemptList) != 5 || row.AttemptList[0].Step == nil || *row.AttemptList[0].Step != "refund" ||
		row.AttemptList[4].Step == nil || *row.AttemptList[4].Step != "cleanup" {
		t.Errorf("history attempt_list: %+v; want five rows from refund to cleanup", row.AttemptList)
	}
	if row.Attempts != 1 || row.AttemptList[0].Poll != nil || row.AttemptList[3].Poll == nil || *row.AttemptList[3].Poll != 3 {
		t.Errorf("history: attempts %d, attempt_list %+v; want 1 attempt (polls are not retries), the 4th row poll 3", row.Attempts, row.AttemptList)
	}
	if len(row.Steps) != 3 || row.Steps[1].Step != "verify" || row.Steps[1].Code == nil ||
		*row.Steps[1].Code != "claim_mismatch" || row.Steps[1].Polls != 3 || !row.Steps[2].Always {
		t.Errorf("history steps: %+v; want refund, verify (claim_mismatch after 3 polls), cleanup (always)", row.Steps)
	}

	// A single probe's row says it has no step.
	_, out, _ = h.run("history", "--format", "json", "--attempts", "--probe", "search", "--limit", "1")
	var single map[string]any
	if err := json.Unmarshal([]byte(out), &single); err != nil {
		t.Fatal(err)
	}
	if v, ok := single["step"]; !ok || v != nil {
		t.Errorf("single probe's step: %v (present %v); want null", v, ok)
	}
	if _, ok := single["steps"]; ok {
		t.Errorf("single probe's row has steps: %v", single["steps"])
	}

	_, out, _ = h.run("history", "--attempts")
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[0], "STEP") {
		t.Errorf("history table header lacks STEP:\n%s", out)
	}
	var runLine, cleanupLine string
	for _, l := range lines {
		if strings.Contains(l, "refund_order_31") {
			runLine = l
		}
		if strings.Contains(l, "attempt 5") {
			cleanupLine = l
		}
	}
	if !strings.Contains(runLine, "verify") || !strings.Contains(runLine, "claim_mismatch") {
		t.Errorf("history table: run line %q lacks its deciding step and code", runLine)
	}
	if !strings.Contains(cleanupLine, "cleanup") {
		t.Errorf("history table: attempt 5 line %q lacks its step", cleanupLine)
	}
	if !strings.Contains(out, "poll 3 try 1") {
		t.Errorf("history table does not label the third poll:\n%s", out)
	}
	_, out, _ = h.run("history", "--format", "csv", "--probe", "refund_order_31")
	records, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if col := slices.Index(records[0], "step"); err != nil || len(records) != 2 || col < 0 || records[1][col] != "verify" {
		t.Errorf("history csv: %v, %v; want a step column saying verify", records, err)
	}
	// Without a steps probe listed, there is no STEP column.
	_, out, _ = h.run("history", "--probe", "search")
	if strings.Contains(out, "STEP") {
		t.Errorf("history of a single probe has a STEP column:\n%s", out)
	}
}

// stepsServer serves the status page and API over a store holding one
// steps run of refund_order_31 (a verify drift included) and one run of
// a single probe, with refund_order_31 configured.
func stepsServer(t *testing.T) (srv *httptest.Server, at time.Time) {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	at = now.Add(-time.Minute)
	r := stepsTestRun("op-steps", at)
	r.Steps[1].Shape = &results.Shape{Fingerprint: "59bb5e50001a30dc", Canonical: "object{order:object{state:string}}",
		Baseline: "f676f088d01048b9", Drift: []string{"order: added (object(1 keys))"}}
	drift := &results.Drift{Kind: results.DriftResponse, Probe: r.Probe, Step: "verify", OperationID: r.OperationID,
		DetectedAt: at, Baseline: "f676f088d01048b9", Current: "59bb5e50001a30dc", Diff: []string{"order: added (object(1 keys))"}}
	if err := store.RecordRun(ctx, &results.RunRecord{Result: r, StepDrifts: []*results.Drift{drift}}); err != nil {
		t.Fatal(err)
	}
	single := results.Result{OperationID: "op-single", Probe: "search", Kind: results.ProbeHTTP, StartedAt: at,
		Duration: 40 * time.Millisecond, Outcome: results.Pass, HTTPStatus: 200,
		Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"},
		Attempts: []results.Attempt{{Number: 1, StartedAt: at, Duration: 40 * time.Millisecond, HTTPStatus: 200}}}
	if err := store.Record(ctx, single); err != nil {
		t.Fatal(err)
	}
	probes := []*checks.Probe{
		{Name: "refund_order_31", Interval: 5 * time.Minute, Steps: []checks.Step{
			{Name: "refund", Request: checks.Request{Method: "POST", URL: "http://127.0.0.1:8099/refunds?key=s3cr3t-in-query"}},
			{Name: "verify", Request: checks.Request{URL: "http://127.0.0.1:8099/orders/31"}, Until: &consumers.Expression{}},
			{Name: "cleanup", Always: true, Request: checks.Request{Method: "DELETE", URL: "http://127.0.0.1:8099/refunds/{{refund_id}}"}},
			{Name: "ask", MCP: &checks.MCP{URL: "http://user:pw-SECRET@tools.example.com:3901/mcp?token=t0k3n", Tool: "order-status"}},
		}},
		{Name: "search", Steps: []checks.Step{{Request: checks.Request{URL: "http://127.0.0.1:1/search"}}}, Interval: time.Minute},
	}
	srv = httptest.NewServer(web.NewServer(web.Deps{
		Logger: slog.New(slog.DiscardHandler), Healthy: func(context.Context) error { return nil }, Metrics: http.NotFoundHandler(),
		Store: store, Probes: func() []*checks.Probe { return probes }, Now: func() time.Time { return now },
	}))
	t.Cleanup(srv.Close)
	return srv, at
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestAPIShowsSteps: the API's envelopes of a steps probe carry its
// deciding step and its steps; a single probe's carry neither; the drift
// API names the step whose answer drifted.
func TestAPIShowsSteps(t *testing.T) {
	srv, _ := stepsServer(t)
	code, body := getBody(t, srv.URL+"/api/v1/probes/refund_order_31/results")
	var res struct {
		Results []results.Envelope `json:"results"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil || len(res.Results) != 1 {
		t.Fatalf("results of refund_order_31: %d %s", code, body)
	}
	env := res.Results[0]
	if env.Kind != results.ProbeSteps || env.Step != "verify" || len(env.Steps) != 3 {
		t.Fatalf("envelope: kind %s, step %q, %d steps; want steps, verify, 3", env.Kind, env.Step, len(env.Steps))
	}
	if st := env.Steps[1]; st.Name != "verify" || st.Code != results.CodeClaimMismatch || st.Polls != 3 || st.DurationMS != 2027 {
		t.Errorf("verify step in the envelope: %+v", st)
	}
	if !env.Steps[2].Always {
		t.Errorf("cleanup step in the envelope is not always: %+v", env.Steps[2])
	}

	code, body = getBody(t, srv.URL+"/api/v1/probes")
	var ps struct {
		Probes []struct {
			Name   string            `json:"name"`
			Kind   string            `json:"kind"`
			Latest map[string]any    `json:"latest"`
			Labels map[string]string `json:"labels"`
		} `json:"probes"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &ps) != nil || len(ps.Probes) != 2 {
		t.Fatalf("probes: %d %s", code, body)
	}
	steps, single := ps.Probes[0], ps.Probes[1]
	if steps.Kind != "steps" || steps.Latest["step"] != "verify" || steps.Latest["steps"] == nil {
		t.Errorf("steps probe's summary: %+v", steps)
	}
	if _, ok := single.Latest["step"]; ok {
		t.Errorf("single probe's latest has a step: %v", single.Latest)
	}
	if _, ok := single.Latest["steps"]; ok {
		t.Errorf("single probe's latest has steps: %v", single.Latest)
	}

	_, body = getBody(t, srv.URL+"/api/v1/drifts?probe=refund_order_31")
	if !strings.Contains(body, `"step":"verify"`) {
		t.Errorf("drifts API does not name the step:\n%s", body)
	}
}

// TestStatusPagesShowSteps: a steps probe's page lists its steps instead
// of a request, never a URL's query or credentials, and its runs their
// deciding step, linked to the run's page; the run page lists each step
// with its attempts; a single probe's run page lists its attempts; an
// unknown run is the not-found page.
func TestStatusPagesShowSteps(t *testing.T) {
	srv, _ := stepsServer(t)
	code, body := getBody(t, srv.URL+"/probes/refund_order_31")
	if code != http.StatusOK {
		t.Fatalf("probe page: %d\n%s", code, body)
	}
	for _, want := range []string{
		"<strong>refund</strong>", "<code>POST 127.0.0.1:8099/refunds</code>",
		"<strong>verify</strong> <span class=\"caption\">http, verification</span>",
		"<code>DELETE 127.0.0.1:8099/refunds/{{refund_id}}</code>",
		"<code>tool order-status at http://tools.example.com:3901/mcp</code>",
		`<th scope="col">Step</th>`, `<td>verify</td>`, `href="/runs/op-steps"`,
		"step <code>verify</code>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("probe page lacks %q", want)
		}
	}
	for _, secret := range []string{"s3cr3t-in-query", "pw-SECRET", "t0k3n"} {
		if strings.Contains(body, secret) {
			t.Errorf("probe page shows %q", secret)
		}
	}
	if strings.Contains(body, "<dt>Request</dt>") {
		t.Errorf("a steps probe's page shows a request")
	}

	code, body = getBody(t, srv.URL+"/runs/op-steps")
	if code != http.StatusOK {
		t.Fatalf("run page: %d\n%s", code, body)
	}
	for _, want := range []string{
		"decided by step <code>verify</code>", `data-step="refund"`, `data-step="verify"`, `data-step="cleanup"`,
		"This step decided the run.", "3 poll(s)", "never changes the run's outcome",
		"<code>claim_mismatch</code>", "<td>204</td>", `href="/probes/refund_order_31"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q\n%s", want, body)
		}
	}
	// Each step's table holds its own attempts: verify's three, cleanup's one.
	verify := body[strings.Index(body, `data-step="verify"`):strings.Index(body, `data-step="cleanup"`)]
	if n := strings.Count(verify, "<tr><td>"); n != 3 {
		t.Errorf("verify's section has %d attempt rows, want 3:\n%s", n, verify)
	}

	code, body = getBody(t, srv.URL+"/runs/op-single")
	if code != http.StatusOK || !strings.Contains(body, "<h2>Attempts</h2>") || strings.Contains(body, "data-step") {
		t.Errorf("single probe's run page: %d\n%s", code, body)
	}
	code, body = getBody(t, srv.URL+"/runs/no-such-op")
	if code != http.StatusNotFound || !strings.Contains(body, "not_found") || !strings.Contains(body, "no-such-op") {
		t.Errorf("unknown run: %d\n%s", code, body)
	}
}
