package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// routedNotify is a default route (Slack, threshold 1) and one route for
// team search (Slack and a webhook, threshold 2, no resolved messages).
func routedNotify() checks.Notify {
	n := notifyOn(1, time.Hour, true)
	search := notifyOn(2, time.Hour, false)
	search.Slack = checks.Slack{}
	n.Routes = []checks.Route{{
		Name:    "routes[0]",
		Match:   map[string]string{"team": "search"},
		Slack:   checks.Slack{WebhookURL: "http://127.0.0.1:9/search"},
		Webhook: checks.Webhook{URL: "http://127.0.0.1:9/hook", Secret: "s"},
		Notify:  search,
	}}
	return n
}

// alertSummary is "kind receiver state labels" for each alert.
func alertSummary(alerts []results.Alert) string {
	var out []string
	for _, a := range alerts {
		out = append(out, fmt.Sprintf("%s %s %s %v", a.Kind, a.Receiver, a.State, a.Labels))
	}
	return fmt.Sprint(out)
}

func TestRecorderRoutes(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	labels := map[string]map[string]string{
		"search":  {"team": "search"},
		"billing": {"team": "billing"},
	}
	p := NewRecorder(store, routedNotify(), RecorderOptions{Clock: clock, Deliver: true, Labels: labels})

	steps := []struct {
		probe, code string
		want        string
	}{
		// The route's threshold is 2: its first failure alerts nobody.
		{"search", "timeout", "[]"},
		// Then one alert for each of its receivers, with its labels.
		{"search", "timeout", "[firing routes[0]/slack pending map[team:search] firing routes[0]/webhook pending map[team:search]]"},
		// A probe that matches no route: the default, threshold 1.
		{"billing", "timeout", "[firing default/slack pending map[team:billing]]"},
		{"plain", "timeout", "[firing default/slack pending map[]]"},
		// The route's send_resolved is off; the default's is on.
		{"search", "", "[]"},
		{"billing", "", "[resolved default/slack pending map[team:billing]]"},
	}
	for i, s := range steps {
		clock.Advance(time.Minute)
		alerts := process(t, p, pipelineRun(t, s.probe, clock.Now(), "", results.Code(s.code)))
		// Each alert has labels of its own: changing one changes neither
		// another nor the config.
		if len(alerts) > 0 && alerts[0].Labels != nil {
			alerts[0].Labels["team"] = "changed"
			if len(alerts) > 1 && alerts[1].Labels["team"] == "changed" {
				t.Errorf("step %d: two alerts share one labels map", i)
			}
			alerts[0].Labels["team"] = s.probe
		}
		if got := alertSummary(alerts); got != s.want {
			t.Errorf("step %d (%s %q): alerts %s, want %s", i, s.probe, s.code, got, s.want)
		}
		for _, a := range alerts {
			if !a.NextAttemptAt.Equal(clock.Now()) {
				t.Errorf("step %d: %s due at %v, want now", i, a.Receiver, a.NextAttemptAt)
			}
		}
	}
	if labels["search"]["team"] != "search" || labels["billing"]["team"] != "billing" {
		t.Errorf("an alert's labels are the config's map: %v", labels["search"])
	}
}

// TestRecorderSetConfigMovesProbe: a reload that gives a probe new labels
// sends its next alerts by its new route, and one without a receiver for
// the default route records them as skipped.
func TestRecorderSetConfigMovesProbe(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	probe := &checks.Probe{Name: "search"}
	cfg := &checks.Config{Notify: routedNotify(), Probes: []*checks.Probe{probe}}
	p := NewRecorder(store, cfg.Notify, RecorderOptions{Clock: clock, Deliver: true, Labels: ProbeLabels(cfg)})

	clock.Advance(time.Minute)
	if got, want := alertSummary(process(t, p, pipelineRun(t, "search", clock.Now(), "", results.CodeTimeout))),
		"[firing default/slack pending map[]]"; got != want {
		t.Fatalf("before the reload: %s, want %s", got, want)
	}
	clock.Advance(time.Minute)
	process(t, p, pipelineRun(t, "search", clock.Now(), "", ""))

	moved := *cfg
	moved.Probes = []*checks.Probe{{Name: "search", Labels: map[string]string{"team": "search"}}}
	p.SetConfig(&moved, true)
	for range 2 {
		clock.Advance(time.Minute)
		process(t, p, pipelineRun(t, "search", clock.Now(), "", results.CodeTimeout))
	}
	_, _, _, stored := store.snapshot()
	if got, want := alertSummary(stored[len(stored)-2:]),
		"[firing routes[0]/slack pending map[team:search] firing routes[0]/webhook pending map[team:search]]"; got != want {
		t.Errorf("after the reload: %s, want %s", got, want)
	}

	bare := moved
	bare.Notify = routedNotify()
	bare.Notify.Slack = checks.Slack{}
	bare.Probes = []*checks.Probe{{Name: "other"}}
	p.SetConfig(&bare, true)
	clock.Advance(time.Minute)
	if got, want := alertSummary(process(t, p, pipelineRun(t, "other", clock.Now(), "", results.CodeTimeout))),
		"[firing  skipped map[]]"; got != want {
		t.Errorf("default route without a receiver: %s, want %s", got, want)
	}
}

