package runner

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// hystStep is a policy step of the hysteresis table: a run and the alerts
// it must make, then the verdict it must leave (failing, flapping).
// restart passes the state through a real store before the run, as a
// restart or a new leader reads it.
type hystStep struct {
	policyStep
	failing, flapping bool
	restart           bool
}

// F is a failing run (timeout) at minute m, P a pass; failing and
// flapping are the verdict after it.
func F(m int, want ...results.AlertKind) hystStep {
	return hystStep{policyStep: failAt(unavailable, time.Duration(m)*time.Minute, want...), failing: true}
}

func P(m int, want ...results.AlertKind) hystStep {
	return hystStep{policyStep: passAt(time.Duration(m)*time.Minute, want...)}
}

// verdict sets the verdict expected after the step.
func (s hystStep) is(failing, flapping bool) hystStep {
	s.failing, s.flapping = failing, flapping
	return s
}

// afterRestart marks the step as the first after a restart.
func (s hystStep) afterRestart() hystStep { s.restart = true; return s }

var (
	flappingKind = results.AlertFlapping
	hystTimeout  = notifyOn(1, time.Hour, true)
)

// hyst returns the default test policy changed by set.
func hyst(set func(n *checks.Notify)) checks.Notify {
	n := hystTimeout
	set(&n)
	return n
}

