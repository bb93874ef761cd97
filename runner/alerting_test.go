package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// alertT0 is the instant the decide table's offsets count from.
var alertT0 = time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)

// policyStep is one run fed to decide: its code ("" for a pass), its start
// as an offset from alertT0, and the alerts it must make, each of which
// must carry FailingSince alertT0+since.
type policyStep struct {
	code  results.Code
	at    time.Duration
	want  []results.AlertKind
	since time.Duration
}

func passAt(at time.Duration, want ...results.AlertKind) policyStep {
	return policyStep{at: at, want: want}
}

func failAt(code results.Code, at time.Duration, want ...results.AlertKind) policyStep {
	return policyStep{code: code, at: at, want: want}
}

// since sets the FailingSince the step's alerts must carry.
func (s policyStep) sinceAt(d time.Duration) policyStep { s.since = d; return s }

// policyRun builds the result of a step for probe p.
func policyRun(p string, i int, s policyStep) *results.Result {
	r := &results.Result{
		OperationID: fmt.Sprintf("op-%d", i),
		Probe:       p,
		StartedAt:   alertT0.Add(s.at),
		Outcome:     results.Pass,
		Attempts:    []results.Attempt{{Number: 1}},
	}
	if s.code != "" {
		r.Fail(results.NewError(s.code, "failed with %s", s.code))
	}
	return r
}

// testSlack is a default receiver for tests, so that alerts of probes on the
// default route have one to be pending for.
var testSlack = checks.Slack{WebhookURL: "http://127.0.0.1:9/slack"}

func notifyOn(threshold int, repeat time.Duration, sendResolved bool, on ...string) checks.Notify {
	if len(on) == 0 {
		on = []string{"contract_error", "unavailable", "shape_drift"}
	}
	return checks.Notify{On: on, FailureThreshold: threshold, RepeatInterval: repeat, SendResolved: sendResolved,
		UpdateOnCodeChange: true, Slack: testSlack}
}

const (
	contract    = results.CodeRuleError
	unavailable = results.CodeTimeout
	serverError = results.CodeServerError
	canceled    = results.CodeCanceled
)

// The modes of those codes, as the alert state and alerts carry them.
var (
	contractMode    = results.Mode{Outcome: results.ContractError, Code: contract}
	unavailableMode = results.Mode{Outcome: results.Unavailable, Code: unavailable}
	serverErrorMode = results.Mode{Outcome: results.Unavailable, Code: serverError}
)

var (
	firing   = results.AlertFiring
	reminder = results.AlertReminder
	resolved = results.AlertResolved
	update   = results.AlertUpdate
)

