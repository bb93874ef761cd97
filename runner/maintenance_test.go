package runner

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// windowAt is a daily maintenance window of probe starting at start's
// minute (UTC) and lasting d.
func windowAt(probe string, start time.Time, d time.Duration) results.MaintenanceWindow {
	start = start.UTC()
	return results.MaintenanceWindow{Name: "maintenance[0]", Matchers: results.Matchers{Probes: []string{probe}},
		Hour: start.Hour(), Minute: start.Minute(), Duration: d, Location: time.UTC}
}

// TestDaemonMaintenance: on the fake clock, a probe failing inside its
// maintenance window still runs and is recorded, but sends nothing (its
// alert is recorded skipped, "maintenance"); it fires once the window has
// ended, still failing; and its resolve, inside the next window, is
// delivered: maintenance mutes trouble, never its end.
func TestDaemonMaintenance(t *testing.T) {
	schedCheckLeaks(t)
	var passing atomic.Bool
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !passing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":"down"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, bodyOriginalList)
	}))
	t.Cleanup(provider.Close)
	cfg := schedConfig(4, schedProbe(t, "search", provider.URL, time.Minute))
	cfg.Notify.On = []string{"unavailable", "contract_error"}
	sender := &schedSender{}
	h := schedNew(t, cfg, func(o *Deps) {
		o.Senders = func(*checks.Config) (Senders, error) { return Senders{"default/slack": sender}, nil }
		o.Delivery = delivererOptions{PollInterval: time.Hour}
	})
	// Windows start on a minute: put the clock on one, so that the runs
	// (at t0 and every minute after) fall where the windows say.
	now := h.clock.Now()
	h.clock.Advance(now.Truncate(time.Minute).Add(time.Minute).Sub(now))
	t0 := h.clock.Now()
	// The first window covers the runs at t0, t0+1m and t0+2m; the second
	// the run at t0+5m.
	cfg.Maintenance = []results.MaintenanceWindow{
		windowAt("search", t0, 2*time.Minute+30*time.Second),
		windowAt("search", t0.Add(5*time.Minute), 2*time.Minute),
	}
	if err := h.d.Reload(cfg); err != nil {
		h.Fatal(err)
	}
	h.run()

	h.tick(1, minStartLead+schedSkew)
	h.waitRuns("search", 1)
	for k := 2; k <= 3; k++ {
		h.tick(1, time.Minute)
		h.waitRuns("search", k)
	}
	alerts, err := h.store.Alerts(t.Context())
	if err != nil {
		h.Fatal(err)
	}
	if len(alerts) != 1 || alerts[0].Kind != firing || alerts[0].State != skipped || alerts[0].LastError != maintenanceError {
		h.Fatalf("three failing runs in the window: alerts %+v, want one firing, skipped, last error %q", alerts, maintenanceError)
	}
	if got := sender.alerts(); len(got) != 0 {
		h.Fatalf("sent %d alerts during the window, want none", len(got))
	}

	h.tick(1, time.Minute) // t0+3m: the window has ended, the probe still fails
	h.waitRuns("search", 4)
	h.eventually("the firing alert to be sent once the window ended", func() bool { return len(sender.alerts()) == 1 })

	h.tick(1, time.Minute) // t0+4m: still failing, announced: nothing
	h.waitRuns("search", 5)
	passing.Store(true)
	h.tick(1, time.Minute) // t0+5m: inside the second window, passing
	h.waitRuns("search", 6)
	h.eventually("the resolve inside the window to be sent", func() bool { return len(sender.alerts()) == 2 })
	if got := fmt.Sprint(alertKinds(sender.alerts())); got != "[firing resolved]" {
		h.Errorf("sent %s, want [firing resolved]", got)
	}
	if runs := h.runs("search"); len(runs) != 6 {
		h.Errorf("recorded %d runs, want 6: a probe in maintenance still runs and is recorded", len(runs))
	}
}

// TestRecorderMaintenanceFollowsReload: a window added by a reload mutes
// the probe's alerts from the next run; one a reload takes away stops
// muting them. A silence that covers the probe too is named as the
// reason, not the window.
func TestRecorderMaintenanceFollowsReload(t *testing.T) {
	ctx := t.Context()
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	config := func(windows ...results.MaintenanceWindow) *checks.Config {
		return &checks.Config{Notify: notifyOn(1, time.Minute, true), Probes: []*checks.Probe{{Name: "search"}}, Maintenance: windows}
	}
	daily := windowAt("search", alertT0, 24*time.Hour-time.Minute)
	cfg := config()
	p := NewRecorder(store, cfg.Notify, RecorderOptions{Clock: clock, Deliver: true, Silences: store, Labels: ProbeLabels(cfg), Maintenance: cfg.Maintenance})
	// Each step fails in a mode of its own, so that each calls for an alert.
	step := func(code results.Code) results.Alert {
		t.Helper()
		clock.Advance(2 * time.Minute)
		alerts := process(t, p, pipelineRun(t, "search", clock.Now(), "", code))
		if len(alerts) != 1 {
			t.Fatalf("alerts %s, want one", alertKinds(alerts))
		}
		return alerts[0]
	}
	if a := step(results.CodeTimeout); a.State != pending {
		t.Errorf("without a window: %s %s, want pending", a.Kind, a.State)
	}
	p.SetConfig(config(daily), true)
	if a := step(results.CodeServerError); a.State != skipped || a.LastError != maintenanceError {
		t.Errorf("after a reload added the window: %s %s (%q), want skipped, %q", a.Kind, a.State, a.LastError, maintenanceError)
	}
	if _, err := store.AddSilence(ctx, results.Silence{Matchers: results.Matchers{Probes: []string{"search"}},
		StartsAt: clock.Now(), EndsAt: clock.Now().Add(time.Hour), Reason: "migration", CreatedAt: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(SilenceRefresh)
	if a := step(results.CodeRuleError); a.State != skipped || a.LastError != silencedError {
		t.Errorf("silenced and in maintenance: %s %s (%q), want skipped, %q", a.Kind, a.State, a.LastError, silencedError)
	}
	clock.Advance(time.Hour)
	p.SetConfig(config(), true)
	if a := step(results.CodeInvalidJSON); a.State != pending {
		t.Errorf("after a reload took the window away: %s %s (%q), want pending", a.Kind, a.State, a.LastError)
	}
}
