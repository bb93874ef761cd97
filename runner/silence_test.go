package runner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// silencedStep is a policy step fed to decide with whether its probe is
// silenced, and the delivery state each of its alerts must have.
type silencedStep struct {
	policyStep
	silenced bool
	states   []results.DeliveryState
}

func quiet(s policyStep, states ...results.DeliveryState) silencedStep {
	return silencedStep{policyStep: s, silenced: true, states: states}
}

func loud(s policyStep, states ...results.DeliveryState) silencedStep {
	return silencedStep{policyStep: s, states: states}
}

var (
	pending = results.DeliveryPending
	skipped = results.DeliverySkipped
)

// TestAlertDecideSilenced: a silenced probe's alerts are skipped with last
// error "silenced", and the memory does not count them as announced, so
// the alert goes out when the silence ends on a probe still failing.
func TestAlertDecideSilenced(t *testing.T) {
	n := notifyOn(2, time.Hour, true)
	tests := []struct {
		name  string
		steps []silencedStep
	}{
		{"a failure that starts silenced fires once the silence ends", []silencedStep{
			quiet(failAt(unavailable, 0)),
			quiet(failAt(unavailable, time.Minute, firing), skipped),
			quiet(failAt(unavailable, 2*time.Minute)), // recorded a minute ago
			loud(failAt(unavailable, 3*time.Minute, firing), pending),
			loud(failAt(unavailable, 4*time.Minute)),
		}},
		{"a silenced failure is recorded skipped once per repeat interval", []silencedStep{
			quiet(failAt(unavailable, 0)),
			quiet(failAt(unavailable, time.Minute, firing), skipped),
			quiet(failAt(unavailable, 30*time.Minute)),
			quiet(failAt(contract, 40*time.Minute)),
			quiet(failAt(unavailable, 61*time.Minute, firing), skipped),
			quiet(failAt(unavailable, 62*time.Minute)),
			loud(failAt(unavailable, 63*time.Minute, firing), pending),
			quiet(failAt(contract, 64*time.Minute, update), skipped), // announced since: a new skip is news
			quiet(failAt(contract, 65*time.Minute)),
		}},
		{"a silenced reminder is due again once the silence ends", []silencedStep{
			loud(failAt(unavailable, 0)),
			loud(failAt(unavailable, time.Minute, firing), pending),
			quiet(failAt(unavailable, 61*time.Minute, reminder), skipped),
			loud(failAt(unavailable, 62*time.Minute, reminder), pending),
		}},
		{"a silenced update is sent once the silence ends", []silencedStep{
			loud(failAt(unavailable, 0)),
			loud(failAt(unavailable, time.Minute, firing), pending),
			quiet(failAt(contract, 2*time.Minute, update), skipped),
			loud(failAt(contract, 3*time.Minute, update), pending),
		}},
		{"a failure announced before the silence is resolved during it", []silencedStep{
			loud(failAt(unavailable, 0)),
			loud(failAt(unavailable, time.Minute, firing), pending),
			quiet(passAt(2*time.Minute, resolved), pending),
			loud(failAt(unavailable, 3*time.Minute)),
		}},
		{"a silenced streak that passes resolves nothing", []silencedStep{
			quiet(failAt(unavailable, 0)),
			quiet(failAt(unavailable, time.Minute, firing), skipped),
			loud(passAt(2 * time.Minute)),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st results.AlertState
			for i, s := range tt.steps {
				r := policyRun("search", i, s.policyStep)
				var alerts []results.Alert
				st, alerts = decide(n, st, r, r.StartedAt, s.silenced)
				if got, want := fmt.Sprint(alertKinds(alerts)), fmt.Sprint(s.want); got != want {
					t.Fatalf("step %d (silenced %v): alerts %s, want %s", i, s.silenced, got, want)
				}
				for j, a := range alerts {
					if a.State != s.states[j] {
						t.Errorf("step %d: alert %s state %s, want %s", i, a.Kind, a.State, s.states[j])
					}
					wantErr := ""
					if a.State == skipped {
						wantErr = silencedError
					}
					if a.LastError != wantErr {
						t.Errorf("step %d: alert %s last error %q, want %q", i, a.Kind, a.LastError, wantErr)
					}
				}
			}
		})
	}
}