func TestAlertDecide(t *testing.T) {
	restored := results.AlertState{
		Probe:               "search",
		ConsecutiveFailures: 5,
		FailingSince:        alertT0.Add(-2 * time.Hour),
		Firing:              true,
		LastNotifiedAt:      alertT0.Add(-30 * time.Minute),
	}
	cases := []struct {
		name   string
		notify checks.Notify
		start  results.AlertState
		steps  []policyStep
		// final is the state after the last step; nil skips the check.
		final *results.AlertState
	}{
		{
			name:   "threshold 1 fires on the first failure",
			notify: notifyOn(1, time.Hour, true),
			steps:  []policyStep{failAt(contract, 0, firing)},
			final: &results.AlertState{Probe: "search", ConsecutiveFailures: 1,
				FailingSince: alertT0, Firing: true, LastNotifiedAt: alertT0, Notified: contractMode,
				Modes: []results.Mode{contractMode}, Announced: []results.Mode{contractMode}},
		},
		{
			name:   "threshold 3 fires on the third consecutive failure, once",
			notify: notifyOn(3, time.Hour, true),
			steps: []policyStep{
				failAt(unavailable, 0),
				failAt(unavailable, time.Minute),
				failAt(unavailable, 2*time.Minute, firing),
				failAt(unavailable, 3*time.Minute),
			},
			final: &results.AlertState{Probe: "search", ConsecutiveFailures: 4,
				FailingSince: alertT0, Firing: true, LastNotifiedAt: alertT0.Add(2 * time.Minute), Notified: unavailableMode,
				Modes: []results.Mode{unavailableMode}, Announced: []results.Mode{unavailableMode}},
		},
		{
			name:   "threshold 3 counts mixed outcomes as one streak",
			notify: notifyOn(3, time.Hour, true),
			steps: []policyStep{
				failAt(unavailable, 0),
				failAt(contract, time.Minute),
				failAt(unavailable, 2*time.Minute, firing),
			},
		},
		{
			name:   "a pass breaks the streak below the threshold",
			notify: notifyOn(3, time.Hour, true),
			steps: []policyStep{
				failAt(contract, 0),
				failAt(contract, time.Minute),
				passAt(2 * time.Minute),
				failAt(contract, 3*time.Minute),
				failAt(contract, 4*time.Minute),
				failAt(contract, 5*time.Minute, firing).sinceAt(3 * time.Minute),
			},
		},
		{
			name:   "reminder exactly at repeat_interval, not before, keeping FailingSince",
			notify: notifyOn(1, time.Hour, true),
			steps: []policyStep{
				failAt(contract, 0, firing),
				failAt(contract, time.Hour-time.Millisecond),
				failAt(contract, time.Hour, reminder),
				failAt(contract, time.Hour+30*time.Minute),
				failAt(contract, 2*time.Hour-time.Nanosecond),
				failAt(contract, 2*time.Hour, reminder),
				passAt(2*time.Hour+time.Minute, resolved),
			},
			final: &results.AlertState{Probe: "search"},
		},
		{
			name:   "resolved with send_resolved carries FailingSince",
			notify: notifyOn(2, time.Hour, true),
			steps: []policyStep{
				failAt(unavailable, 0),
				failAt(unavailable, time.Minute, firing),
				passAt(2*time.Minute, resolved),
				passAt(3 * time.Minute),
			},
			final: &results.AlertState{Probe: "search"},
		},
		{
			name:   "no resolved without send_resolved, but the state resets",
			notify: notifyOn(1, time.Hour, false),
			steps: []policyStep{
				failAt(unavailable, 0, firing),
				passAt(time.Minute),
				failAt(unavailable, 2*time.Minute, firing).sinceAt(2 * time.Minute),
			},
		},
		{
			name:   "a pass after failures that never fired resolves nothing",
			notify: notifyOn(3, time.Hour, true),
			steps: []policyStep{
				failAt(contract, 0),
				passAt(time.Minute),
			},
			final: &results.AlertState{Probe: "search"},
		},
		{
			// Unavailable runs never start an alert on contract_error,
			// but once one fires, turning unavailable is news: on-call
			// would otherwise chase a contract change for an hour.
			name:   "on contract_error: unavailable runs start nothing, but a firing alert says it turned unavailable",
			notify: notifyOn(2, time.Hour, true, "contract_error"),
			steps: []policyStep{
				failAt(unavailable, 0),
				failAt(unavailable, time.Minute),
				failAt(unavailable, 2*time.Minute),
				failAt(contract, 3*time.Minute, firing),
				failAt(unavailable, 2*time.Hour, update),
				failAt(contract, 2*time.Hour+time.Minute),
				failAt(contract, 3*time.Hour, update),
				passAt(4*time.Hour, resolved),
			},
			final: &results.AlertState{Probe: "search"},
		},
		{
			name:   "a change of outcome while firing is an update at once, within repeat_interval",
			notify: notifyOn(1, time.Hour, true),
			steps: []policyStep{
				failAt(contract, 0, firing),
				failAt(unavailable, time.Minute, update),
				failAt(unavailable, 2*time.Minute),
				failAt(serverError, 3*time.Minute, update),
				failAt(serverError, time.Hour+3*time.Minute, reminder),
			},
			final: &results.AlertState{Probe: "search", ConsecutiveFailures: 5, FailingSince: alertT0, Firing: true,
				LastNotifiedAt: alertT0.Add(time.Hour + 3*time.Minute), Notified: serverErrorMode,
				Modes:     []results.Mode{contractMode, unavailableMode, serverErrorMode},
				Announced: []results.Mode{contractMode, unavailableMode, serverErrorMode}},
		},
		{
			name: "update_on_code_change off: a change of code alone says nothing, of outcome still does",
			notify: func() checks.Notify {
				n := notifyOn(1, time.Hour, true)
				n.UpdateOnCodeChange = false
				return n
			}(),
			steps: []policyStep{
				failAt(unavailable, 0, firing),
				failAt(serverError, time.Minute),
				failAt(contract, 2*time.Minute, update),
			},
		},
		{
			name:   "flapping between two codes updates once per new mode, then at repeat_interval",
			notify: notifyOn(1, time.Hour, true),
			steps: []policyStep{
				failAt(unavailable, 0, firing),
				failAt(serverError, time.Minute, update),
				failAt(unavailable, 2*time.Minute),
				failAt(serverError, 3*time.Minute),
				failAt(unavailable, 4*time.Minute),
				failAt(unavailable, time.Hour+time.Minute, update),
				failAt(serverError, time.Hour+2*time.Minute),
			},
		},
		{
			name:   "on contract_error: only unavailable runs alert nothing at all",
			notify: notifyOn(1, time.Hour, true, "contract_error"),
			steps: []policyStep{
				failAt(unavailable, 0),
				failAt(unavailable, time.Hour),
				failAt(unavailable, 5*time.Hour),
				passAt(6 * time.Hour),
			},
		},
		{
			name:   "shape_drift alone in notify.on alerts no failure",
			notify: notifyOn(1, time.Hour, true, "shape_drift"),
			steps: []policyStep{
				failAt(contract, 0),
				passAt(time.Minute),
			},
		},
		{
			name:   "a flapping probe at threshold 1 alerts every flap",
			notify: notifyOn(1, time.Hour, true),
			steps: []policyStep{
				failAt(contract, 0, firing),
				passAt(time.Minute, resolved),
				failAt(contract, 2*time.Minute, firing).sinceAt(2 * time.Minute),
				passAt(3*time.Minute, resolved).sinceAt(2 * time.Minute),
				failAt(contract, 4*time.Minute, firing).sinceAt(4 * time.Minute),
			},
		},
		{
			name:   "a flapping probe below threshold 3 never alerts",
			notify: notifyOn(3, time.Hour, true),
			steps: []policyStep{
				failAt(contract, 0),
				failAt(contract, time.Minute),
				passAt(2 * time.Minute),
				failAt(contract, 3*time.Minute),
				failAt(contract, 4*time.Minute),
				passAt(5 * time.Minute),
			},
			final: &results.AlertState{Probe: "search"},
		},
		{
			name:   "a run toolpulse canceled changes nothing",
			notify: notifyOn(2, time.Hour, true),
			steps: []policyStep{
				failAt(contract, 0),
				failAt(canceled, time.Minute),
				failAt(contract, 2*time.Minute, firing),
				failAt(canceled, 3*time.Hour),
				failAt(contract, 3*time.Hour+time.Minute, reminder),
			},
			final: &results.AlertState{Probe: "search", ConsecutiveFailures: 3,
				FailingSince: alertT0, Firing: true, LastNotifiedAt: alertT0.Add(3*time.Hour + time.Minute),
				Notified: contractMode, Modes: []results.Mode{contractMode}, Announced: []results.Mode{contractMode}},
		},
		{
			// A consumer passing the provider's own error code through
			// fail() sent one update per run when that code varied.
			name:   "rule-raised codes update for the first three only",
			notify: notifyOn(1, time.Hour, true),
			steps:  ruleCodeStorm(30),
		},
		{
			// A state from before modes were kept has none: the run's
			// mode is taken for the one announced, with no update.
			name:   "state restored after a restart is honoured",
			notify: notifyOn(1, time.Hour, true),
			start:  restored,
			steps: []policyStep{
				failAt(contract, 0),
				failAt(contract, 30*time.Minute, reminder).sinceAt(-2 * time.Hour),
				passAt(31*time.Minute, resolved).sinceAt(-2 * time.Hour),
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := c.start
			for i, s := range c.steps {
				r := policyRun("search", i, s)
				now := r.StartedAt
				before := st
				var alerts []results.Alert
				st, alerts = decide(c.notify, st, r, now, false)
				var kinds []results.AlertKind
				for _, a := range alerts {
					kinds = append(kinds, a.Kind)
				}
				if fmt.Sprint(kinds) != fmt.Sprint(s.want) {
					t.Fatalf("step %d (%s at %v, state before %+v): got alerts %v, want %v",
						i, outcomeName(s), s.at, before, kinds, s.want)
				}
				for _, a := range alerts {
					if want := alertT0.Add(s.since); !a.FailingSince.Equal(want) {
						t.Errorf("step %d: %s alert FailingSince = %v, want %v", i, a.Kind, a.FailingSince, want)
					}
					if a.Probe != "search" || a.OperationID != r.OperationID || a.Outcome != r.Outcome ||
						a.Code != r.Code() || !a.CreatedAt.Equal(now) || a.State != results.DeliveryPending {
						t.Errorf("step %d: alert %+v does not describe run %s at %v", i, a, r.OperationID, now)
					}
				}
				if st.Probe != "search" {
					t.Errorf("step %d: state probe = %q, want search", i, st.Probe)
				}
			}
			if c.final != nil && !sameState(st, *c.final) {
				t.Errorf("final state = %+v, want %+v", st, *c.final)
			}
		})
	}
}