func TestAlertPolicyHysteresis(t *testing.T) {
	flap := checks.Flapping{Changes: 3, Window: 10 * time.Minute, StableFor: 15 * time.Minute}
	cases := []struct {
		name   string
		notify checks.Notify
		steps  []hystStep
	}{
		// success_threshold.
		{
			name:   "success_threshold 2: one pass keeps a firing probe firing, the second resolves it",
			notify: hyst(func(n *checks.Notify) { n.SuccessThreshold = 2 }),
			steps:  []hystStep{F(0, firing), P(1).is(true, false), P(2, resolved)},
		},
		{
			name:   "success_threshold 1 (the default) resolves on the first pass",
			notify: hyst(func(n *checks.Notify) { n.SuccessThreshold = 1 }),
			steps:  []hystStep{F(0, firing), P(1, resolved), F(2, firing)},
		},
		{
			name:   "a failure between passes starts the count again, without a message",
			notify: hyst(func(n *checks.Notify) { n.SuccessThreshold = 2 }),
			steps:  []hystStep{F(0, firing), P(1).is(true, false), F(2), P(3).is(true, false), P(4, resolved)},
		},
		{
			name:   "passes below the threshold send no reminder, even past repeat_interval",
			notify: hyst(func(n *checks.Notify) { n.SuccessThreshold = 3 }),
			steps:  []hystStep{F(0, firing), P(120).is(true, false), P(180).is(true, false), P(181, resolved)},
		},
		{
			name:   "a pass before the streak fired ends it: success_threshold only holds a failing probe",
			notify: hyst(func(n *checks.Notify) { n.FailureThreshold, n.SuccessThreshold = 3, 2 }),
			steps: []hystStep{
				F(0).is(false, false), F(1).is(false, false), P(2),
				F(3).is(false, false), F(4).is(false, false), F(5, firing),
			},
		},
		{
			name: "a failing probe notify.on does not list fires on a listed failure, even after a pass below the threshold",
			notify: hyst(func(n *checks.Notify) {
				n.On, n.SuccessThreshold = []string{"contract_error"}, 2
			}),
			steps: []hystStep{
				F(0), P(1).is(true, false),
				{policyStep: failAt(contract, 2*time.Minute, firing), failing: true},
				P(3).is(true, false), P(4, resolved),
			},
		},
		// failure_window.
		{
			name:   "failure_window 3 of 5 fires on scattered failures",
			notify: hyst(func(n *checks.Notify) { n.FailureWindow = checks.FailureWindow{Failures: 3, Runs: 5} }),
			steps: []hystStep{
				F(0).is(false, false), P(1), F(2).is(false, false), P(3), F(4, firing),
			},
		},
		{
			name:   "failure_window with failures = runs counts consecutive failures",
			notify: hyst(func(n *checks.Notify) { n.FailureWindow = checks.FailureWindow{Failures: 3, Runs: 3} }),
			steps: []hystStep{
				F(0).is(false, false), F(1).is(false, false), P(2),
				F(3).is(false, false), F(4).is(false, false), F(5, firing),
			},
		},
		{
			name:   "failures slide out of a window shorter than the history",
			notify: hyst(func(n *checks.Notify) { n.FailureWindow = checks.FailureWindow{Failures: 2, Runs: 3} }),
			steps: []hystStep{
				F(0).is(false, false), P(1), P(2), F(3).is(false, false), P(4), P(5), F(6).is(false, false), F(7, firing),
			},
		},
		{
			name:   "a window longer than the history fires once it holds the failures",
			notify: hyst(func(n *checks.Notify) { n.FailureWindow = checks.FailureWindow{Failures: 2, Runs: 10} }),
			steps:  []hystStep{F(0).is(false, false), F(1, firing)},
		},
		{
			name:   "a window of 64 runs counts the oldest",
			notify: hyst(func(n *checks.Notify) { n.FailureWindow = checks.FailureWindow{Failures: 2, Runs: 64} }),
			steps: append(append([]hystStep{F(0).is(false, false)}, passes(1, 62)...),
				F(63, firing)), // the first run is the 64th last
		},
		{
			name:   "a window of 64 runs forgets the 65th last",
			notify: hyst(func(n *checks.Notify) { n.FailureWindow = checks.FailureWindow{Failures: 2, Runs: 64} }),
			steps: append(append([]hystStep{F(0).is(false, false)}, passes(1, 63)...),
				F(64).is(false, false)),
		},
		{
			name:   "a recovery empties the window",
			notify: hyst(func(n *checks.Notify) { n.FailureWindow = checks.FailureWindow{Failures: 3, Runs: 5} }),
			steps: []hystStep{
				F(0).is(false, false), F(1).is(false, false), F(2, firing), P(3, resolved),
				F(4).is(false, false), F(5).is(false, false), F(6, firing),
			},
		},
		{
			name:   "failure_window 1 of 1 is failure_threshold 1",
			notify: hyst(func(n *checks.Notify) { n.FailureWindow = checks.FailureWindow{Failures: 1, Runs: 1} }),
			steps:  []hystStep{F(0, firing), P(1, resolved), F(2, firing)},
		},
		{
			name: "failure_window with success_threshold",
			notify: hyst(func(n *checks.Notify) {
				n.FailureWindow, n.SuccessThreshold = checks.FailureWindow{Failures: 2, Runs: 4}, 2
			}),
			steps: []hystStep{F(0).is(false, false), F(1, firing), P(2).is(true, false), F(3), P(4).is(true, false), P(5, resolved)},
		},
		{
			name: "a restart in the middle of a window and of the passes goes on counting",
			notify: hyst(func(n *checks.Notify) {
				n.FailureWindow, n.SuccessThreshold = checks.FailureWindow{Failures: 3, Runs: 5}, 2
			}),
			steps: []hystStep{
				F(0).is(false, false), P(1), F(2).is(false, false).afterRestart(), F(3, firing),
				P(4).is(true, false), P(5, resolved).afterRestart(),
			},
		},
		// Flapping.
		{
			name:   "changes up to the limit are not flapping",
			notify: hyst(func(n *checks.Notify) { n.Flapping = flap }),
			steps:  []hystStep{F(0, firing), P(1, resolved), F(2, firing), P(10, resolved)},
		},
		{
			name:   "changes older than the window do not count",
			notify: hyst(func(n *checks.Notify) { n.Flapping = flap }),
			steps:  []hystStep{F(0, firing), P(1, resolved), F(2, firing), P(11, resolved), F(12, firing)},
		},
		{
			name:   "flapping: one message, quiet, then resolved once stable for stable_for",
			notify: hyst(func(n *checks.Notify) { n.Flapping = flap }),
			steps: []hystStep{
				F(0, firing), P(1, resolved), F(2, firing), P(3, flappingKind).is(false, true),
				F(4).is(true, true), P(5).is(false, true), F(6).is(true, true), P(7).is(false, true),
				P(21).is(false, true), // 14 minutes stable
				P(22, resolved),
				F(23, firing), // counted afresh
			},
		},
		{
			name:   "flapping that settles failing fires once, to everyone",
			notify: hyst(func(n *checks.Notify) { n.Flapping = flap }),
			steps: []hystStep{
				F(0, firing), P(1, resolved), F(2, firing), P(3, flappingKind).is(false, true),
				F(4).is(true, true), F(18).is(true, true), F(19, firing), F(20), F(80, reminder),
			},
		},
		{
			name: "a run that disagrees with the verdict does not settle it",
			notify: hyst(func(n *checks.Notify) {
				n.FailureThreshold = 2
				n.Flapping = checks.Flapping{Changes: 1, Window: 10 * time.Minute, StableFor: 5 * time.Minute}
			}),
			steps: []hystStep{
				F(0).is(false, false), F(1, firing), P(2, flappingKind).is(false, true),
				F(10).is(false, true), // stable for 8 minutes, but a failure of a passing probe
				F(11).is(true, true), P(12).is(false, true), P(17, resolved),
			},
		},
		{
			name: "a flapping alert is owed its resolved alert, also when nothing fired before it",
			notify: hyst(func(n *checks.Notify) {
				n.On = []string{"contract_error"}
				n.Flapping = checks.Flapping{Changes: 1, Window: 10 * time.Minute, StableFor: 5 * time.Minute}
			}),
			steps: []hystStep{F(0), P(1, flappingKind).is(false, true), F(2).is(true, true), P(3).is(false, true), P(20, resolved)},
		},
		{
			name:   "a restart while flapping stays quiet and settles",
			notify: hyst(func(n *checks.Notify) { n.Flapping = flap }),
			steps: []hystStep{
				F(0, firing), P(1, resolved), F(2, firing), P(3, flappingKind).is(false, true),
				F(4).is(true, true).afterRestart(), P(5).is(false, true), P(20, resolved).afterRestart(),
			},
		},
		{
			name: "flapping with failure_window and success_threshold counts the verdict's changes",
			notify: hyst(func(n *checks.Notify) {
				n.FailureWindow, n.SuccessThreshold = checks.FailureWindow{Failures: 2, Runs: 3}, 2
				n.Flapping = checks.Flapping{Changes: 1, Window: 10 * time.Minute, StableFor: 5 * time.Minute}
			}),
			steps: []hystStep{
				F(0).is(false, false), F(1, firing), P(2).is(true, false), P(3, flappingKind).is(false, true),
				F(4).is(false, true), // one failure of an emptied window: no change
				P(7).is(false, true), P(8, resolved),
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var st results.AlertState
			for i, s := range c.steps {
				if s.restart {
					st = throughStore(t, st)
				}
				r := policyRun("search", i, s.policyStep)
				before := st
				var alerts []results.Alert
				st, alerts = decide(c.notify, st, r, r.StartedAt, false)
				var kinds []results.AlertKind
				for _, a := range alerts {
					kinds = append(kinds, a.Kind)
				}
				if fmt.Sprint(kinds) != fmt.Sprint(s.want) {
					t.Fatalf("step %d (%s at %v, state before %+v): got alerts %v, want %v",
						i, outcomeName(s.policyStep), s.at, before, kinds, s.want)
				}
				if st.IsFailing() != s.failing || st.Flapping != s.flapping {
					t.Fatalf("step %d (%s at %v): failing %t, flapping %t; want %t, %t (state %+v)",
						i, outcomeName(s.policyStep), s.at, st.IsFailing(), st.Flapping, s.failing, s.flapping, st)
				}
			}
		})
	}
}

