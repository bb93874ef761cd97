package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// refEstimate is what Stats reports for a percentile whose exact value is
// ms milliseconds, worked out independently of any store: below 128 ms a
// bucket is 1 ms wide, and the width doubles at every power of two from
// there; the estimate is the middle of the bucket, rounded down.
func refEstimate(ms int) time.Duration {
	width := 1
	for ms >= 128*width {
		width *= 2
	}
	lo := ms - ms%width
	return time.Duration(lo+(width-1)/2) * time.Millisecond
}

// statsWindowEdges: runs on and around UTC hour boundaries, and early
// and late in an hour, count exactly when they started in [since, until),
// whichever way a store splits the window (whole hours summed up ahead,
// the hours cut by the window's ends read run by run, or an hour's sum
// less the runs outside the window): runs, outcomes, retries, percentiles
// and the last run.
func statsWindowEdges(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	h := t0.Truncate(time.Hour) // 13:00
	ms := time.Millisecond
	type run struct {
		at       time.Time
		ms       int
		outcome  results.Outcome
		attempts int
	}
	var runs []run
	for i, at := range []time.Time{
		h.Add(-55 * time.Minute), h.Add(-ms), h, h.Add(ms), h.Add(30 * time.Minute), h.Add(time.Hour - ms),
		h.Add(time.Hour), h.Add(90 * time.Minute), h.Add(2*time.Hour - ms),
		h.Add(2 * time.Hour), h.Add(2*time.Hour + ms), h.Add(165 * time.Minute), h.Add(175 * time.Minute),
	} {
		// Durations on both sides of 128 ms, distinct so that every
		// run in or out of the window moves the percentiles.
		r := run{at: at, ms: 20 + 97*i, outcome: results.Pass, attempts: 1 + i%2}
		code := results.Code("")
		if i%3 == 1 {
			r.outcome, code = results.ContractError, results.CodeInvalidJSON
		}
		runs = append(runs, r)
		record(t, s, runAt(fmt.Sprint("e", i), "p", at, r.outcome, code, r.ms, r.attempts))
	}
	zone := time.FixedZone("UTC+05:30", 5*3600+1800)
	for _, tt := range []struct {
		name         string
		since, until time.Time
	}{
		{"on the hour", h, h.Add(2 * time.Hour)},
		{"since a millisecond before the hour", h.Add(-ms), h.Add(2 * time.Hour)},
		{"since a millisecond after the hour", h.Add(ms), h.Add(2 * time.Hour)},
		{"until a millisecond after the hour", h, h.Add(2*time.Hour + ms)},
		{"until a millisecond before the hour", h, h.Add(2*time.Hour - ms)},
		{"since early in an hour", h.Add(-50 * time.Minute), h.Add(2 * time.Hour)},
		{"until late in an hour", h, h.Add(170 * time.Minute)},
		{"both ends deep in their hours", h.Add(-50 * time.Minute), h.Add(170 * time.Minute)},
		{"within one hour", h.Add(ms), h.Add(time.Hour - ms)},
		{"across one boundary, no whole hour", h.Add(30 * time.Minute), h.Add(90 * time.Minute)},
		{"one whole hour and both edges", h.Add(30 * time.Minute), h.Add(150 * time.Minute)},
		{"since only, off the hour", h.Add(ms), time.Time{}},
		{"until only, off the hour", time.Time{}, h.Add(2*time.Hour + ms)},
		{"everything", time.Time{}, time.Time{}},
		{"since below a millisecond rounds up", h.Add(500 * time.Microsecond), h.Add(2 * time.Hour)},
		{"another time zone", h.Add(ms).In(zone), h.Add(2 * time.Hour).In(zone)},
		{"until before since", h.Add(2 * time.Hour), h},
		{"empty", h.Add(time.Hour), h.Add(time.Hour)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Stats(ctx, tt.since, tt.until)
			if err != nil {
				t.Fatal(err)
			}
			var (
				in   []int
				want = results.ProbeStats{Probe: "p", LastKind: results.ProbeHTTP}
			)
			for _, r := range runs {
				if (tt.since.IsZero() || !r.at.Before(tt.since)) && (tt.until.IsZero() || r.at.Before(tt.until)) {
					in = append(in, r.ms)
					want.Runs++
					switch r.outcome {
					case results.Pass:
						want.Pass++
						if r.attempts > 1 {
							want.PassedAfterRetries++
						}
					case results.ContractError:
						want.ContractError++
					}
					want.Retries += r.attempts - 1
					want.LastStartedAt, want.LastOutcome = r.at, r.outcome
				}
			}
			if len(in) == 0 {
				if len(got) != 0 {
					t.Errorf("no run in the window, Stats says %+v", got)
				}
				return
			}
			slices.Sort(in)
			rank := func(p int) time.Duration { return refEstimate(in[(len(in)*p+99)/100-1]) }
			want.P50, want.P95, want.P99 = rank(50), rank(95), rank(99)
			if len(got) != 1 {
				t.Fatalf("Stats: %+v, want probe p alone", got)
			}
			g := got[0]
			g.LastCode, g.OutcomeSince, g.DriftEvents = "", time.Time{}, 0
			if g != want {
				t.Errorf("Stats:\n got  %+v\n want %+v (durations %v)", g, want, in)
			}
		})
	}
}
