package runner

import (
	"fmt"
	"maps"
	"slices"
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

// TestSilentChanges is the location_silent rule, table-tested.
func TestSilentChanges(t *testing.T) {
	now := alertT0.Add(time.Hour)
	earlier := alertT0
	ran := &results.Result{Probe: "search", OperationID: "op-1", Outcome: results.Pass}
	loc := func(name string, silent, everRan bool) judged {
		j := judged{view: results.LocationView{Location: name, Silent: silent}}
		if everRan {
			j.newest = ran
		}
		return j
	}
	names := func(js []judged) []string {
		var out []string
		for _, j := range js {
			out = append(out, j.view.Location)
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		announced    map[string]time.Time
		locs         []judged
		want         map[string]time.Time
		silent, back []string
	}{
		{name: "all recording, none announced",
			locs: []judged{loc("eu", false, true), loc("us", false, true)}},
		{name: "a location turns silent: announced now",
			locs: []judged{loc("eu", false, true), loc("us", true, true)},
			want: map[string]time.Time{"us": now}, silent: []string{"us"}},
		{name: "still silent: kept with its time, not announced again",
			announced: map[string]time.Time{"us": earlier},
			locs:      []judged{loc("eu", false, true), loc("us", true, true)},
			want:      map[string]time.Time{"us": earlier}},
		{name: "records again: back",
			announced: map[string]time.Time{"us": earlier},
			locs:      []judged{loc("eu", false, true), loc("us", false, true)},
			back:      []string{"us"}},
		{name: "never ran: not announced",
			locs: []judged{loc("eu", false, true), loc("ap", true, false)}},
		{name: "dropped from the probe: forgotten without an alert",
			announced: map[string]time.Time{"gone": earlier},
			locs:      []judged{loc("eu", false, true)}},
		{name: "two at once, one back",
			announced: map[string]time.Time{"eu": earlier},
			locs:      []judged{loc("eu", false, true), loc("us", true, true), loc("ap", true, true)},
			want:      map[string]time.Time{"us": now, "ap": now}, silent: []string{"us", "ap"}, back: []string{"eu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, silent, back := silentChanges(tc.announced, tc.locs, now)
			if !maps.EqualFunc(next, tc.want, time.Time.Equal) || (next == nil) != (tc.want == nil) {
				t.Errorf("announced after: %v, want %v", next, tc.want)
			}
			if !slices.Equal(names(silent), tc.silent) || !slices.Equal(names(back), tc.back) {
				t.Errorf("silent %v back %v, want silent %v back %v", names(silent), names(back), tc.silent, tc.back)
			}
		})
	}
}

// TestSilentAlerts: a location_silent alert quotes the location's run and
// shows its view alone; a silence skips it, but never a location_back.
func TestSilentAlerts(t *testing.T) {
	r := &results.Result{Probe: "search", OperationID: "op-7", Outcome: results.Pass}
	ap := judged{view: results.LocationView{Location: "ap", Silent: true}, newest: r}
	us := judged{view: results.LocationView{Location: "us"}, newest: r}
	got := silentAlerts([]judged{ap}, []judged{us}, alertT0, true)
	if len(got) != 2 {
		t.Fatalf("alerts: %+v, want two", got)
	}
	if a := got[0]; a.Kind != results.AlertLocationSilent || a.OperationID != "op-7" || a.State != results.DeliverySkipped ||
		a.LastError != silencedError || len(a.Locations) != 1 || a.Locations[0].Location != "ap" || a.Decider != results.DeciderLease {
		t.Errorf("the silenced location_silent alert: %+v", a)
	}
	if b := got[1]; b.Kind != results.AlertLocationBack || b.State != results.DeliveryPending || b.Locations[0].Location != "us" {
		t.Errorf("the location_back alert under a silence: %+v, want pending", b)
	}
}
