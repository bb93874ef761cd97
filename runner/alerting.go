package runner

import (
	"slices"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// notifyShapeDrift is notify.on's trigger for drift alerts; the others are
// outcome names.
const notifyShapeDrift = string(results.AlertDrift)

// silencedError is the last error of an alert a silence kept back.
const silencedError = "silenced"

// notifies reports whether notify.on lists trigger.
func notifies(n checks.Notify, trigger string) bool {
	return slices.Contains(n.On, trigger)
}

// decideAlerts is the decide stage: the probe's alert state after the
// run, and the alerts the run calls for, in the order they are recorded and
// delivered. A run that fails and drifts sends its drift events first (the
// change is the cause, the failure its impact); a run that resolves the
// failure sends the resolved alert first, then its drift events.
func decideAlerts(run *recording) {
	notify := run.route.Notify
	drifted := driftAlerts(notify, run.r, run.drifts, run.now, run.silenced)
	next, alerts := decide(notify, run.state, run.r, run.now, run.silenced)
	if moved := movedFiring(notify, run.state, next, alerts, run.to, run.r, run.now, run.silenced); moved != nil {
		alerts = append(alerts, *moved)
	}
	run.next, run.alerts = next, withDrifts(alerts, drifted)
}

// driftAlerts returns a shape_drift alert for each drift of run r, in
// order, when notify is on shape_drift; recorded as skipped when the
// probe is silenced.
func driftAlerts(notify checks.Notify, r *results.Result, drifts []*results.Drift, now time.Time, silenced bool) []results.Alert {
	if !notifies(notify, notifyShapeDrift) {
		return nil
	}
	var out []results.Alert
	for _, drift := range drifts {
		a := results.NewAlert(results.AlertDrift, r, now)
		a.Drift = drift
		if silenced {
			a.State, a.LastError = results.DeliverySkipped, silencedError
		}
		out = append(out, a)
	}
	return out
}

// withDrifts orders a run's drift alerts with its failure's: a drift
// explains a failure, so it goes first; on a run that resolves the
// failure, the resolved message goes first and each drift says that its
// run resolved it.
func withDrifts(alerts, drifted []results.Alert) []results.Alert {
	if !slices.ContainsFunc(alerts, func(a results.Alert) bool { return a.Kind == results.AlertResolved }) {
		return append(drifted, alerts...)
	}
	for i := range drifted {
		drifted[i].Resolving = true
	}
	return append(alerts, drifted...)
}

// decide is the alert policy (SPEC §8, gatus's states), a pure function:
// from a probe's alert state st and its run r, the new state and the
// alerts r calls for, created at now, pending unless silenced.
//
//   - A pass resets the state; if the streak it ends fired and
//     send_resolved is set, a resolved alert carries its FailingSince and
//     modes (even while silenced: a silence mutes trouble, not its end).
//   - Any other outcome extends the streak and adds its mode; the streak
//     fires at failure_threshold, on a run whose outcome notify.on lists.
//   - While firing, a run in another mode than the last announced sends an
//     update whatever notify.on says (another outcome; another code unless
//     update_on_code_change is off): at once for a mode the streak never
//     announced, else at repeat_interval, so flapping cannot flood. Only
//     the first maxRuleCodeUpdates rule-raised codes of a streak are news
//     at once.
//   - Otherwise a firing streak whose outcome notify.on lists sends a
//     reminder every repeat_interval.
//   - A run toolpulse cancelled itself changes nothing and alerts nothing.
//   - While silenced, the alert is returned skipped ("silenced"), at most
//     once per repeat_interval (SilencedAt), and is not counted as
//     announced: the streak alerts when the silence ends.
func decide(n checks.Notify, st results.AlertState, r *results.Result, now time.Time, silenced bool) (results.AlertState, []results.Alert) {
	st.Probe = r.Probe
	if r.Outcome == results.Pass {
		var alerts []results.Alert
		if st.Firing && n.SendResolved {
			a := results.NewAlert(results.AlertResolved, r, now)
			a.FailingSince, a.Modes = st.FailingSince, st.Modes
			alerts = append(alerts, a)
		}
		return results.AlertState{Probe: r.Probe}, alerts
	}
	if r.Code() == results.CodeCanceled {
		return st, nil
	}

	st.ConsecutiveFailures++
	if st.FailingSince.IsZero() {
		st.FailingSince = r.StartedAt
		if st.FailingSince.IsZero() {
			st.FailingSince = now
		}
	}
	mode := results.ModeOf(r)
	st.Modes = results.AddMode(st.Modes, mode)
	if st.Firing && st.Notified == (results.Mode{}) {
		// A state from a release that kept no modes: take this run's.
		st.Notified, st.Announced = mode, results.AddMode(st.Announced, mode)
	}
	due := now.Sub(st.LastNotifiedAt) >= n.RepeatInterval
	var kind results.AlertKind
	switch {
	case !st.Firing:
		if !notifies(n, string(r.Outcome)) || st.ConsecutiveFailures < n.FailureThreshold {
			return st, nil
		}
		kind = results.AlertFiring
		st.Firing = true
	case modeChanged(n, st.Notified, mode) && (isNews(st, mode) || due):
		kind = results.AlertUpdate
	case notifies(n, string(r.Outcome)) && due:
		kind = results.AlertReminder
	default:
		return st, nil
	}
	a := results.NewAlert(kind, r, now)
	a.FailingSince = st.FailingSince
	if kind == results.AlertUpdate {
		a.Previous = st.Notified
	}
	if silenced {
		if kind == results.AlertFiring {
			st.Firing = false
		}
		if !st.SilencedAt.IsZero() && !now.Before(st.SilencedAt) && now.Sub(st.SilencedAt) < n.RepeatInterval {
			return st, nil
		}
		st.SilencedAt = now
		a.State, a.LastError = results.DeliverySkipped, silencedError
		return st, []results.Alert{a}
	}
	st.LastNotifiedAt, st.Notified, st.SilencedAt = now, mode, time.Time{}
	st.Announced = results.AddMode(st.Announced, mode)
	return st, []results.Alert{a}
}

// maxRuleCodeUpdates is how many rule-raised codes of one streak an update
// announces at once: a provider's own codes may vary on every run.
const maxRuleCodeUpdates = 3

// isNews reports whether a run in mode, not the last announced, is news at
// once rather than at repeat_interval (see decide).
func isNews(st results.AlertState, mode results.Mode) bool {
	if results.HasMode(st.Announced, mode) {
		return false
	}
	if mode.Outcome != st.Notified.Outcome || !ruleRaised(mode.Code) {
		return true
	}
	seen := 0
	for _, m := range st.Modes { // in the order they first appeared
		if !ruleRaised(m.Code) {
			continue
		}
		if seen++; seen > maxRuleCodeUpdates {
			return false
		}
		if m == mode {
			return true
		}
	}
	return false // past the modes the state keeps
}

// ruleRaised reports whether a rule's fail() raised code, not toolpulse.
func ruleRaised(code results.Code) bool {
	return code != "" && !slices.Contains(results.UnavailableCodes, code) && !slices.Contains(results.ContractCodes, code)
}

// modeChanged reports whether mode tells another story than was: another
// outcome, or code with update_on_code_change.
func modeChanged(n checks.Notify, was, mode results.Mode) bool {
	return mode.Outcome != was.Outcome || (n.UpdateOnCodeChange && mode.Code != was.Code)
}

// sameState reports whether two alert states are equal, instants by Equal
// (a stored state has lost its monotonic reading and location).
func sameState(a, b results.AlertState) bool {
	return a.Probe == b.Probe &&
		a.ConsecutiveFailures == b.ConsecutiveFailures &&
		a.FailingSince.Equal(b.FailingSince) &&
		a.Firing == b.Firing &&
		a.LastNotifiedAt.Equal(b.LastNotifiedAt) &&
		a.Notified == b.Notified &&
		slices.Equal(a.Modes, b.Modes) &&
		slices.Equal(a.Announced, b.Announced) &&
		slices.Equal(a.Receivers, b.Receivers) &&
		a.SilencedAt.Equal(b.SilencedAt)
}
