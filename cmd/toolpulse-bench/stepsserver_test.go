package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
)

// TestStepsProvider drives a steps probe's flow against the provider in
// process: create opens a job, confirm and verify take only the id of the
// probe's open job (an id not captured from the last create is refused),
// each answer is about an HTTP answer's size, the mix decides verify alone,
// and a run counts one arrival.
func TestStepsProvider(t *testing.T) {
	p, err := newProvider(providerSpec{Probes: 2, Items: 20, ResponseBytes: 2048, Mix: benchMix{Unavailable: 1}, Capacity: 4,
		Kind: kindSteps, Special: []specialProbe{{Probe: 1, Kind: specialAlert, At: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	type answer struct {
		status int
		job    struct{ ID, State string }
		size   int
		err    error
	}
	call := func(method, path string) answer {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(`{"query":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			return answer{err: err}
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		a := answer{status: resp.StatusCode, size: len(b), err: err}
		if resp.StatusCode == http.StatusOK {
			var body struct {
				Job struct{ ID, State string }
			}
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, b)
			}
			a.job = body.Job
		}
		return a
	}
	httpSize := len(p.answers[answerPass].body)

	// Probe 1, an alert probe before its flip, passes: a whole run.
	created := call(http.MethodPost, "/p/1/jobs")
	if created.status != http.StatusOK || created.job.ID == "" || created.job.State != "created" {
		t.Fatalf("create: %+v", created)
	}
	job := "/p/1/jobs/" + created.job.ID
	if a := call(http.MethodGet, job); a.status != http.StatusOK || a.job.State != "created" {
		t.Errorf("verify before confirm: %+v, want the job still created", a)
	}
	for _, wrong := range []string{"/p/1/jobs/job-1-2", "/p/1/jobs/job-0-1", "/p/1/jobs/x"} {
		if a := call(http.MethodPost, wrong+"/confirm"); a.status != http.StatusNotFound {
			t.Errorf("confirm of %s, not the open job: %d, want 404", wrong, a.status)
		}
		if a := call(http.MethodGet, wrong); a.status != http.StatusNotFound {
			t.Errorf("verify of %s, not the open job: %d, want 404", wrong, a.status)
		}
	}
	confirmed := call(http.MethodPost, job+"/confirm")
	verified := call(http.MethodGet, job)
	for name, a := range map[string]answer{"create": created, "confirm": confirmed, "verify": verified} {
		if a.status != http.StatusOK || a.job.ID != created.job.ID {
			t.Errorf("%s: %+v, want 200 on job %s", name, a, created.job.ID)
		}
		if a.size < httpSize || a.size > httpSize+64 {
			t.Errorf("%s: %d bytes, want about an HTTP answer's %d", name, a.size, httpSize)
		}
	}
	if confirmed.job.State != "confirmed" || verified.job.State != "confirmed" {
		t.Errorf("confirm %q, verify %q: want the job confirmed", confirmed.job.State, verified.job.State)
	}
	// The next run's create closes the job: its id is stale.
	next := call(http.MethodPost, "/p/1/jobs")
	if next.job.ID == created.job.ID {
		t.Fatalf("two runs got job %s", next.job.ID)
	}
	if a := call(http.MethodPost, job+"/confirm"); a.status != http.StatusNotFound {
		t.Errorf("confirm of the last run's job: %d, want 404", a.status)
	}
	if a := call(http.MethodPut, job); a.status != http.StatusMethodNotAllowed {
		t.Errorf("PUT of a job: %d, want 405", a.status)
	}

	// Probe 0 is all unavailable, at verify only.
	for range 6 {
		c := call(http.MethodPost, "/p/0/jobs")
		if c.status != http.StatusOK {
			t.Fatalf("probe 0 create: %+v, want it to pass whatever the mix", c)
		}
		if a := call(http.MethodPost, "/p/0/jobs/"+c.job.ID+"/confirm"); a.status != http.StatusOK {
			t.Errorf("probe 0 confirm: %+v, want it to pass whatever the mix", a)
		}
		if a := call(http.MethodGet, "/p/0/jobs/"+c.job.ID); a.err == nil && a.status != http.StatusServiceUnavailable {
			t.Errorf("probe 0 verify: %+v, want a 503 or a closed connection", a)
		}
	}

	rep := p.report()
	if got := []int{len(rep.Arrivals[0]), len(rep.Arrivals[1])}; got[0] != 6 || got[1] != 2 {
		t.Errorf("arrivals per probe %v, want [6 2]: one per create", got)
	}
	// net/http's client sends a GET again on a kept-alive connection that
	// closed without an answer: at least six unavailable answers.
	if rep.Served["pass"] != 2 || rep.Served["status_503"]+rep.Served["connection_closed"] < 6 {
		t.Errorf("served %v, want verify's answers alone: two passes and six or more unavailable", rep.Served)
	}
}

// TestWriteConfigSteps loads a steps config with toolpulse's own loader:
// three steps judged by the consumer, the id captured at create and sent
// in the URLs of the two after it, and the POSTs retried as --max-attempts
// says since they carry an Idempotency-Key.
func TestWriteConfigSteps(t *testing.T) {
	dir := t.TempDir()
	o, err := parseRunFlags([]string{"--kind", "steps", "--probes", "2", "--max-attempts", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{opts: o.loadOptions, dir: dir, cfgPath: dir + "/checks.yaml", dbPath: dir + "/t.db",
		listen: "127.0.0.1:1", names: benchProbeNames(2),
		provider: &providerProc{addr: "127.0.0.1:2"}, slackURL: "http://127.0.0.1:3/services/bench"}
	if err := s.prepareConsumer(); err != nil {
		t.Fatal(err)
	}
	if err := s.writeConfig([]int{1}); err != nil {
		t.Fatal(err)
	}
	cfg, err := checks.Load(s.cfgPath, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	steps := cfg.Probes[0].Steps
	if len(steps) != exchangesPerRun(kindSteps, "") {
		t.Fatalf("%d steps, want %d", len(steps), exchangesPerRun(kindSteps, ""))
	}
	want := []struct{ name, method, url string }{
		{stepCreate, "POST", "http://127.0.0.1:2/p/1/jobs"},
		{stepConfirm, "POST", "http://127.0.0.1:2/p/1/jobs/{{job_id}}/confirm"},
		{stepVerify, "GET", "http://127.0.0.1:2/p/1/jobs/{{job_id}}"},
	}
	for i, st := range steps {
		w := want[i]
		if st.Name != w.name || st.Request.Method != w.method || st.Request.URL != w.url {
			t.Errorf("step %d: %s %s %s, want %s %s %s", i, st.Name, st.Request.Method, st.Request.URL, w.name, w.method, w.url)
		}
		if st.Consumer == nil || st.Consumer.Name != builtinConsumerName || st.Retries.MaxAttempts != 2 {
			t.Errorf("step %s: consumer %v, max_attempts %d", st.Name, st.Consumer, st.Retries.MaxAttempts)
		}
	}
	if len(steps[0].Capture) != 1 || steps[2].Until == nil {
		t.Errorf("create captures %v, verify until %v", steps[0].Capture, steps[2].Until)
	}
}
