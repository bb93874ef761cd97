package runner

import (
	"maps"
	"math/bits"
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
	if slices.ContainsFunc(alerts, func(a results.Alert) bool { return a.Kind == results.AlertFiring }) {
		// The policy fires a probe no receiver is told is firing: one
		// that was not, or one whose flapping settled failing, which
		// those told of the flapping must hear too.
		run.to.told = nil
	}
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

// decide is the alert policy (SPEC §8, §13, gatus's states), a pure
// function: from a probe's alert state st and its run r, the new state
// and the alerts r calls for, created at now, pending unless silenced. It
// is judge, the verdict of the probe's thresholds, then announce, what
// the verdict calls for; a run toolpulse cancelled itself changes
// nothing and alerts nothing.
func decide(n checks.Notify, st results.AlertState, r *results.Result, now time.Time, silenced bool) (results.AlertState, []results.Alert) {
	if r.Outcome != results.Pass && r.Code() == results.CodeCanceled {
		st.Probe = r.Probe
		return st, nil
	}
	next, v := judge(n, st, r, now)
	return announce(n, st, next, v, r, now, silenced)
}

// verdict is what judge concluded from one run.
type verdict struct {
	// failing is the verdict after the run (AlertState.Failing).
	failing bool
	// flapping: the verdict changes too often; announce stays quiet but
	// for flapStarted's one alert.
	flapping, flapStarted bool
	// settled: the probe stopped flapping at this run, which agrees with
	// the verdict; announce says where it settled.
	settled bool
}

// judge is the verdict step of the alert policy, a pure function of the
// counting part of the state (what one location's runs say, before any
// announcement): the state after run r at now, and its verdict.
//
//   - A run that does not pass extends the streak (ConsecutiveFailures,
//     FailingSince, Modes) and makes the probe failing once
//     failure_threshold consecutive runs failed, or, with failure_window,
//     once failures of the last runs (at most MaxWindowRuns, kept as a
//     bitmask) did.
//   - A pass while failing counts towards success_threshold: that many
//     consecutive passes make the probe passing again, and a failure in
//     between starts the count again. A pass while not yet failing ends
//     the streak, as gatus does: failure_threshold counts consecutive
//     failures. With failure_window the streak's start and modes stay
//     while a failure is in the window.
//   - When the verdict turns passing, the window starts empty, so a lone
//     failure after a recovery is not the last of a window of old ones.
//   - With notify.flapping, each change of the verdict is remembered; a
//     probe whose verdict changed more than changes times within window
//     is flapping, until a run that agrees with the verdict comes
//     stable_for after its last change: then it has settled.
func judge(n checks.Notify, st results.AlertState, r *results.Result, now time.Time) (results.AlertState, verdict) {
	st.Probe = r.Probe
	st.Failing = st.IsFailing()
	was := st.Failing
	failed := r.Outcome != results.Pass
	if n.FailureWindow.Enabled() {
		st.Window <<= 1
		if failed {
			st.Window |= 1
		}
		st.WindowRuns = min(st.WindowRuns+1, results.MaxWindowRuns)
	} else {
		st.Window, st.WindowRuns = 0, 0
	}
	switch {
	case failed:
		st.ConsecutiveFailures++
		st.ConsecutivePasses = 0
		if st.FailingSince.IsZero() {
			st.FailingSince = r.StartedAt
			if st.FailingSince.IsZero() {
				st.FailingSince = now
			}
		}
		st.Modes = results.AddMode(st.Modes, results.ModeOf(r))
		if !st.Failing && tripped(n, st) {
			st.Failing = true
		}
	case st.Failing:
		st.ConsecutivePasses++
		if st.ConsecutivePasses >= n.Successes() {
			st.Failing = false
			st.Window, st.WindowRuns = 0, 0
		}
	}
	if !failed && !st.Failing {
		st.ConsecutiveFailures, st.ConsecutivePasses = 0, 0
		if windowFailures(n, st) == 0 {
			st.FailingSince, st.Modes = time.Time{}, nil
		}
	}
	v := verdict{failing: st.Failing}
	st, v.flapping, v.flapStarted, v.settled = flaps(n.Flapping, st, st.Failing != was, failed == st.Failing, now)
	return st, v
}

// tripped reports whether st's streak makes the probe failing:
// failure_threshold consecutive failures, or failure_window's failures
// among its last runs.
func tripped(n checks.Notify, st results.AlertState) bool {
	if n.FailureWindow.Enabled() {
		return windowFailures(n, st) >= n.FailureWindow.Failures
	}
	return st.ConsecutiveFailures >= n.FailureThreshold
}

// windowFailures counts the failed runs among failure_window's last runs;
// 0 without a window.
func windowFailures(n checks.Notify, st results.AlertState) int {
	if !n.FailureWindow.Enabled() {
		return 0
	}
	mask := ^uint64(0)
	if runs := n.FailureWindow.Runs; runs < results.MaxWindowRuns {
		mask = 1<<runs - 1
	}
	return bits.OnesCount64(st.Window & mask)
}

// flaps is the flapping part of judge: st after a run that changed the
// verdict or not, and agrees with it or not; whether the probe is
// flapping after it, started to at it, or settled at it. Without
// notify.flapping a probe never flaps, and one that was (the key was
// removed by a reload) settles at once.
func flaps(f checks.Flapping, st results.AlertState, changed, agrees bool, now time.Time) (_ results.AlertState, flapping, started, settled bool) {
	if !f.Enabled() {
		st.VerdictChanges = nil
		if st.Flapping && agrees {
			st.Flapping, st.FlappingSince = false, time.Time{}
			return st, false, false, true
		}
		return st, st.Flapping, false, false
	}
	if changed {
		st.VerdictChanges = append(st.VerdictChanges[:len(st.VerdictChanges):len(st.VerdictChanges)], now)
	}
	// Changes older than the window no longer count, but the newest is
	// kept: it says how long the verdict has been stable.
	recent := st.VerdictChanges[:0:0]
	for i, t := range st.VerdictChanges {
		if now.Sub(t) < f.Window || i == len(st.VerdictChanges)-1 {
			recent = append(recent, t)
		}
	}
	if len(recent) > f.Changes+1 {
		recent = recent[len(recent)-f.Changes-1:]
	}
	if len(recent) == 0 {
		recent = nil
	}
	st.VerdictChanges = recent
	switch {
	case !st.Flapping:
		inWindow := 0
		for _, t := range recent {
			if now.Sub(t) < f.Window {
				inWindow++
			}
		}
		if inWindow > f.Changes {
			st.Flapping, st.FlappingSince = true, now
			return st, true, true, false
		}
		return st, false, false, false
	case agrees && (len(recent) == 0 || now.Sub(recent[len(recent)-1]) >= f.StableFor):
		// The changes that made it flap do not count towards the next
		// time: it starts again from a stable verdict.
		st.Flapping, st.FlappingSince, st.VerdictChanges = false, time.Time{}, nil
		return st, false, false, true
	}
	return st, true, false, false
}

// announce is the announcement step of the alert policy, a pure function:
// from the state before the run (prev), the state judge made of it (st)
// and its verdict v, the new state and the alerts run r calls for.
//
//   - While flapping, the one alert is the flapping alert when it starts
//     (which counts as firing: the resolved alert ends it); nothing else
//     until it settles. Then a failing probe fires, whoever was told of
//     the flapping, and a passing one that fired resolves.
//   - A run after which the probe is not failing resets the announcement
//     state; if the probe was firing and send_resolved is set, a resolved
//     alert carries its FailingSince and modes (even while silenced: a
//     silence mutes trouble, not its end).
//   - A pass that leaves the probe failing (below success_threshold)
//     alerts nothing.
//   - A failing probe fires on a run whose outcome notify.on lists.
//   - While firing, a run in another mode than the last announced sends an
//     update whatever notify.on says (another outcome; another code unless
//     update_on_code_change is off): at once for a mode the streak never
//     announced, else at repeat_interval, so flapping cannot flood. Only
//     the first maxRuleCodeUpdates rule-raised codes of a streak are news
//     at once.
//   - Otherwise a firing streak whose outcome notify.on lists sends a
//     reminder every repeat_interval.
//   - While silenced, the alert is returned skipped ("silenced"), at most
//     once per repeat_interval (SilencedAt), and is not counted as
//     announced: the streak alerts when the silence ends.
func announce(n checks.Notify, prev, st results.AlertState, v verdict, r *results.Result, now time.Time, silenced bool) (results.AlertState, []results.Alert) {
	if v.flapStarted {
		return flapped(n, st, r, now, silenced)
	}
	if v.flapping {
		return st, nil
	}
	if !v.failing {
		var alerts []results.Alert
		if st.Firing && n.SendResolved {
			a := results.NewAlert(results.AlertResolved, r, now)
			a.FailingSince, a.Modes = prev.FailingSince, prev.Modes
			if a.FailingSince.IsZero() {
				a.FailingSince = prev.FlappingSince // it resolved while flapping
			}
			alerts = append(alerts, a)
		}
		st.Firing, st.LastNotifiedAt, st.Notified = false, time.Time{}, results.Mode{}
		st.Announced, st.Receivers, st.SilencedAt = nil, nil, time.Time{}
		return st, alerts
	}
	if r.Outcome == results.Pass {
		return st, nil
	}
	mode := results.ModeOf(r)
	if st.Firing && st.Notified == (results.Mode{}) {
		// A state from a release that kept no modes: take this run's.
		st.Notified, st.Announced = mode, results.AddMode(st.Announced, mode)
	}
	due := now.Sub(st.LastNotifiedAt) >= n.RepeatInterval
	var kind results.AlertKind
	switch {
	case v.settled && (st.Firing || notifies(n, string(r.Outcome))):
		kind = results.AlertFiring
		st.Firing = true
	case !st.Firing:
		if !notifies(n, string(r.Outcome)) {
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
		return silence(n, st, a, now)
	}
	st.LastNotifiedAt, st.Notified, st.SilencedAt = now, mode, time.Time{}
	st.Announced = results.AddMode(st.Announced, mode)
	return st, []results.Alert{a}
}

// flapped is announce at the run a probe started flapping: one flapping
// alert, after which the probe counts as firing, so that its receivers
// hear where it settles.
func flapped(n checks.Notify, st results.AlertState, r *results.Result, now time.Time, silenced bool) (results.AlertState, []results.Alert) {
	a := results.NewAlert(results.AlertFlapping, r, now)
	a.FailingSince = st.FailingSince
	if silenced {
		return silence(n, st, a, now)
	}
	st.Firing, st.SilencedAt = true, time.Time{}
	return st, []results.Alert{a}
}

// silence returns alert a recorded skipped for a silence, unless one was
// within repeat_interval.
func silence(n checks.Notify, st results.AlertState, a results.Alert, now time.Time) (results.AlertState, []results.Alert) {
	if !st.SilencedAt.IsZero() && !now.Before(st.SilencedAt) && now.Sub(st.SilencedAt) < n.RepeatInterval {
		return st, nil
	}
	st.SilencedAt = now
	a.State, a.LastError = results.DeliverySkipped, silencedError
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
		a.SilencedAt.Equal(b.SilencedAt) &&
		a.IsFailing() == b.IsFailing() &&
		a.ConsecutivePasses == b.ConsecutivePasses &&
		a.Window == b.Window && a.WindowRuns == b.WindowRuns &&
		a.Flapping == b.Flapping &&
		a.FlappingSince.Equal(b.FlappingSince) &&
		slices.EqualFunc(a.VerdictChanges, b.VerdictChanges, time.Time.Equal) &&
		maps.EqualFunc(a.SilentLocations, b.SilentLocations, time.Time.Equal)
}
