package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// locRuns builds a location's runs from a pattern, oldest first: 'F' a
// timeout, 'P' a pass, 'C' a run toolpulse cancelled, one a minute, the
// newest started at newest.
func locRuns(location, pattern string, newest time.Time) locationRuns {
	lr := locationRuns{Location: location}
	for i := len(pattern) - 1; i >= 0; i-- {
		r := results.Result{OperationID: fmt.Sprintf("%s-%d", location, i), Probe: "search", Location: location,
			StartedAt: newest.Add(-time.Duration(len(pattern)-1-i) * time.Minute), Outcome: results.Pass}
		switch pattern[i] {
		case 'F':
			r.Fail(results.NewError(unavailable, "timed out"))
		case 'C':
			r.Fail(results.NewError(canceled, "cancelled"))
		}
		lr.Runs = append(lr.Runs, r)
	}
	return lr
}

// TestFleetVerdict holds the fleet-wide rule: thresholds counted per
// location, then K of N, silent locations neither firing nor resolving.
func TestFleetVerdict(t *testing.T) {
	now := alertT0.Add(time.Hour)
	fresh, stale := now.Add(-30*time.Second), now.Add(-5*time.Minute)
	const silent = 2*time.Minute + silentGrace
	three := notifyOn(3, time.Hour, true)
	window := hyst(func(n *checks.Notify) { n.FailureWindow = checks.FailureWindow{Failures: 2, Runs: 4} })
	twoPasses := hyst(func(n *checks.Notify) { n.SuccessThreshold = 2 })
	type loc struct {
		pattern string
		at      time.Time
	}
	cases := []struct {
		name        string
		notify      checks.Notify
		k           int
		was         bool
		locs        []loc
		wantFailing []bool // per location
		wantSilent  []bool
		want        bool
	}{
		{"threshold 3: one location at 2 failures, another at 3: one failing", three, 2, false,
			[]loc{{"PFF", fresh}, {"FFF", fresh}, {"PPP", fresh}}, []bool{false, true, false}, nil, false},
		{"two of three failing by their own threshold fire", three, 2, false,
			[]loc{{"FFFF", fresh}, {"FFF", fresh}, {"PPP", fresh}}, []bool{true, true, false}, nil, true},
		{"a cancelled run counts for nothing", three, 2, false,
			[]loc{{"FFCF", fresh}, {"FFF", fresh}, {"P", fresh}}, []bool{true, true, false}, nil, true},
		{"failure_window per location", window, 2, false,
			[]loc{{"PFPF", fresh}, {"PPPF", fresh}, {"FPPF", fresh}}, []bool{true, false, true}, nil, true},
		{"success_threshold per location: one pass keeps it failing", twoPasses, 2, true,
			[]loc{{"FP", fresh}, {"FPP", fresh}, {"FF", fresh}}, []bool{true, false, true}, nil, true},
		{"fewer than K failing resolves", hystTimeout, 2, true,
			[]loc{{"FP", fresh}, {"F", fresh}, {"P", fresh}}, []bool{false, true, false}, nil, false},
		{"a silent failing location does not fire", hystTimeout, 2, false,
			[]loc{{"F", stale}, {"F", fresh}, {"P", fresh}}, []bool{false, true, false}, []bool{true, false, false}, false},
		{"a silent location does not resolve", hystTimeout, 2, true,
			[]loc{{"F", stale}, {"F", fresh}, {"P", fresh}}, []bool{false, true, false}, []bool{true, false, false}, true},
		{"resolves when the silent ones could not make K", hystTimeout, 2, true,
			[]loc{{"F", stale}, {"P", fresh}, {"P", fresh}}, []bool{false, false, false}, []bool{true, false, false}, false},
		{"K live failing fire whatever the silent one did", hystTimeout, 2, false,
			[]loc{{"P", stale}, {"F", fresh}, {"F", fresh}}, nil, []bool{true, false, false}, true},
		{"a location that never ran is silent", hystTimeout, 2, false,
			[]loc{{"", fresh}, {"F", fresh}, {"P", fresh}}, nil, []bool{true, false, false}, false},
		{"every location silent: the decision stands", hystTimeout, 2, true,
			[]loc{{"F", stale}, {"P", stale}, {"P", stale}}, nil, []bool{true, true, true}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var judgedLocs []judged
			for i, l := range tc.locs {
				judgedLocs = append(judgedLocs, judgeLocation(tc.notify, locRuns(fmt.Sprintf("loc-%d", i), l.pattern, l.at), now, silent))
			}
			vs := views(judgedLocs)
			for i, v := range vs {
				if tc.wantFailing != nil && v.Failing != tc.wantFailing[i] {
					t.Errorf("location %d failing = %v, want %v", i, v.Failing, tc.wantFailing[i])
				}
				if tc.wantSilent != nil && v.Silent != tc.wantSilent[i] {
					t.Errorf("location %d silent = %v, want %v", i, v.Silent, tc.wantSilent[i])
				}
			}
			if got := kOfN(tc.k, vs, tc.was); got != tc.want {
				t.Errorf("kOfN(%d, %+v, %v) = %v, want %v", tc.k, vs, tc.was, got, tc.want)
			}
		})
	}
}