// passes returns passes at minutes from to to.
func passes(from, to int) []hystStep {
	var out []hystStep
	for m := from; m <= to; m++ {
		out = append(out, P(m))
	}
	return out
}

// throughStore returns st as a store gives it back after a restart: it
// is recorded with a run of its probe and read back.
func throughStore(t *testing.T, st results.AlertState) results.AlertState {
	t.Helper()
	ctx := context.Background()
	s := newTestStore(t)
	st.Probe = "search"
	r := policyRun("search", 999, passAt(-time.Hour))
	r.Duration = time.Millisecond
	r.Attempts[0].StartedAt = r.StartedAt
	if err := s.RecordRun(ctx, &results.RunRecord{Result: *r, AlertState: &st}); err != nil {
		t.Fatalf("record the state: %v", err)
	}
	states, err := s.AlertStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := states["search"]
	if !sameState(got, st) {
		t.Fatalf("the store gave back %+v, want %+v", got, st)
	}
	return got
}

// TestFlappingReceivers: the flapping alert goes to the probe's
// receivers and makes them told of the failure, so the firing alert of a
// flapping that settled failing reaches them (a firing probe's receivers
// otherwise get no second firing), and so does the resolved alert of one
// that settled passing.
func TestFlappingReceivers(t *testing.T) {
	n := hyst(func(n *checks.Notify) {
		n.Flapping = checks.Flapping{Changes: 1, Window: 10 * time.Minute, StableFor: 5 * time.Minute}
	})
	const slack = "default/slack"
	quiet := n
	quiet.On = []string{"contract_error"} // its failures alert only by flapping
	for _, c := range []struct {
		name   string
		notify checks.Notify
		steps  []hystStep
		want   []string
	}{
		{"settled failing", n, []hystStep{F(0), P(1), F(2), F(3), F(20)}, []string{"firing", "flapping", "firing"}},
		{"settled passing", n, []hystStep{F(0), P(1), F(2), P(3), P(20)}, []string{"firing", "flapping", "resolved"}},
		{"flapping before it fired", quiet, []hystStep{F(0), P(1), F(2), P(3), P(20)}, []string{"flapping", "resolved"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var st results.AlertState
			var told []string
			var got []results.Alert
			for i, s := range c.steps {
				run := &recording{r: policyRun("search", i, s.policyStep), route: checks.Route{Notify: c.notify}, state: st,
					to: addressing{current: []string{slack}, told: told, configured: map[string]bool{slack: true}}}
				run.now = run.r.StartedAt
				if st.Firing && run.to.told == nil {
					run.to.told = run.to.current // as begin does
				}
				decideAlerts(run)
				run.alerts, told = address(run.alerts, run.to, nil, run.now)
				if run.next.Flapping && !slices.Contains(told, slack) {
					t.Fatalf("step %d: told %q while flapping, want %s", i, told, slack)
				}
				if !run.next.Firing {
					told = nil
				}
				st = run.next
				got = append(got, run.alerts...)
			}
			var kinds []string
			for _, a := range got {
				kinds = append(kinds, string(a.Kind)+" to "+a.Receiver+" "+string(a.State))
			}
			var want []string
			for _, kind := range c.want {
				want = append(want, kind+" to "+slack+" pending")
			}
			if fmt.Sprint(kinds) != fmt.Sprint(want) {
				t.Errorf("alerts %q, want %q", kinds, want)
			}
		})
	}
}

