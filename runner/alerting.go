package runner

import (
	"slices"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// notifyShapeDrift is the notify.on trigger for shape drift alerts; the
// other triggers are outcome names.
const notifyShapeDrift = string(results.AlertDrift)

// silencedError is the last error of an alert recorded, not sent, because
// a silence covered its probe.
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

// decide is the alert policy (SPEC §8, gatus's states): given a probe's
// alerting memory st and its latest run r, it returns the new memory and
// the alerts the run calls for, created at now. It is a pure function so
// that every rule can be table-tested without a store or a clock.
//
//   - A pass resets the memory; if a firing alert went out for the streak
//     that ends here and notify.send_resolved is set, it makes a resolved
//     alert that carries the streak's FailingSince and its modes.
//   - A non-pass run extends the streak, whatever its outcome, so that a
//     probe alternating between outcomes is still one failure, and adds
//     its mode (outcome and code) to the streak's modes.
//   - Before the streak fires, only a run whose outcome is in notify.on
//     can alert: firing once the streak reaches failure_threshold.
//   - While it fires, a run in another mode than the last alert announced
//     sends an update: always for a change of outcome, and for a change
//     of code unless notify.update_on_code_change is off. A mode no alert
//     of the streak announced yet is news at once; a return to one already
//     announced (a probe flapping between timeout and server_error) waits
//     for repeat_interval, as a reminder does, so flapping cannot flood
//     the channel. The update is sent whatever notify.on says: the alert
//     that is firing would otherwise tell the wrong story.
//   - A code a rule raises (fail(code, ...)) may be derived from the
//     answer, and vary on every run: a change to such a code, the outcome
//     staying the same, is news at once only for the first
//     maxRuleCodeUpdates rule-raised codes of the streak. A later one
//     waits for repeat_interval, so it goes out in place of the next
//     reminder and a provider cannot turn its own error codes into one
//     message per run; a built-in code is always news.
//   - Otherwise a firing streak whose outcome is in notify.on sends a
//     reminder each time repeat_interval has passed since the last alert.
//   - A run that toolpulse cancelled itself (shutdown) says nothing about
//     the provider, so it leaves the memory as it was and alerts nothing.
//   - While the probe is silenced, the run counts as any other, but the
//     alert it calls for (not a resolved one, which ends what receivers
//     were told before the silence) is returned skipped with last error
//     "silenced",
//     and the memory does not count it as announced: the streak does not
//     start firing and its last notification and modes stay as they were.
//     So when the silence ends on a probe still failing, the next run
//     alerts then. Since nothing was announced, every run of a silenced
//     failure calls for that alert again; it is recorded once per
//     repeat_interval (the memory's SilencedAt), which is enough to tell
//     from the alerts table what the silence kept back.
//
// Alerts are returned in the pending state, unless silenced; the caller
// decides whether pending ones are delivered or only recorded.
func decide(n checks.Notify, st results.AlertState, r *results.Result, now time.Time, silenced bool) (results.AlertState, []results.Alert) {
	st.Probe = r.Probe
	if r.Outcome == results.Pass {
		var alerts []results.Alert
		if st.Firing && n.SendResolved {
			// Sent even while silenced: the receivers were told the probe
			// is failing, and an Alertmanager would go on showing it
			// firing. A silence mutes news of trouble, not its end.
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
		// A state kept by a release that did not remember modes: which
		// mode the firing alert announced is unknown, so this run's is
		// taken for it rather than sending an update that may be news to
		// no one.
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

// maxRuleCodeUpdates is how many rule-raised codes of one failure are
// announced at once by an update when the code changes; the metrics keep
// a few more (results/prometheus caps them at 32 per probe).
const maxRuleCodeUpdates = 3

// isNews reports whether a run in mode, another than the last alert
// announced, is news at once rather than at the next repeat_interval: a
// mode no alert of the streak announced, unless only its code changed to
// a rule-raised code beyond the first maxRuleCodeUpdates of the streak.
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

// ruleRaised reports whether code is none of toolpulse's own, so a rule's
// fail() raised it; the metrics tell them apart the same way.
func ruleRaised(code results.Code) bool {
	return code != "" && !slices.Contains(results.UnavailableCodes, code) && !slices.Contains(results.ContractCodes, code)
}

// modeChanged reports whether a run in mode tells another story than the
// alert that announced was: another outcome, or another code when
// notify.update_on_code_change is on.
func modeChanged(n checks.Notify, was, mode results.Mode) bool {
	return mode.Outcome != was.Outcome || (n.UpdateOnCodeChange && mode.Code != was.Code)
}

// sameState reports whether two alert states are equal, comparing
// instants with Equal: a state read back from the store has lost its
// monotonic reading and location, which == would count as a change.
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