// TestRecorderSilencedRoute: a silenced probe on a route with two
// receivers records its alert once, skipped for no receiver, with the
// reason; once the silence ends, the failure fires to both receivers.
func TestRecorderSilencedRoute(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	labels := map[string]map[string]string{"search": {"team": "search"}}
	p := NewRecorder(store, routedNotify(), RecorderOptions{Clock: clock, Deliver: true, Labels: labels, Silences: store})
	if _, err := store.AddSilence(t.Context(), results.Silence{Matchers: results.Matchers{Probes: []string{"search"}},
		StartsAt: clock.Now(), EndsAt: clock.Now().Add(10 * time.Minute), Reason: "maintenance", CreatedAt: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 2 {
		clock.Advance(time.Minute)
		alerts := process(t, p, pipelineRun(t, "search", clock.Now(), "", results.CodeTimeout))
		got = append(got, alertSummary(alerts))
		for _, a := range alerts {
			if a.LastError != silencedError {
				t.Errorf("silenced alert %+v does not say why it was skipped", a)
			}
		}
	}
	clock.Advance(10 * time.Minute)
	got = append(got, alertSummary(process(t, p, pipelineRun(t, "search", clock.Now(), "", results.CodeTimeout))))
	want := []string{
		"[]", // the route's threshold is 2
		"[firing  skipped map[team:search]]",
		"[firing routes[0]/slack pending map[team:search] firing routes[0]/webhook pending map[team:search]]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("alerts\n%v\nwant\n%v", got, want)
	}
}

// TestRecorderReloadMovesFiringProbe: a reload that moves a firing probe
// to another route tells the receivers of its new route that it is
// failing (as a firing alert, at its next failed run), and its resolved
// alert goes to every receiver that was told, as long as it is still
// configured, wherever the route points now.
func TestRecorderReloadMovesFiringProbe(t *testing.T) {
	withResolved := func() checks.Notify {
		n := routedNotify()
		n.Routes[0].Notify.SendResolved = true
		return n
	}
	tests := []struct {
		name         string
		after        func(checks.Notify) checks.Notify // the notify section the second reload gives
		wantResolved string
	}{
		{"every receiver told hears it is over", func(n checks.Notify) checks.Notify { return n },
			"[resolved default/slack pending map[team:search] resolved routes[0]/slack pending map[team:search] resolved routes[0]/webhook pending map[team:search]]"},
		{"a receiver the config no longer has is not sent it", func(n checks.Notify) checks.Notify {
			n.Slack = checks.Slack{}
			return n
		}, "[resolved routes[0]/slack pending map[team:search] resolved routes[0]/webhook pending map[team:search]]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newTestStore(t)
			clock := newTestClock(alertT0)
			cfg := &checks.Config{Notify: withResolved(), Probes: []*checks.Probe{{Name: "search"}}}
			p := NewRecorder(store, cfg.Notify, RecorderOptions{Clock: clock, Deliver: true, Labels: ProbeLabels(cfg)})
			step := func(code results.Code) string {
				clock.Advance(time.Minute)
				return alertSummary(process(t, p, pipelineRun(t, "search", clock.Now(), "", code)))
			}
			if got, want := step(results.CodeTimeout), "[firing default/slack pending map[]]"; got != want {
				t.Fatalf("before the reload: %s, want %s", got, want)
			}

			moved := &checks.Config{Notify: withResolved(), Probes: []*checks.Probe{{Name: "search", Labels: map[string]string{"team": "search"}}}}
			p.SetConfig(moved, true)
			if got, want := step(results.CodeTimeout),
				"[firing routes[0]/slack pending map[team:search] firing routes[0]/webhook pending map[team:search]]"; got != want {
				t.Errorf("first run on the new route: %s, want %s", got, want)
			}
			if got := step(results.CodeTimeout); got != "[]" {
				t.Errorf("second run on the new route: %s, want none: every receiver was told", got)
			}
			// An update goes to every receiver of the route, as an update.
			if got, want := step(results.CodeRuleError),
				"[update routes[0]/slack pending map[team:search] update routes[0]/webhook pending map[team:search]]"; got != want {
				t.Errorf("change of mode: %s, want %s", got, want)
			}

			moved.Notify = tt.after(moved.Notify)
			p.SetConfig(moved, true)
			if got := step(""); got != tt.wantResolved {
				t.Errorf("resolved: %s\nwant %s", got, tt.wantResolved)
			}
		})
	}
}

// TestRecorderAdoptsReceiversOfOldStates: a firing state written before
// toolpulse remembered who was told takes the probe's route for them: no
// firing alert again, and the resolved alert goes to the route.
func TestRecorderAdoptsReceiversOfOldStates(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	store.seedState(results.AlertState{Probe: "search", ConsecutiveFailures: 3, FailingSince: alertT0,
		Firing: true, LastNotifiedAt: alertT0}, alertT0)
	p := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Clock: clock, Deliver: true})
	if err := p.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if got := alertSummary(process(t, p, pipelineRun(t, "search", clock.Now(), "", results.CodeTimeout))); got != "[]" {
		t.Errorf("a failure already announced: %s, want none", got)
	}
	clock.Advance(time.Minute)
	if got, want := alertSummary(process(t, p, pipelineRun(t, "search", clock.Now(), "", ""))),
		"[resolved default/slack pending map[]]"; got != want {
		t.Errorf("resolved: %s, want %s", got, want)
	}
}