// ruleCodeStorm fires on rule_error, then fails n times in a second each
// with another code a rule raised: only the first maxRuleCodeUpdates of
// them update. A change to a built-in code, or of outcome, still updates
// at once; a later rule-raised code goes out when repeat_interval has
// passed, in place of the reminder.
func ruleCodeStorm(n int) []policyStep {
	steps := []policyStep{failAt(contract, 0, firing)}
	for i := 1; i <= n; i++ {
		s := failAt(results.Code(fmt.Sprintf("upstream_e%d", i)), time.Duration(i)*time.Second)
		if i <= maxRuleCodeUpdates {
			s.want = []results.AlertKind{update}
		}
		steps = append(steps, s)
	}
	end := time.Duration(n) * time.Second
	return append(steps,
		failAt(results.CodeInvalidItem, end+time.Second, update),
		failAt("upstream_e99", end+2*time.Second),
		failAt(unavailable, end+3*time.Second, update),
		failAt("upstream_e98", end+4*time.Second, update), // another outcome than announced
		failAt("upstream_e97", end+5*time.Second),
		failAt("upstream_e96", end+4*time.Second+time.Hour, update),
		failAt("upstream_e96", end+5*time.Second+time.Hour),
		passAt(end+6*time.Second+time.Hour, resolved),
	)
}

