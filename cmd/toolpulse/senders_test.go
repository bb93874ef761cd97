package main

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/alertmanager"
	"github.com/toolpulse/toolpulse/results/slack"
	"github.com/toolpulse/toolpulse/results/sqlite"
	"github.com/toolpulse/toolpulse/results/webhook"
)

func sendersConfig(amURL string, routes int) *checks.Config {
	cfg := &checks.Config{Notify: checks.Notify{Slack: checks.Slack{WebhookURL: "http://127.0.0.1:9/default"}}}
	all := []checks.Route{
		{Name: "routes[0]", Match: map[string]string{"team": "research"}, Alertmanager: checks.Alertmanager{URL: checks.Secret(amURL)}},
		{Name: "routes[1]", Match: map[string]string{"team": "payments"},
			Webhook: checks.Webhook{URL: "http://127.0.0.1:9/hook", Secret: "s"},
			Slack:   checks.Slack{WebhookURL: "http://127.0.0.1:9/payments"}},
	}
	cfg.Notify.Routes = all[:routes]
	return cfg
}

// TestSendersPerReceiver: one receiver of the right kind per receiver key,
// and a reload keeps every receiver it leaves as it was (the Alertmanager
// receiver remembers what it re-posts), builds the changed ones again and
// drops the removed ones.
func TestSendersPerReceiver(t *testing.T) {
	build := newSenders(nil, nil)
	first, err := build(sendersConfig("http://127.0.0.1:9093", 2))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(first)), []string{"default/slack", "routes[0]/alertmanager", "routes[1]/slack", "routes[1]/webhook"}; !slices.Equal(got, want) {
		t.Fatalf("receivers %v, want %v", got, want)
	}
	_, okAM := first["routes[0]/alertmanager"].(*alertmanager.Notifier)
	_, okHook := first["routes[1]/webhook"].(*webhook.Notifier)
	_, okSlack := first["routes[1]/slack"].(*slack.Notifier)
	if !okAM || !okHook || !okSlack {
		t.Errorf("receiver kinds: alertmanager %v, webhook %v, slack %v; want each of its kind", okAM, okHook, okSlack)
	}

	same, err := build(sendersConfig("http://127.0.0.1:9093", 2))
	if err != nil {
		t.Fatal(err)
	}
	for key, s := range first {
		if same[key] != s {
			t.Errorf("an unchanged reload rebuilt %s", key)
		}
	}
	moved, err := build(sendersConfig("http://127.0.0.1:9094", 2))
	if err != nil {
		t.Fatal(err)
	}
	if moved["routes[0]/alertmanager"] == first["routes[0]/alertmanager"] {
		t.Errorf("a new Alertmanager URL kept the old receiver")
	}
	if moved["default/slack"] != first["default/slack"] {
		t.Errorf("the unchanged default Slack was rebuilt")
	}
	// Removing a route removes its secrets too: every receiver's redactor
	// changes, so every receiver is new.
	moved, err = build(sendersConfig("http://127.0.0.1:9094", 1))
	if err != nil {
		t.Fatal(err)
	}
	if moved["default/slack"] == first["default/slack"] {
		t.Errorf("a receiver kept its redactor after the config's secrets changed")
	}
	if _, ok := moved["routes[1]/webhook"]; ok || len(moved) != 2 {
		t.Errorf("after removing a route: receivers %v, want default/slack and routes[0]/alertmanager", slices.Sorted(maps.Keys(moved)))
	}
}

// TestSendersRestoreAlertmanager: a new Alertmanager receiver starts from
// what the store says it last posted for each failure still firing, so a
// restart keeps those alerts active: the restored alert is ended by a
// resolve, which a receiver that forgot it would have nothing to end with.
func TestSendersRestoreAlertmanager(t *testing.T) {
	ctx := t.Context()
	var (
		mu    sync.Mutex
		posts []string
	)
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, string(body))
		mu.Unlock()
	}))
	t.Cleanup(am.Close)
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })

	const key = "routes[0]/alertmanager"
	started := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	r := results.Result{OperationID: "op-1", Probe: "research", StartedAt: started, Duration: time.Second,
		Outcome: results.Unavailable, Error: results.NewError(results.CodeTimeout, "timed out"),
		Attempts: []results.Attempt{{Number: 1, StartedAt: started}}}
	a := results.NewAlert(results.AlertFiring, &r, started)
	a.FailingSince, a.Receiver, a.State = started, key, results.DeliveryPending
	rec := &results.RunRecord{Result: r, Alerts: []results.Alert{a},
		AlertState: &results.AlertState{Probe: "research", ConsecutiveFailures: 1, FailingSince: started, Firing: true,
			LastNotifiedAt: started, Receivers: []string{key}}}
	if err := store.RecordRun(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := store.MarkAlertDelivered(ctx, rec.Alerts[0].ID, started); err != nil {
		t.Fatal(err)
	}

	end := results.NewAlert(results.AlertResolved, &results.Result{Probe: "research", Outcome: results.Pass}, started.Add(time.Hour))
	for _, tt := range []struct {
		name   string
		firing firingAlerts
		posts  int
	}{
		{"without the store the receiver has nothing to end", nil, 0},
		{"restored from the store", store.FiringAlerts, 1},
	} {
		mu.Lock()
		posts = nil
		mu.Unlock()
		senders, err := newSenders(nil, tt.firing)(sendersConfig(am.URL, 1))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := senders[key].Send(ctx, end); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		mu.Lock()
		got := slices.Clone(posts)
		mu.Unlock()
		if len(got) != tt.posts || (tt.posts == 1 && !strings.Contains(got[0], `"probe":"research"`)) {
			t.Errorf("%s: posts %q, want %d ending research", tt.name, got, tt.posts)
		}
	}
}
