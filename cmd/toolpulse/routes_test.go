package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/webhook"
)

// hookRecorder is a webhook receiver on loopback that keeps every body.
type hookRecorder struct {
	mu     sync.Mutex
	bodies []webhook.Payload
}

func (h *hookRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var p webhook.Payload
	if err := json.Unmarshal(b, &p); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.bodies = append(h.bodies, p)
	h.mu.Unlock()
}

func (h *hookRecorder) payloads() []webhook.Payload {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]webhook.Payload(nil), h.bodies...)
}

// TestRoutesEachTeamItsOwnAlerts runs the real stack with two routes and
// the default: team search's probe alerts its own Slack from the first
// failure, team payments' probe alerts a webhook from the third, and a
// probe without labels alerts the default Slack from the second. No
// receiver sees another team's alerts, and each message carries the
// probe's labels and its link.
func TestRoutesEachTeamItsOwnAlerts(t *testing.T) {
	p := provider.New()
	prov := e2e.Serve(t, p.Handler())
	searchSlack, searchURL := e2e.Slack(t)
	defaultSlack, defaultURL := e2e.Slack(t)
	hook := &hookRecorder{}
	hookURL := e2e.Serve(t, hook)

	config := harness.Fast(prov, defaultURL, "search", "pay", "plain")
	config.Server.PublicURL = "https://toolpulse.example.com"
	config.Notify.FailureThreshold = 2
	config.Probes[0].Labels = map[string]string{"team": "search"}
	config.Probes[1].Labels = map[string]string{"team": "payments"}
	config.Notify.Routes = []harness.Route{
		{Match: map[string]string{"team": "search"}, SlackWebhookURL: searchURL, FailureThreshold: 1},
		{Match: map[string]string{"team": "payments"}, WebhookURL: hookURL + "/toolpulse", WebhookSecret: "hook-secret",
			FailureThreshold: 3},
	}
	s := runStack(t, "", config)
	waitUntil := func(what string, cond func() bool) { t.Helper(); eventually(t, what, cond) }
	hookFiring := func() bool {
		for _, b := range hook.payloads() {
			if b.Kind == results.AlertFiring {
				return true
			}
		}
		return false
	}

	time.Sleep(time.Second) // a baseline of a few runs at 200ms
	p.SetDrifted(true)
	waitUntil("search's firing alert in its Slack", func() bool { return searchSlack.Count(":red_circle: search contract_error") == 1 })
	waitUntil("plain's firing alert in the default Slack", func() bool { return defaultSlack.Count(":red_circle: plain contract_error") == 1 })
	waitUntil("pay's firing alert at the webhook", hookFiring)

	for name, sl := range map[string]*harness.Slack{"search": searchSlack, "plain": defaultSlack} {
		for _, m := range sl.Messages() {
			if m.Probe != name {
				t.Errorf("the Slack of %s got a message about %s: %s", name, m.Probe, m.Text)
			}
			if link := "https://toolpulse.example.com/probes/" + name; !strings.Contains(string(m.Blocks), link) {
				t.Errorf("a message about %s lacks the link %s", name, link)
			}
		}
	}
	for _, m := range searchSlack.Messages() {
		if !strings.Contains(string(m.Blocks), "labels `team=search`") {
			t.Errorf("a message about search lacks its labels: %s", m.Blocks)
		}
	}
	for _, b := range hook.payloads() {
		if b.Probe != "pay" || b.Labels["team"] != "payments" || len(b.Labels) != 1 {
			t.Errorf("the webhook got a %s alert about %s with labels %v, want pay's only, labels {team: payments}", b.Kind, b.Probe, b.Labels)
		}
		if b.Link == "" {
			t.Errorf("the webhook's %s alert has no link although server.public_url is set", b.Kind)
		}
	}

	// Each probe fired after its own route's threshold, to its own receiver.
	// The daemon keeps running: stop closes the store.
	alerts, err := sqliteOf(t, s).Alerts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		probe, receiver string
		threshold       int
	}{
		{"search", "routes[0]/slack", 1},
		{"pay", "routes[1]/webhook", 3},
		{"plain", "default/slack", 2},
	} {
		runs, err := sqliteOf(t, s).RecordedRuns(context.Background(), tt.probe)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range alerts {
			if a.Probe != tt.probe {
				continue
			}
			if a.Receiver != tt.receiver {
				t.Errorf("%s's %s alert is for %q, want %q", tt.probe, a.Kind, a.Receiver, tt.receiver)
			}
			if a.Kind != results.AlertFiring {
				continue
			}
			streak := 0
			for _, r := range runs {
				if r.Outcome == results.Pass {
					streak = 0
				} else {
					streak++
				}
				if r.OperationID == a.OperationID {
					break
				}
			}
			if streak != tt.threshold {
				t.Errorf("%s fired on failure %d of its streak, want %d (its route's failure_threshold)", tt.probe, streak, tt.threshold)
			}
		}
	}
}

