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

// addressing is who a run's alerts can go to, by receiver key.
type addressing struct {
	current    []string        // the probe's route's; none when alerts are only recorded
	told       []string        // those an alert of the firing streak went to
	configured map[string]bool // every receiver of the config
	// groups are the groupings of the receivers whose routes group their
	// alerts (see groupings); an alert to one of them gets its group key.
	groups map[string]checks.Grouping
}

// address gives each alert the probe's labels and makes one copy of it
// per receiver, pending and due now, so that a receiver that is down holds
// up no other. An alert with no receiver, or already skipped, is recorded
// once, skipped, for none. Who gets what follows the failure, since a
// reload can move a firing probe to another route:
//
//   - firing, reminder and update go to the route's receivers; one not yet
//     told of the failure gets a firing alert, and one told gets no second;
//   - resolved goes to every receiver told of the failure that is still
//     configured, wherever the route points now;
//   - shape_drift, an event, goes to the route's receivers;
//   - flapping goes to the route's receivers, who are then told of the
//     failure: the firing or resolved alert that ends it is theirs.
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
			if a.Kind == results.AlertFlapping && !slices.Contains(told, key) {
				told = append(told, key) // where it settles is theirs to hear
			}
			if streakAlert(a.Kind) && !slices.Contains(to.told, key) {
				b.Kind, b.Previous = results.AlertFiring, results.Mode{}
				if !slices.Contains(told, key) {
					told = append(told, key)
				}
			} else if a.Kind == results.AlertFiring {
				continue // told already
			}
			b.GroupKey = groupKey(b.Kind, key, to.groups, labels)
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

// movedFiring returns the firing alert a probe already firing owes the
// receivers of its route not yet told of the failure (after a reload),
// when the run calls for no streak alert that would tell them and its
// outcome is in notify.on and no silence covers it and it is not flapping
// (quiet until it settles); nil otherwise.
func movedFiring(n checks.Notify, st, next results.AlertState, alerts []results.Alert, to addressing, r *results.Result, now time.Time, silenced bool) *results.Alert {
	if !st.Firing || !next.Firing || next.Flapping || silenced || !notifies(n, string(r.Outcome)) {
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
