package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// dominantShape: the fingerprint seen most often for one probe since a
// time, with its count; ties go to the one seen most recently, whatever
// the recording order; other probes and runs without a shape do not
// count.
//
// A store may count from the start of since's UTC hour (SQLite keeps
// hourly counts, so that the read stays cheap): the window checked here
// is exact on whole hours, and a run started earlier in since's hour may
// count or not. Runs of an hour before since's never count.
func dominantShape(t *testing.T, impl Impl) {
	const (
		low  = "0000000000000001" // sorts first: a tie must not fall to it by name
		high = "fffffffffffffffe"
	)
	ctx := context.Background()
	s := impl.Open(t)
	h := func(hour, minute int) time.Time { return time.Date(2026, 10, 26, hour, minute, 0, 0, time.UTC) }
	n := 0
	add := func(probe, fingerprint string, at ...time.Time) {
		for _, a := range at {
			n++
			recordRun(t, s, &results.RunRecord{Result: shapedRun(fmt.Sprint("op-", n), probe, fingerprint, a)})
		}
	}
	// external_search: the list layout at 11h, then the map layout.
	add("external_search", fpList, h(11, 10), h(11, 20), h(11, 30))
	add("external_search", fpMap, h(12, 50), h(12, 5), h(13, 2), h(13, 1))
	noShape := unavailable("op-no-shape")
	noShape.Probe, noShape.StartedAt = "external_search", h(13, 3)
	recordRun(t, s, &results.RunRecord{Result: noShape})
	// Another probe, with far more runs, counts for itself only.
	for i := range 10 {
		add("weather", fpList, h(13, i))
	}
	// Equal counts: the most recently seen wins, across hours and within
	// one, whatever the recording order.
	add("ties", high, h(12, 59), h(12, 1))
	add("ties", low, h(10, 0), h(10, 59))
	add("ties-one-hour", low, h(13, 30), h(13, 20))
	add("ties-one-hour", high, h(13, 40), h(13, 10))
	// More runs of the list layout, but before the window: the map
	// layout, fewer but recent, wins.
	add("old-majority", fpList, h(9, 0), h(9, 10), h(9, 20), h(10, 59))
	add("old-majority", fpMap, h(11, 0), h(11, 30))

	tests := []struct {
		probe string
		since time.Time
		want  string
		count int
		exact bool // false: a store may count the runs earlier in since's hour too
	}{
		{"external_search", h(10, 0), fpMap, 4, true},
		{"external_search", h(11, 0), fpMap, 4, true},
		{"external_search", h(12, 0), fpMap, 4, true},
		{"external_search", h(13, 0), fpMap, 2, true},
		{"external_search", h(14, 0), "", 0, true},
		{"weather", h(0, 0), fpList, 10, true},
		{"nobody", h(0, 0), "", 0, true},
		{"ties", h(0, 0), high, 2, true},
		{"ties", h(11, 0), high, 2, true},
		{"ties-one-hour", h(13, 0), high, 2, true},
		{"old-majority", h(0, 0), fpList, 4, true},
		{"old-majority", h(11, 0), fpMap, 2, true},
		// Within the hour: at least the runs from since on count, and
		// none of an earlier hour does.
		{"external_search", h(12, 30), fpMap, 3, false},
		{"external_search", h(13, 0).Add(-time.Millisecond), fpMap, 2, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s since %s", tt.probe, tt.since.Format("15:04:05.000")), func(t *testing.T) {
			got, count, err := s.DominantShape(ctx, tt.probe, tt.since)
			if err != nil {
				t.Fatal(err)
			}
			if tt.exact && (got != tt.want || count != tt.count) {
				t.Errorf("DominantShape: got %q %d, want %q %d", got, count, tt.want, tt.count)
			}
			// Runs of since's hour: at least count (those from since on),
			// at most all runs of the hour.
			hourRuns := 0
			if !tt.exact {
				hourRuns = 4 // external_search's fpMap runs from 12:00 on
			}
			if !tt.exact && (got != tt.want || count < tt.count || count > hourRuns) {
				t.Errorf("DominantShape: got %q %d, want %q with %d to %d runs", got, count, tt.want, tt.count, hourRuns)
			}
		})
	}
}

// dominantShapeZone: since is an instant; its zone does not move the
// window.
func dominantShapeZone(t *testing.T, impl Impl) {
	s := impl.Open(t)
	at := time.Date(2026, 10, 26, 13, 30, 0, 0, time.UTC)
	recordRun(t, s, &results.RunRecord{Result: shapedRun("op-1", "p", fpList, at)})
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	for _, tt := range []struct {
		since time.Time
		count int
	}{
		{at.In(zone), 1},
		{at.Add(time.Hour).Truncate(time.Hour).In(zone), 0},
	} {
		if _, count, err := s.DominantShape(context.Background(), "p", tt.since); err != nil || count != tt.count {
			t.Errorf("DominantShape since %v: got %d, %v, want %d", tt.since, count, err, tt.count)
		}
	}
}

// lastDriftAtLatest: the latest drift to a fingerprint, whatever the
// recording order.
func lastDriftAtLatest(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	var latest time.Time
	for i, ago := range []time.Duration{time.Hour, 3 * time.Hour, 2 * time.Hour} {
		rec := driftRun("op-" + string(rune('a'+i)))
		rec.Result.StartedAt = rec.Result.StartedAt.Add(-ago)
		rec.Drift.DetectedAt = rec.Result.StartedAt
		rec.Alerts = nil
		rec.AlertState = nil
		recordRun(t, s, rec)
		if i == 0 {
			latest = rec.Drift.DetectedAt
		}
	}
	at, ok, err := s.LastDriftAt(ctx, "external_search", fpMap)
	if err != nil || !ok || !at.Equal(latest) {
		t.Errorf("LastDriftAt: got %v %v %v, want %v true", at, ok, err, latest)
	}
}