// TestFlappingSilenced: a silence records the flapping alert skipped, and
// a probe whose flapping went out to no one owes no resolved alert.
func TestFlappingSilenced(t *testing.T) {
	n := hyst(func(n *checks.Notify) {
		n.Flapping = checks.Flapping{Changes: 1, Window: 10 * time.Minute, StableFor: 5 * time.Minute}
		n.RepeatInterval = 30 * time.Second
	})
	var st results.AlertState
	var got []string
	for i, s := range []hystStep{F(0), P(1), F(2), P(3), P(20)} {
		r := policyRun("search", i, s.policyStep)
		var alerts []results.Alert
		st, alerts = decide(n, st, r, r.StartedAt, true)
		for _, a := range alerts {
			got = append(got, string(a.Kind)+" "+string(a.State))
		}
	}
	if want := []string{"firing skipped", "flapping skipped"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("alerts %q, want %q", got, want)
	}
	if st.Firing || st.Flapping {
		t.Errorf("state after settling %+v, want neither firing nor flapping", st)
	}
}

// TestSameStateVerdict: a change of the verdict's fields alone is a
// change of state, so that it is written to the store.
func TestSameStateVerdict(t *testing.T) {
	a := results.AlertState{Probe: "p", VerdictChanges: []time.Time{alertT0}}
	b := a
	b.VerdictChanges = []time.Time{alertT0.In(time.FixedZone("x", 3600))}
	if !sameState(a, b) {
		t.Errorf("sameState(%v, %v) = false for the same instants", a, b)
	}
	for name, change := range map[string]func(*results.AlertState){
		"failing":         func(s *results.AlertState) { s.Failing = true },
		"passes":          func(s *results.AlertState) { s.ConsecutivePasses++ },
		"window":          func(s *results.AlertState) { s.Window = 1 },
		"window runs":     func(s *results.AlertState) { s.WindowRuns = 1 },
		"flapping":        func(s *results.AlertState) { s.Flapping = true },
		"flapping since":  func(s *results.AlertState) { s.FlappingSince = alertT0 },
		"verdict changes": func(s *results.AlertState) { s.VerdictChanges = append(s.VerdictChanges, alertT0) },
	} {
		c := a
		change(&c)
		if sameState(a, c) {
			t.Errorf("sameState ignores a change of %s", name)
		}
	}
}