func outcomeName(s policyStep) string {
	if s.code == "" {
		return "pass"
	}
	return string(s.code)
}

func TestAlertSameState(t *testing.T) {
	a := results.AlertState{Probe: "p", ConsecutiveFailures: 2, FailingSince: alertT0, Firing: true, LastNotifiedAt: alertT0}
	b := a
	b.FailingSince = alertT0.In(time.FixedZone("x", 3600)) // same instant, other location
	if !sameState(a, b) {
		t.Errorf("sameState(%v, %v) = false for the same instants", a, b)
	}
	for name, change := range map[string]func(*results.AlertState){
		"probe":     func(s *results.AlertState) { s.Probe = "q" },
		"streak":    func(s *results.AlertState) { s.ConsecutiveFailures++ },
		"since":     func(s *results.AlertState) { s.FailingSince = s.FailingSince.Add(1) },
		"firing":    func(s *results.AlertState) { s.Firing = false },
		"notified":  func(s *results.AlertState) { s.LastNotifiedAt = s.LastNotifiedAt.Add(1) },
		"mode":      func(s *results.AlertState) { s.Notified = results.Mode{Outcome: results.Unavailable} },
		"modes":     func(s *results.AlertState) { s.Modes = []results.Mode{{Outcome: results.Unavailable}} },
		"announced": func(s *results.AlertState) { s.Announced = []results.Mode{{Outcome: results.Unavailable}} },
		"receivers": func(s *results.AlertState) { s.Receivers = []string{"default/slack"} },
		"silenced":  func(s *results.AlertState) { s.SilencedAt = alertT0 },
	} {
		c := a
		change(&c)
		if sameState(a, c) {
			t.Errorf("sameState ignores a change of %s", name)
		}
	}
}

// TestAlertModesInMessages: an update says which mode it replaces, and
// the resolved alert lists every mode of the failure in the order they
// first appeared, those before it fired included.
func TestAlertModesInMessages(t *testing.T) {
	n := notifyOn(2, time.Hour, true)
	var st results.AlertState
	var got []results.Alert
	for i, s := range []policyStep{
		failAt(serverError, 0),
		failAt(contract, time.Minute),
		failAt(unavailable, 2*time.Minute),
		failAt(unavailable, 3*time.Minute),
		passAt(4 * time.Minute),
	} {
		r := policyRun("search", i, s)
		var alerts []results.Alert
		st, alerts = decide(n, st, r, r.StartedAt, false)
		got = append(got, alerts...)
	}
	if len(got) != 3 {
		t.Fatalf("alerts %+v, want firing, update and resolved", got)
	}
	if got[0].Kind != firing || got[1].Kind != update || got[2].Kind != resolved {
		t.Fatalf("kinds %s %s %s, want firing update resolved", got[0].Kind, got[1].Kind, got[2].Kind)
	}
	if got[1].Previous != contractMode || results.ModeOf(&results.Result{Outcome: got[1].Outcome, Error: &results.Error{Code: got[1].Code}}) != unavailableMode {
		t.Errorf("update: previous %v, now %s/%s; want previous %v, now %v", got[1].Previous, got[1].Outcome, got[1].Code, contractMode, unavailableMode)
	}
	if want := []results.Mode{serverErrorMode, contractMode, unavailableMode}; fmt.Sprint(got[2].Modes) != fmt.Sprint(want) {
		t.Errorf("resolved modes %v, want %v", got[2].Modes, want)
	}
	if got[0].Previous != (results.Mode{}) || got[0].Modes != nil {
		t.Errorf("firing alert carries previous %v and modes %v, want neither", got[0].Previous, got[0].Modes)
	}
}
