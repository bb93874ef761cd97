package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// TestDriftWithResolved: a run that passes on a new shape and so resolves
// the probe's failure makes two alerts in a fixed order, the resolved one
// first (the incident on-call works is over), then the drift, marked as
// coming with that run so that it does not read as a new problem. What the
// outbox will deliver, read back from the store, says the same.
func TestDriftWithResolved(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(5)
	if _, alerts := f.run("", unavailable); fmt.Sprint(alertKinds(alerts)) != "[firing]" {
		t.Fatalf("the failing run alerted %v, want [firing]", alertKinds(alerts))
	}
	// The provider is back, answering in a new shape the consumer copes with.
	_, alerts := f.run(`{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":null,"took_ms":12}`, "")
	if got := fmt.Sprint(alertKinds(alerts)); got != "[resolved shape_drift]" {
		t.Fatalf("alerts of the resolving, drifting run: %s, want [resolved shape_drift]", got)
	}
	if alerts[0].Resolving || !alerts[1].Resolving {
		t.Errorf("resolving marks: resolved %v, shape_drift %v; want false, true", alerts[0].Resolving, alerts[1].Resolving)
	}
	stored, err := f.store.Alerts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	last := stored[len(stored)-2:]
	if last[0].Kind != results.AlertResolved || last[1].Kind != results.AlertDrift || !last[1].Resolving || last[0].ID > last[1].ID {
		t.Errorf("stored alerts end with %s (resolving %v) then %s (resolving %v), want resolved then a resolving shape_drift",
			last[0].Kind, last[0].Resolving, last[1].Kind, last[1].Resolving)
	}
}

// TestDriftWithFiringIsNotResolving: a drift that comes with the start of
// a failure keeps its order (the cause, then the impact) and is not
// marked resolving.
func TestDriftWithFiringIsNotResolving(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(5)
	_, alerts := f.run(seedWrappedBody, seedWrappedCode)
	if got := fmt.Sprint(alertKinds(alerts)); got != "[shape_drift firing]" {
		t.Fatalf("alerts: %s, want [shape_drift firing]", got)
	}
	for _, a := range alerts {
		if a.Resolving {
			t.Errorf("%s alert of a failing run is marked resolving", a.Kind)
		}
	}
}

// TestAlertsNameWhatWasCalled: every alert names the call its run made,
// from the config, without the URL's query or userinfo and with known
// secrets scrubbed, the deciding step's call for a steps probe; and a
// failed run's alert carries the start of its body, read back from the
// store as the outbox will deliver it.
func TestAlertsNameWhatWasCalled(t *testing.T) {
	const secret = "tenant-S3CRET"
	cfg := &checks.Config{Probes: []*checks.Probe{
		{
			Name: "search",
			Steps: []checks.Step{{
				Request: checks.Request{Method: "POST",
					URL: "https://user:pw@search.example.com/v1/" + secret + "/search?api_key=K3Y&q=x"},
			}},
		},
		{Name: "weather", Steps: []checks.Step{{MCP: &checks.MCP{URL: "http://127.0.0.1:3901/mcp?token=K3Y", Tool: "get-weather"}}}},
		{Name: "refund", Steps: []checks.Step{
			{Name: "token", Request: checks.Request{Method: "POST", URL: "http://auth.example.com/token"}},
			{Name: "verify", Request: checks.Request{URL: "http://127.0.0.1:8099/orders/31"}},
		}},
	}}
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	rc := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Clock: clock, Deliver: true,
		Redact: results.NewRedactor(secret).Redact})
	cfg.Notify = notifyOn(1, time.Hour, true)
	rc.SetConfig(cfg, true)

	tests := []struct {
		probe, step string
		want        string
	}{
		{"search", "", "POST https://search.example.com/v1/<redacted>/search"},
		{"weather", "", "tool get-weather at http://127.0.0.1:3901/mcp"},
		{"refund", "verify", "step verify: GET http://127.0.0.1:8099/orders/31"},
	}
	for _, tt := range tests {
		t.Run(tt.probe, func(t *testing.T) {
			clock.Advance(time.Minute)
			r := pipelineRun(t, tt.probe, clock.Now(), "", serverError)
			r.HTTPStatus, r.Step = 503, tt.step
			if tt.step != "" {
				r.Kind = results.ProbeSteps
			}
			r.ResponseSample = "index rebuilding, retry in 120s\n"
			alerts := process(t, rc, r)
			if len(alerts) != 1 || alerts[0].Kind != results.AlertFiring {
				t.Fatalf("alerts %v, want one firing", alertKinds(alerts))
			}
			stored, err := store.Alerts(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			a := stored[len(stored)-1]
			if a.Target != tt.want {
				t.Errorf("target = %q, want %q", a.Target, tt.want)
			}
			if a.ResponseExcerpt != "index rebuilding, retry in 120s" {
				t.Errorf("body excerpt = %q, want the start of the 503's body", a.ResponseExcerpt)
			}
			for _, leak := range []string{secret, "K3Y", "user:pw", "api_key"} {
				if strings.Contains(a.Target, leak) {
					t.Errorf("target %q shows %q", a.Target, leak)
				}
			}
		})
	}
}