// TestRecorderHonoursSilences: on the real store and the fake clock, a
// silence added while the daemon runs mutes the probe within
// SilenceRefresh: its runs are recorded, its alerts recorded skipped; and
// once the silence is expired, the failure still going on fires.
func TestRecorderHonoursSilences(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	p := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Clock: clock, Deliver: true, Silences: store,
		Labels: map[string]map[string]string{"search": {"team": "search"}, "weather": {"team": "maps"}}})
	if err := p.Load(ctx); err != nil {
		t.Fatal(err)
	}
	step := func(probe string) []results.Alert {
		t.Helper()
		clock.Advance(time.Second)
		return process(t, p, pipelineRun(t, probe, clock.Now(), "", results.CodeTimeout))
	}
	// The first run reads the (empty) silences: the cache now holds them.
	if got := step("weather"); len(got) != 1 || got[0].State != pending {
		t.Fatalf("weather, no silence: alerts %+v, want one pending firing", got)
	}

	id, err := store.AddSilence(ctx, results.Silence{Matchers: results.Matchers{Labels: map[string]string{"team": "search"}},
		StartsAt: clock.Now(), EndsAt: clock.Now().Add(time.Hour), Reason: "maintenance", CreatedAt: clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(SilenceRefresh)
	got := step("search")
	if len(got) != 1 || got[0].Kind != firing || got[0].State != skipped || got[0].LastError != silencedError {
		t.Fatalf("search, silenced: alerts %+v, want one firing, skipped, last error %q", got, silencedError)
	}
	if runs, err := store.RecordedRuns(ctx, "search"); err != nil || len(runs) != 1 {
		t.Errorf("search, silenced: recorded runs %d (err %v), want 1: a silenced probe is still recorded", len(runs), err)
	}

	if err := store.ExpireSilence(ctx, id, clock.Now()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(SilenceRefresh)
	got = step("search")
	if len(got) != 1 || got[0].Kind != firing || got[0].State != pending {
		t.Fatalf("search, silence expired, still failing: alerts %+v, want one pending firing", got)
	}
}

// countingSilences counts the reads of the silences.
type countingSilences struct {
	src   Silences
	reads int
}

func (c *countingSilences) Silences(ctx context.Context, now time.Time, all bool) ([]results.Silence, error) {
	c.reads++
	return c.src.Silences(ctx, now, all)
}

// TestRecorderCachesSilences: runs read the silences at most once per
// SilenceRefresh, not once per run.
func TestRecorderCachesSilences(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	src := &countingSilences{src: store}
	p := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Clock: clock, Deliver: true, Silences: src})
	for i := range 6 {
		process(t, p, pipelineRun(t, "search", clock.Now(), "", ""))
		if i < 5 {
			clock.Advance(time.Second)
		}
	}
	if src.reads != 2 {
		t.Errorf("6 runs over %v: %d reads of the silences, want 2 (one per %v)", 5*time.Second, src.reads, SilenceRefresh)
	}
}

