package runner

import (
	"slices"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// The fleet-wide verdict (SPEC §13, docs/locations.md): for a probe that
// runs from several locations, each location's runs are judged alone by
// the probe's own thresholds (judge, replayed over its recent runs), then
// K of N decides:
//
//   - a location whose newest run started more than two intervals (plus
//     silentGrace) before the store's clock, or that never ran, is silent:
//     it counts neither as failing nor as passing;
//   - the probe is failing fleet-wide when at least K locations that are
//     not silent are failing: a silent location never fires (a dead
//     location fakes no outage);
//   - it is passing when fewer than K would be failing even if every
//     silent location were: a silent location never resolves (a dead
//     location hides no outage);
//   - in between (the silent locations could tip it either way), the last
//     decision stands.

// silentGrace is added to two intervals before a location counts as
// silent: the jitter of its schedule and the time its runs take to be
// written.
const silentGrace = 10 * time.Second

// silentAfter is how long after its newest run a location of p turns
// silent.
func silentAfter(p *checks.Probe) time.Duration { return 2*p.Interval + silentGrace }

// locationRuns are one location's recent runs of a probe, newest first,
// as History returns them.
type locationRuns struct {
	Location string
	Runs     []results.Result
}

// judged is one location's part of the verdict: its view and its state
// after replaying its runs.
type judged struct {
	view  results.LocationView
	state results.AlertState
	// newest is its newest run that counts (not cancelled), nil when none.
	newest *results.Result
}

// judgeLocation replays judge over a location's runs (newest first), from
// a state that knows nothing, at each run's start: the location's
// verdict by n's thresholds. A run toolpulse cancelled itself counts for
// nothing, as in decide. The location is silent when its newest run
// started silent or more before now.
func judgeLocation(n checks.Notify, lr locationRuns, now time.Time, silent time.Duration) judged {
	j := judged{view: results.LocationView{Location: lr.Location}}
	if len(lr.Runs) > 0 {
		newest := &lr.Runs[0]
		j.view.Outcome, j.view.Code, j.view.LastRun = newest.Outcome, newest.Code(), newest.StartedAt
	}
	for i := len(lr.Runs) - 1; i >= 0; i-- {
		r := &lr.Runs[i]
		if r.Outcome != results.Pass && r.Code() == results.CodeCanceled {
			continue
		}
		j.state, _ = judge(n, j.state, r, r.StartedAt)
		j.newest = r
	}
	if j.view.LastRun.IsZero() || now.Sub(j.view.LastRun) > silent {
		j.view.Silent = true
		return j
	}
	j.view.Failing = j.state.Failing
	return j
}

// kOfN is the fleet's verdict from its locations' views: failing when at
// least k locations that are not silent are failing; passing when fewer
// than k are even counting every silent one as failing; otherwise was,
// the last decision.
func kOfN(k int, views []results.LocationView, was bool) bool {
	failing, silent := 0, 0
	for _, v := range views {
		switch {
		case v.Silent:
			silent++
		case v.Failing:
			failing++
		}
	}
	switch {
	case failing >= k:
		return true
	case failing+silent < k:
		return false
	}
	return was
}

// replayRuns is how many of a location's newest runs judgeLocation needs
// to see what n's thresholds see: the failures that trip it, the passes
// that resolve it, and, with flapping, the runs within its window and
// stable_for.
func replayRuns(n checks.Notify, interval time.Duration) int {
	runs := n.FailureThreshold + n.Successes()
	if n.FailureWindow.Enabled() {
		runs += n.FailureWindow.Runs
	}
	if n.Flapping.Enabled() && interval > 0 {
		runs += int((n.Flapping.Window+n.Flapping.StableFor)/interval) + 1
	}
	return min(max(runs, 1), maxReplayRuns)
}

// maxReplayRuns bounds the runs replayed per location and decision.
const maxReplayRuns = 500

// fleetState is the probe's alert state for the fleet's verdict failing,
// from its state before (prev) and the failing locations' states: it
// fails since the earliest of them, in their modes, and forgets both once
// it passes. The counters of one location's runs stay zero: the fleet's
// state is a verdict, not a streak.
func fleetState(prev results.AlertState, probe string, failing bool, locs []judged) results.AlertState {
	st := prev
	st.Probe, st.Failing = probe, failing
	st.ConsecutiveFailures, st.ConsecutivePasses, st.Window, st.WindowRuns = 0, 0, 0, 0
	if !failing {
		st.FailingSince, st.Modes = time.Time{}, nil
		return st
	}
	for _, j := range locs {
		if !j.view.Failing {
			continue
		}
		if since := j.state.FailingSince; st.FailingSince.IsZero() || (!since.IsZero() && since.Before(st.FailingSince)) {
			st.FailingSince = since
		}
		for _, m := range j.state.Modes {
			st.Modes = results.AddMode(st.Modes, m)
		}
	}
	return st
}

// spokesman is the run a fleet-wide alert speaks of: when failing, the
// newest failed run of a failing location; otherwise the newest run of a
// location that is not silent; nil when none.
func spokesman(failing bool, locs []judged) *results.Result {
	var out *results.Result
	for _, j := range locs {
		r := j.newest
		if r == nil || j.view.Silent || (failing && (!j.view.Failing || r.Outcome == results.Pass)) {
			continue
		}
		if out == nil || r.StartedAt.After(out.StartedAt) {
			out = r
		}
	}
	if out == nil && failing {
		// Every failing location's newest run passed (below
		// success_threshold): announce stays quiet on a pass.
		for _, j := range locs {
			if j.view.Failing && j.newest != nil && (out == nil || j.newest.StartedAt.After(out.StartedAt)) {
				out = j.newest
			}
		}
	}
	return out
}

// views are the locations' views, in order.
func views(locs []judged) []results.LocationView {
	out := make([]results.LocationView, len(locs))
	for i, j := range locs {
		out[i] = j.view
	}
	return slices.Clip(out)
}

// silentChanges is the location_silent rule for one probe of several
// locations: from the locations announced silent before (announced, each
// with when) and the locations' verdicts now, the locations to announce
// silent now, those announced that recorded again, and the locations
// announced after both, nil for none:
//
//   - a silent location not yet announced is announced, at now, when it
//     ran at all: one that never ran has no run to quote, and is shown as
//     silent in the probe's messages;
//   - an announced location still silent stays announced, with its time;
//   - an announced location that is not silent any more is back;
//   - an announced location the probe no longer runs from is forgotten,
//     without an alert: the config dropped it.
func silentChanges(announced map[string]time.Time, locs []judged, now time.Time) (next map[string]time.Time, silent, back []judged) {
	for _, j := range locs {
		at, was := announced[j.view.Location]
		switch {
		case j.view.Silent && was:
		case j.view.Silent && j.newest != nil:
			silent = append(silent, j)
			at, was = now, true
		case was:
			back = append(back, j)
			was = false
		}
		if was {
			if next == nil {
				next = map[string]time.Time{}
			}
			next[j.view.Location] = at
		}
	}
	return next, silent, back
}

// silentAlerts are the alerts of silentChanges: a location_silent alert
// for each location in silent and a location_back for each in back, each
// quoting that location's newest run and showing its view alone, made by
// the decider at now. A silence covering the probe records the
// location_silent alerts skipped; a location_back is never muted.
func silentAlerts(silent, back []judged, now time.Time, silenced bool) []results.Alert {
	var out []results.Alert
	add := func(kind results.AlertKind, j judged) {
		a := results.NewAlert(kind, j.newest, now)
		a.Locations, a.Decider = []results.LocationView{j.view}, results.DeciderLease
		if kind == results.AlertLocationSilent && silenced {
			a.State, a.LastError = results.DeliverySkipped, silencedError
		}
		out = append(out, a)
	}
	for _, j := range silent {
		add(results.AlertLocationSilent, j)
	}
	for _, j := range back {
		add(results.AlertLocationBack, j)
	}
	return out
}
