package sqlite_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

func TestRecentRuns(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	minute := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	const es, weather = "external_search", "weather"
	record(t, s,
		runAt("r1", es, minute(0), results.Pass, "", 221, 2),
		runAt("r2", es, minute(1), results.ContractError, "unsupported_results_container", 41, 1),
		runAt("r3", weather, minute(2), results.Unavailable, results.CodeTimeout, 15600, 3),
		runAt("r4", es, minute(3), results.Pass, "", 80, 1),
		// Same millisecond as r4, recorded after it: it counts as later.
		runAt("r5", es, minute(3), results.Unavailable, results.CodeServerError, 900, 2),
	)
	run := func(m int, outcome results.Outcome, ms, attempts int) sqlite.Run {
		return sqlite.Run{StartedAt: minute(m), Outcome: outcome, Duration: time.Duration(ms) * time.Millisecond, Attempts: attempts}
	}
	tests := []struct {
		name   string
		probes []string
		n      int
		want   map[string][]sqlite.Run
	}{
		{"last n, oldest first", []string{es}, 3, map[string][]sqlite.Run{es: {
			run(1, results.ContractError, 41, 1), run(3, results.Pass, 80, 1), run(3, results.Unavailable, 900, 2)}}},
		{"default limit takes all", []string{es, weather}, 0, map[string][]sqlite.Run{
			es: {run(0, results.Pass, 221, 2), run(1, results.ContractError, 41, 1),
				run(3, results.Pass, 80, 1), run(3, results.Unavailable, 900, 2)},
			weather: {run(2, results.Unavailable, 15600, 3)}}},
		{"a probe without runs has no entry", []string{"nope", weather}, 1, map[string][]sqlite.Run{
			weather: {run(2, results.Unavailable, 15600, 3)}}},
		{"a probe named twice is read once", []string{weather, weather}, 5, map[string][]sqlite.Run{
			weather: {run(2, results.Unavailable, 15600, 3)}}},
		{"no probes", nil, 5, map[string][]sqlite.Run{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.RecentRuns(ctx, tt.probes, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("RecentRuns(%q, %d)\n got %+v\nwant %+v", tt.probes, tt.n, got, tt.want)
			}
		})
	}
}

func TestLastDrifts(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	minute := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	drift := func(id, probe string, at time.Time, diff ...string) results.Drift {
		r := runAt(id, probe, at, results.ContractError, "unsupported_results_container", 10, 1)
		d := results.Drift{Probe: probe, OperationID: id, DetectedAt: at, Baseline: fpList, Current: fpMap, Diff: diff}
		recordRun(t, s, &results.RunRecord{Result: r, Drift: &d})
		return d
	}
	drift("d1", "external_search", minute(0), driftDiff...)
	last := drift("d2", "external_search", minute(2), "a: added (null)")
	weather := drift("d3", "weather", minute(1), "temp: number -> string")
	record(t, s, runAt("calm", "calm", minute(3), results.Pass, "", 1, 1))

	got, err := s.LastDrifts(ctx, []string{"external_search", "weather", "calm", "unknown"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]results.Drift{"external_search": last, "weather": weather}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LastDrifts\n got %+v\nwant %+v", got, want)
	}
}
