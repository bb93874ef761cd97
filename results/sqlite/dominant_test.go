package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// shapedRun is a pass of probe started at at, with a shape of fingerprint.
func shapedRun(id, probe, fingerprint string, at time.Time) results.Result {
	r := passAfterRetry(id)
	r.Probe = probe
	r.StartedAt = at
	for i := range r.Attempts {
		r.Attempts[i].StartedAt = at.Add(time.Duration(i) * 100 * time.Millisecond)
	}
	r.Shape = &results.Shape{Fingerprint: fingerprint, Canonical: "shape " + fingerprint}
	return r
}

func TestDominantShape(t *testing.T) {
	const (
		low  = "0000000000000001" // sorts first: a tie must not fall to it by name
		high = "fffffffffffffffe"
	)
	ctx := context.Background()
	s, _ := newStore(t)
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

	tests := []struct {
		probe string
		since time.Time
		want  string
		count int
	}{
		{"external_search", h(10, 0), fpMap, 4},
		{"external_search", h(11, 0), fpMap, 4},
		{"external_search", h(12, 0), fpMap, 4},
		// Hour-granular: the 12:05 run counts although it started before since.
		{"external_search", h(12, 30), fpMap, 4},
		{"external_search", h(13, 0), fpMap, 2},
		{"external_search", h(13, 0).Add(-time.Millisecond), fpMap, 4},
		{"external_search", h(14, 0), "", 0},
		{"weather", h(0, 0), fpList, 10},
		{"nobody", h(0, 0), "", 0},
		{"ties", h(0, 0), high, 2},
		{"ties", h(11, 0), high, 2},
		{"ties-one-hour", h(13, 0), high, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s since %s", tt.probe, tt.since.Format("15:04:05.000")), func(t *testing.T) {
			got, count, err := s.DominantShape(ctx, tt.probe, tt.since)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || count != tt.count {
				t.Errorf("DominantShape: got %q %d, want %q %d", got, count, tt.want, tt.count)
			}
		})
	}
}

// TestDominantShapeSinceInAnotherZone: since is an instant; its zone does
// not move the window.
func TestDominantShapeSinceInAnotherZone(t *testing.T) {
	s, _ := newStore(t)
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
