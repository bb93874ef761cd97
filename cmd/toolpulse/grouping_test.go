package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/webhook"
)

// groupHook is a webhook receiver on loopback that keeps every grouped
// body.
type groupHook struct {
	mu     sync.Mutex
	bodies []webhook.GroupPayload
}

func (h *groupHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var p webhook.GroupPayload
	if err := json.Unmarshal(b, &p); err != nil || len(p.Alerts) == 0 {
		http.Error(w, "not a group body", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.bodies = append(h.bodies, p)
	h.mu.Unlock()
}

func (h *groupHook) payloads() []webhook.GroupPayload {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]webhook.GroupPayload(nil), h.bodies...)
}

// switchable serves h, or 503 while down.
type switchable struct {
	h    http.Handler
	down atomic.Bool
}

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.down.Load() {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
		return
	}
	s.h.ServeHTTP(w, r)
}

// startStack runs the stack of the config at path until the returned stop
// is called (or the test ends).
func startStack(t *testing.T, path string) (s *stack, stop func()) {
	t.Helper()
	cfg, err := checks.Load(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s, err = newStack(context.Background(), cfg, slog.New(slog.DiscardHandler), stackOptions{grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx, 0) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("daemon: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return s, stop
}

// TestGroupedMessages runs the real stack on a SQLite file with
// notify.group_by: [provider]: twenty probes of one provider failing at
// once make one Slack message listing the twenty, sent group_wait after
// the first failure even though the daemon restarted in between; five of
// them resolving make one update; the three probes of another team's
// route make one webhook call listing them.
func TestGroupedMessages(t *testing.T) {
	mostly, few, payments := &switchable{h: provider.New().Handler()}, &switchable{h: provider.New().Handler()}, &switchable{h: provider.New().Handler()}
	mostlyURL, fewURL, paymentsURL := e2e.Serve(t, mostly), e2e.Serve(t, few), e2e.Serve(t, payments)
	slack, slackURL := e2e.Slack(t)
	hook := &groupHook{}
	hookURL := e2e.Serve(t, hook)

	config := harness.Fast(mostlyURL, slackURL)
	for i := range 20 {
		url := mostlyURL
		if i >= 15 {
			url = fewURL
		}
		p := harness.SearchProbe(fmt.Sprintf("search_%02d", i), url+"/search")
		p.Labels = map[string]string{"provider": "search"}
		config.Probes = append(config.Probes, p)
	}
	for i := range 3 {
		p := harness.SearchProbe(fmt.Sprintf("pay_%d", i), paymentsURL+"/search")
		p.Labels = map[string]string{"provider": "payments", "team": "pay"}
		config.Probes = append(config.Probes, p)
	}
	config.MaxConcurrency = 32
	config.Notify.Routes = []harness.Route{
		{Match: map[string]string{"team": "pay"}, WebhookURL: hookURL + "/toolpulse", WebhookSecret: "hook-secret"},
	}
	const wait, interval = 3 * time.Second, 5 * time.Second
	yaml := strings.Replace(config.YAML(), "notify:\n",
		fmt.Sprintf("notify:\n  group_by: [provider]\n  group_wait: %s\n  group_interval: %s\n", wait, interval), 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "checks.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}

	s, stop := startStack(t, path)
	time.Sleep(time.Second) // a few passing runs
	mostly.down.Store(true)
	few.down.Store(true)
	payments.down.Store(true)
	firingRows := func(st interface {
		Alerts(context.Context) ([]results.Alert, error)
	}) []results.Alert {
		all, err := st.Alerts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []results.Alert
		for _, a := range all {
			if a.Kind == results.AlertFiring && a.Receiver == "default/slack" {
				out = append(out, a)
			}
		}
		return out
	}
	eventually(t, "the first firing alert recorded", func() bool { return len(firingRows(sqliteOf(t, s))) > 0 })
	first := firingRows(sqliteOf(t, s))[0].CreatedAt
	time.Sleep(wait / 3)
	stop() // a restart in the middle of group_wait
	if n := len(slack.Messages()); n != 0 {
		t.Fatalf("%d Slack posts before group_wait, want none", n)
	}
	restarted := time.Now()
	s, _ = startStack(t, path)

	header := "20 probes of provider=search failing"
	eventually(t, "the grouped message", func() bool { return slack.Count(header) > 0 })
	time.Sleep(time.Second) // time for a second message, if one were coming
	msgs := slack.Messages()
	if len(msgs) != 1 || slack.Count(header) != 1 {
		t.Fatalf("Slack got %d posts, want exactly one %q: %v", len(msgs), header, msgs)
	}
	for i := range 20 {
		if !strings.Contains(string(msgs[0].Blocks), fmt.Sprintf("`search_%02d` unavailable", i)) {
			t.Errorf("the grouped message does not list search_%02d as unavailable", i)
		}
	}
	if at := msgs[0].At; at.Before(first.Add(wait)) || !at.Before(restarted.Add(wait)) {
		t.Errorf("the message came %s after the first failure and %s after the restart; want group_wait (%s) after the first failure, not after the restart",
			at.Sub(first), at.Sub(restarted), wait)
	}
	rows := firingRows(sqliteOf(t, s))
	if len(rows) != 20 {
		t.Fatalf("%d firing rows for default/slack, want one per probe", len(rows))
	}
	for _, a := range rows {
		if a.State != results.DeliveryDelivered || a.GroupKey != `default/slack{provider="search"}` {
			t.Errorf("%s's firing alert: %s, group %q; want delivered with the group", a.Probe, a.State, a.GroupKey)
		}
	}

	eventually(t, "the payments webhook call", func() bool { return len(hook.payloads()) > 0 })
	calls := hook.payloads()
	if len(calls) != 1 || len(calls[0].Alerts) != 3 || calls[0].Group.Labels["provider"] != "payments" || calls[0].Firing != 3 {
		t.Fatalf("the webhook got %d calls, the first %+v; want one listing the 3 payments probes", len(calls), calls[0])
	}

	few.down.Store(false)
	eventually(t, "the update for the resolved probes", func() bool { return len(slack.Messages()) >= 2 })
	time.Sleep(time.Second)
	msgs = slack.Messages()
	if len(msgs) != 2 || !strings.Contains(msgs[1].Text, "5 probes of provider=search resolved") {
		t.Fatalf("Slack got %d posts, the last %q; want one update: 5 probes resolved", len(msgs), msgs[len(msgs)-1].Text)
	}
	if gap := msgs[1].At.Sub(msgs[0].At); gap < interval {
		t.Errorf("the update came %s after the first message, want at least group_interval (%s)", gap, interval)
	}
	for i := 15; i < 20; i++ {
		if !strings.Contains(string(msgs[1].Blocks), fmt.Sprintf("~`search_%02d`~", i)) {
			t.Errorf("the update does not list search_%02d as resolved", i)
		}
	}
	if len(hook.payloads()) != 1 {
		t.Errorf("the webhook got %d calls, want still 1", len(hook.payloads()))
	}
}
