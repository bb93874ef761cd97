package runner

import (
	"maps"
	"slices"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// addressAlerts is the address stage: each alert names what the run
// called (probeTarget), scrubbed of known secrets, and goes to its
// receivers (see address).
func (rc *Recorder) addressAlerts(run *recording) {
	for i := range run.alerts {
		if t := run.target.of(run.r, run.alerts[i].Drift); t != "" {
			run.alerts[i].Target = rc.redact(t)
		}
	}
	run.alerts, run.next.Receivers = address(run.alerts, run.to, run.labels, run.now)
	if !run.next.Firing {
		run.next.Receivers = nil
	}
}

// addressing is who a run's alerts can go to.
type addressing struct {
	// current are the receivers of the probe's route; none when alerts
	// are only recorded.
	current []string
	// told are the receivers an alert of the firing streak went to.
	told []string
	// configured holds every receiver of the config, by key.
	configured map[string]bool
}

// address gives each alert the probe's labels and makes one copy of it
// for each receiver it goes to, pending and due now: every receiver goes
// through the outbox on its own, so one that is down holds up no other.
// An alert with no receiver to go to, or silenced (already skipped), is
// recorded once, skipped, for no receiver.
//
// Who gets what follows the failure, not only the route, since a reload
// can move a firing probe to another route:
//
//   - A firing, reminder or update alert goes to the route's receivers. A
//     receiver that was not told of the failure yet gets it as a firing
//     alert (it has nothing to remind of or update), and a firing alert
//     is not sent again to a receiver already told.
//   - A resolved alert goes to every receiver told of the failure that is
//     still configured, wherever the probe's route points now: the team
//     that was paged is the team that hears it is over, and an
//     Alertmanager that was posted the alert ends it.
//   - A shape_drift alert is an event: it goes to the route's receivers.
//
// It returns the alerts and the receivers told of the failure after them.
func address(alerts []results.Alert, to addressing, labels map[string]string, now time.Time) ([]results.Alert, []string) {
	told := slices.Clone(to.told)
	if len(alerts) == 0 {
		return alerts, told
	}
	out := make([]results.Alert, 0, len(alerts)*max(1, len(to.current)))
	for _, a := range alerts {
		a.Labels = maps.Clone(labels)
		if a.State == results.DeliverySkipped {
			a.NextAttemptAt = time.Time{}
			out = append(out, a)
			continue
		}
		var copies []results.Alert
		for _, key := range targets(a.Kind, to) {
			b := a
			b.Labels = maps.Clone(labels)
			b.Receiver, b.State, b.NextAttemptAt = key, results.DeliveryPending, now
			if streakAlert(a.Kind) && !slices.Contains(to.told, key) {
				b.Kind, b.Previous = results.AlertFiring, results.Mode{}
				if !slices.Contains(told, key) {
					told = append(told, key)
				}
			} else if a.Kind == results.AlertFiring {
				continue // told already
			}
			copies = append(copies, b)
		}
		if len(copies) == 0 {
			a.State, a.NextAttemptAt = results.DeliverySkipped, time.Time{}
			copies = append(copies, a)
		}
		out = append(out, copies...)
	}
	return out, told
}

// targets returns the receivers an alert of kind goes to (see address).
func targets(kind results.AlertKind, to addressing) []string {
	if kind != results.AlertResolved {
		return to.current
	}
	var out []string
	for _, key := range to.told {
		if to.configured[key] {
			out = append(out, key)
		}
	}
	return out
}

// streakAlert reports whether kind tells of a failure that goes on: firing,
// reminder or update.
func streakAlert(kind results.AlertKind) bool {
	return kind == results.AlertFiring || kind == results.AlertReminder || kind == results.AlertUpdate
}

// movedFiring returns the firing alert that a probe already firing owes
// the receivers of its route that were not told of the failure (a reload
// moved it there, or gave its route another receiver), when this run calls
// for no alert of the failure that would tell them anyway; nil when there
// is none to make. The new receivers are told at the probe's next failed
// run, if notify.on of its route lists the run's outcome and no silence
// covers it.
func movedFiring(n checks.Notify, st, next results.AlertState, alerts []results.Alert, to addressing, r *results.Result, now time.Time, silenced bool) *results.Alert {
	if !st.Firing || !next.Firing || silenced || !notifies(n, string(r.Outcome)) {
		return nil
	}
	if slices.ContainsFunc(alerts, func(a results.Alert) bool { return streakAlert(a.Kind) }) {
		return nil
	}
	if !slices.ContainsFunc(to.current, func(key string) bool { return !slices.Contains(to.told, key) }) {
		return nil
	}
	a := results.NewAlert(results.AlertFiring, r, now)
	a.FailingSince = next.FailingSince
	return &a
}
