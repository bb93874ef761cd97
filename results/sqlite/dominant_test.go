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

// TestDominantShapeIsHourGranular: this store counts from the start of
// since's UTC hour (its hourly shape_counts), which the contract
// (results/storetest) allows but does not require: a run earlier in that
// hour counts, one of the hour before does not.
func TestDominantShapeIsHourGranular(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	h := func(hour, minute int) time.Time { return time.Date(2026, 10, 26, hour, minute, 0, 0, time.UTC) }
	for i, at := range []time.Time{h(11, 59), h(12, 50), h(12, 5), h(13, 2), h(13, 1)} {
		fp := fpMap
		if i == 0 {
			fp = fpList
		}
		recordRun(t, s, &results.RunRecord{Result: shapedRun(fmt.Sprint("op-", i), "external_search", fp, at)})
	}
	for _, tt := range []struct {
		since time.Time
		count int
	}{
		{h(12, 30), 4}, // the 12:05 run counts although it started before since
		{h(13, 0).Add(-time.Millisecond), 4},
		{h(13, 0), 2},
	} {
		got, count, err := s.DominantShape(ctx, "external_search", tt.since)
		if err != nil || got != fpMap || count != tt.count {
			t.Errorf("DominantShape since %s: got %q %d %v, want %q %d", tt.since.Format("15:04:05.000"), got, count, err, fpMap, tt.count)
		}
	}
}