// TestReloadRemovesRouteWithPendingAlerts: a reload (what SIGHUP does)
// removes the
// route of a firing probe while its webhook is down and its firing alert
// is being retried. The alert still pending for the removed receiver
// fails for good, saying why; the probe's new route (the default Slack)
// is told it is failing at its next failed run; and the resolved alert
// goes to the default Slack only, not to the receiver that is gone.
func TestReloadRemovesRouteWithPendingAlerts(t *testing.T) {
	p := provider.New()
	prov := e2e.Serve(t, p.Handler())
	slack, slackURL := e2e.Slack(t)
	var hookCalls atomic.Int32
	hookURL := e2e.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookCalls.Add(1)
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))

	dir := t.TempDir()
	config := harness.Fast(prov, slackURL, "search")
	config.Probes[0].Labels = map[string]string{"team": "search"}
	config.Notify.Routes = []harness.Route{{Match: map[string]string{"team": "search"},
		WebhookURL: hookURL + "/toolpulse", WebhookSecret: "hook-secret"}}
	s := runStack(t, dir, config)
	ctx := context.Background()
	alertsFor := func(receiver string) []results.Alert {
		all, err := sqliteOf(t, s).Alerts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []results.Alert
		for _, a := range all {
			if a.Receiver == receiver {
				out = append(out, a)
			}
		}
		return out
	}

	time.Sleep(time.Second) // a baseline of a few runs at 200ms
	p.SetDrifted(true)
	eventually(t, "the webhook refusing the firing alert", func() bool { return hookCalls.Load() >= 1 })
	before := alertsFor("routes[0]/webhook") // the firing alert, and the drift's
	if len(before) == 0 || slices.ContainsFunc(before, func(a results.Alert) bool { return a.State != results.DeliveryPending }) {
		t.Fatalf("before the reload, the webhook's alerts are %+v; want them pending", before)
	}

	config.Notify.Routes = nil
	if err := s.reload(loadConfig(t, dir, config)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the removed receiver's alerts failing for good", func() bool {
		return !slices.ContainsFunc(alertsFor("routes[0]/webhook"), func(a results.Alert) bool { return a.State != results.DeliveryFailed })
	})
	for _, a := range alertsFor("routes[0]/webhook") {
		if !strings.Contains(a.LastError, "not configured any more") {
			t.Errorf("the removed receiver's %s alert failed with %q; want it to say the receiver is not configured any more", a.Kind, a.LastError)
		}
	}
	eventually(t, "the default Slack told search is failing", func() bool { return slack.Count(":red_circle: search contract_error") == 1 })

	p.SetDrifted(false)
	eventually(t, "the resolved message in the default Slack", func() bool { return slack.Count(":large_green_circle: search resolved") == 1 })
	if after := alertsFor("routes[0]/webhook"); len(after) != len(before) {
		t.Errorf("the removed receiver has %d alerts after the reload, want the %d it had", len(after), len(before))
	}
	for _, m := range slack.Messages() {
		if m.Probe != "search" {
			t.Errorf("the default Slack got a message about %s", m.Probe)
		}
	}
}
