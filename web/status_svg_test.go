package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

func TestStrip(t *testing.T) {
	run := func(o results.Outcome) results.RecentRun { return results.RecentRun{Outcome: o} }
	tests := []struct {
		name     string
		runs     []results.RecentRun
		capacity int
		want     strip
	}{
		{"no runs: an empty track", nil, 5, strip{Width: 30, Height: 18, Track: "M0 17h30v1h-30z", Summary: "no runs yet"}},
		{"right-aligned, one path per outcome, heights by outcome",
			[]results.RecentRun{run(results.Pass), run(results.ContractError), run(results.Unavailable), run(results.Pass)}, 5,
			strip{Width: 30, Height: 18, Track: "M0 17h6v1h-6z", Runs: 4, Passed: 2,
				Paths: []stripPath{
					{results.Pass, "M6 0h5v18h-5zM24 0h5v18h-5z"},
					{results.ContractError, "M12 6h5v12h-5z"},
					{results.Unavailable, "M18 12h5v6h-5z"},
				},
				Summary: "last 4 runs, oldest to newest: 2 pass, 1 contract_error, 1 unavailable"}},
		{"more runs than cells: the newest stay",
			[]results.RecentRun{run(results.Unavailable), run(results.Pass), run(results.Pass)}, 2,
			strip{Width: 12, Height: 18, Runs: 2, Passed: 2,
				Paths:   []stripPath{{results.Pass, "M0 0h5v18h-5zM6 0h5v18h-5z"}},
				Summary: "last 2 runs, oldest to newest: 2 pass"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := newStrip(tt.runs, tt.capacity); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("newStrip\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestSparkline(t *testing.T) {
	ms := func(ds ...int) []results.RecentRun {
		var runs []results.RecentRun
		for _, d := range ds {
			runs = append(runs, results.RecentRun{Duration: time.Duration(d) * time.Millisecond})
		}
		return runs
	}
	tests := []struct {
		name           string
		runs           []results.RecentRun
		points         string
		last, p95, max time.Duration
	}{
		{"no runs: nothing to draw", nil, "", 0, 0, 0},
		{"one run: a level line at its height", ms(40), "1.0,1.0 149.0,1.0", 40 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond},
		{"scaled to the slowest, evenly spaced", ms(10, 40, 20), "1.0,22.0 75.0,1.0 149.0,15.0",
			20 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond},
		{"all under a millisecond: flat at the bottom", ms(0, 0), "1.0,29.0 149.0,29.0", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newSparkline(tt.runs)
			if got.Points != tt.points || got.Last != tt.last || got.P95 != tt.p95 || got.Max != tt.max {
				t.Errorf("newSparkline = %+v, want points %q, last %v, p95 %v, max %v", got, tt.points, tt.last, tt.p95, tt.max)
			}
		})
	}
	// p95 by nearest rank over 20 runs is the 19th slowest.
	durations := make([]int, 20)
	for i := range durations {
		durations[i] = (i + 1) * 10
	}
	if got := newSparkline(ms(durations...)).P95; got != 190*time.Millisecond {
		t.Errorf("p95 of 10..200ms = %v, want 190ms", got)
	}
}