// TestRecorderAlertPolicyReload: the hysteresis keys take effect at a
// reload (SetConfig), and a restart (a new Recorder loading the store's
// state) goes on from the stored verdict: a flapping probe stays quiet
// and settles.
func TestRecorderAlertPolicyReload(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	n := notifyOn(1, time.Hour, true)
	rc := NewRecorder(store, n, RecorderOptions{Clock: clock, Deliver: true})
	step := func(rc *Recorder, code results.Code, want string) {
		t.Helper()
		clock.Advance(time.Minute)
		if got := fmt.Sprint(alertKinds(process(t, rc, pipelineRun(t, "search", clock.Now(), "", code)))); got != want {
			t.Fatalf("run at %s (%q): alerts %s, want %s", clock.Now().Sub(alertT0), code, got, want)
		}
	}
	step(rc, results.CodeTimeout, "[firing]")
	n.SuccessThreshold = 2
	rc.SetConfig(&checks.Config{Notify: n}, true)
	step(rc, "", "[]")
	step(rc, "", "[resolved]")

	n.Flapping = checks.Flapping{Changes: 1, Window: 10 * time.Minute, StableFor: 5 * time.Minute}
	n.SuccessThreshold = 1
	rc.SetConfig(&checks.Config{Notify: n}, true)
	step(rc, results.CodeTimeout, "[firing]")
	step(rc, "", "[flapping]")
	step(rc, results.CodeTimeout, "[]")
	if _, _, states, _ := store.snapshot(); !states["search"].Flapping {
		t.Fatalf("stored state %+v, want flapping", states["search"])
	}

	restarted := NewRecorder(store, n, RecorderOptions{Clock: clock, Deliver: true})
	if err := restarted.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	step(restarted, "", "[]")
	clock.Advance(5 * time.Minute)
	step(restarted, "", "[resolved]")
	step(restarted, results.CodeTimeout, "[firing]")
}
