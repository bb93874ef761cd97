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

// notifies reports whether notify.on lists trigger.
func notifies(n checks.Notify, trigger string) bool {
	return slices.Contains(n.On, trigger)
}

// decide is the alert policy (SPEC §8, gatus's states): given a probe's
// alerting memory st and its latest run r, it returns the new memory and
// the alerts the run calls for, created at now. It is a pure function so
// that every rule can be table-tested without a store or a clock.
//
//   - A pass resets the memory; if a firing alert went out for the streak
//     that ends here and notify.send_resolved is set, it makes a resolved
//     alert that carries the streak's FailingSince.
//   - A non-pass run extends the streak, whatever its outcome, so that a
//     probe alternating between outcomes is still one failure. Only when its
//     outcome is in notify.on can it alert: firing once the streak reaches
//     failure_threshold, then a reminder each time repeat_interval has
//     passed since the last firing or reminder alert.
//   - A run that toolpulse cancelled itself (shutdown) says nothing about
//     the provider, so it leaves the memory as it was and alerts nothing.
//
// Alerts are returned in the pending state; the caller decides whether
// they are delivered or only recorded.
func decide(n checks.Notify, st results.AlertState, r *results.Result, now time.Time) (results.AlertState, []results.Alert) {
	st.Probe = r.Probe
	if r.Outcome == results.Pass {
		var alerts []results.Alert
		if st.Firing && n.SendResolved {
			a := results.NewAlert(results.AlertResolved, r, now)
			a.FailingSince = st.FailingSince
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
	if !notifies(n, string(r.Outcome)) {
		return st, nil
	}
	var kind results.AlertKind
	switch {
	case !st.Firing && st.ConsecutiveFailures >= n.FailureThreshold:
		kind = results.AlertFiring
		st.Firing = true
	case st.Firing && now.Sub(st.LastNotifiedAt) >= n.RepeatInterval:
		kind = results.AlertReminder
	default:
		return st, nil
	}
	st.LastNotifiedAt = now
	a := results.NewAlert(kind, r, now)
	a.FailingSince = st.FailingSince
	return st, []results.Alert{a}
}

// sameState reports whether two alert states are equal, comparing
// instants with Equal: a state read back from the store has lost its
// monotonic reading and location, which == would count as a change.
func sameState(a, b results.AlertState) bool {
	return a.Probe == b.Probe &&
		a.ConsecutiveFailures == b.ConsecutiveFailures &&
		a.FailingSince.Equal(b.FailingSince) &&
		a.Firing == b.Firing &&
		a.LastNotifiedAt.Equal(b.LastNotifiedAt)
}