// TestDaemonSilencesByLabel: the daemon hands the Recorder its probes'
// labels and its Silences, so a label silence in the store mutes a
// failing probe's alert.
func TestDaemonSilencesByLabel(t *testing.T) {
	schedCheckLeaks(t)
	probe := schedProbe(t, "search", "http://127.0.0.1:1", time.Minute) // connection refused: unavailable
	probe.Labels = map[string]string{"team": "search"}
	cfg := schedConfig(4, probe)
	cfg.Notify.On = []string{"unavailable"}
	h := schedNew(t, cfg, func(d *Deps) { d.Silences = d.Store.(Silences) })
	now := h.clock.Now()
	if _, err := h.store.AddSilence(context.Background(), results.Silence{
		Matchers: results.Matchers{Labels: map[string]string{"team": "search"}},
		StartsAt: now, EndsAt: now.Add(time.Hour), Reason: "maintenance", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	h.run()
	h.tick(1, minStartLead+schedSkew)
	h.waitRuns("search", 1)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	alerts, err := h.store.Alerts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(alerts) != 1 || alerts[0].Kind != firing || alerts[0].State != skipped || alerts[0].LastError != silencedError {
		t.Fatalf("alerts %+v, want one firing alert, skipped, last error %q", alerts, silencedError)
	}
}

// TestRecorderSilencedDrift: a drift seen while its probe is silenced is
// still recorded (the drifts row explains the change later), and its
// alert is recorded skipped with the reason, for no receiver, like the
// failure's own.
func TestRecorderSilencedDrift(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	p := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Clock: clock, Deliver: true, Silences: store})
	run := func(body string, code results.Code) []results.Alert {
		t.Helper()
		clock.Advance(time.Minute)
		return process(t, p, pipelineRun(t, "external_search", clock.Now(), body, code))
	}
	for range driftMinObservations {
		run(seedBaselineBody, "")
	}
	if _, err := store.AddSilence(ctx, results.Silence{Matchers: results.Matchers{Probes: []string{"external_search"}},
		StartsAt: clock.Now(), EndsAt: clock.Now().Add(time.Hour), Reason: "migration", CreatedAt: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(SilenceRefresh)
	alerts := run(seedWrappedBody, seedWrappedCode)
	if got := fmt.Sprint(alertKinds(alerts)); got != "[shape_drift firing]" {
		t.Fatalf("alerts of the drifted run: %s, want [shape_drift firing]", got)
	}
	for _, a := range alerts {
		if a.State != skipped || a.LastError != silencedError || a.Receiver != "" {
			t.Errorf("%s alert: state %s, last error %q, receiver %q; want skipped, %q, none",
				a.Kind, a.State, a.LastError, a.Receiver, silencedError)
		}
	}
	_, drifts, _, _ := store.snapshot()
	if len(drifts) != 1 || drifts[0].Current != seedWrappedFP {
		t.Errorf("drift rows %+v, want the one drift to %s: a silence mutes alerts, not the record", drifts, seedWrappedFP)
	}
}

// TestRecorderSilenceFollowsReloadedLabels: a label silence covers a probe
// from the reload that gives it the label, and stops covering it at the
// reload that takes the label away.
func TestRecorderSilenceFollowsReloadedLabels(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	config := func(labels map[string]string) *checks.Config {
		return &checks.Config{Notify: notifyOn(1, time.Minute, true), Probes: []*checks.Probe{{Name: "search", Labels: labels}}}
	}
	cfg := config(nil)
	p := NewRecorder(store, cfg.Notify, RecorderOptions{Clock: clock, Deliver: true, Silences: store, Labels: ProbeLabels(cfg)})
	if _, err := store.AddSilence(ctx, results.Silence{Matchers: results.Matchers{Labels: map[string]string{"team": "search"}},
		StartsAt: clock.Now(), EndsAt: clock.Now().Add(time.Hour), Reason: "maintenance", CreatedAt: clock.Now()}); err != nil {
		t.Fatal(err)
	}
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
		t.Errorf("before the probe has the label: %s %s, want pending", a.Kind, a.State)
	}
	p.SetConfig(config(map[string]string{"team": "search"}), true)
	if a := step(results.CodeServerError); a.State != skipped || a.LastError != silencedError {
		t.Errorf("after a reload gave it team=search: %s %s (%q), want skipped, silenced", a.Kind, a.State, a.LastError)
	}
	p.SetConfig(config(map[string]string{"team": "maps"}), true)
	if a := step(results.CodeRuleError); a.State != pending {
		t.Errorf("after a reload took the label away: %s %s, want pending", a.Kind, a.State)
	}
}

// TestRecorderResolvesDuringSilence: a failure announced before a silence
// that ends during it is resolved at every receiver that was told, so an
// Alertmanager does not go on showing it firing.
func TestRecorderResolvesDuringSilence(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	n := routedNotify()
	n.Routes[0].Notify.SendResolved = true
	p := NewRecorder(store, n, RecorderOptions{Clock: clock, Deliver: true, Silences: store,
		Labels: map[string]map[string]string{"search": {"team": "search"}}})
	step := func(code results.Code) string {
		t.Helper()
		clock.Advance(time.Minute)
		return alertSummary(process(t, p, pipelineRun(t, "search", clock.Now(), "", code)))
	}
	step(results.CodeTimeout)
	if got := step(results.CodeTimeout); got != "[firing routes[0]/slack pending map[team:search] firing routes[0]/webhook pending map[team:search]]" {
		t.Fatalf("before the silence: %s", got)
	}
	if _, err := store.AddSilence(ctx, results.Silence{Matchers: results.Matchers{Probes: []string{"search"}},
		StartsAt: clock.Now(), EndsAt: clock.Now().Add(time.Hour), Reason: "maintenance", CreatedAt: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(SilenceRefresh)
	if got, want := step(""), "[resolved routes[0]/slack pending map[team:search] resolved routes[0]/webhook pending map[team:search]]"; got != want {
		t.Errorf("passing during the silence: %s, want %s", got, want)
	}
}
