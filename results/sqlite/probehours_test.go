package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// refBucket is the bucket of a duration of ms milliseconds as SCHEMA.md
// describes probe_hours, worked out independently of the store: below
// 128 ms a bucket is 1 ms wide, and the width doubles at every power of
// two from there, so that 64 buckets span each. It returns the bucket's
// shortest duration and its width. (For durations a time.Duration can
// hold, below 2^53 ms.)
func refBucket(ms int64) (lo, width int64) {
	width = 1
	for ms >= 128*width {
		width *= 2
	}
	return ms - ms%width, width
}

// estimate is what Stats reports for a percentile whose exact value is
// d: the middle of d's bucket, rounded down to the millisecond.
func estimate(d time.Duration) time.Duration {
	lo, width := refBucket(d.Milliseconds())
	return time.Duration(lo+(width-1)/2) * time.Millisecond
}

// withEstimates returns stats, whose percentiles are exact, with each
// percentile replaced by its estimate, after checking that the estimate
// keeps the bound that ProbeStats documents: exact below 128 ms, less than
// 1/128 of the exact value away from it above.
func withEstimates(t *testing.T, stats []results.ProbeStats) []results.ProbeStats {
	t.Helper()
	out := slices.Clone(stats)
	for i := range out {
		for _, p := range []*time.Duration{&out[i].P50, &out[i].P95, &out[i].P99} {
			exact, est := p.Milliseconds(), estimate(*p).Milliseconds()
			off := max(est-exact, exact-est)
			if (exact < 128 && off != 0) || (exact >= 128 && off*128 >= exact) {
				t.Fatalf("%s: the estimate of %d ms is %d ms, off by more than ProbeStats promises", out[i].Probe, exact, est)
			}
			*p = time.Duration(est) * time.Millisecond
		}
	}
	return out
}

// hourRow is a row of probe_hours, its buckets decoded.
type hourRow struct {
	Runs, Pass, ContractError, Unavailable, PassedAfterRetries, Retries int64
	Buckets                                                             map[int64]int64
}

// probeHoursTable reads probe_hours as an operator would, decoding
// duration_buckets with encoding/json.
func probeHoursTable(t *testing.T, db *sql.DB) map[[2]string]hourRow {
	t.Helper()
	out := map[[2]string]hourRow{}
	for _, row := range queryMaps(t, db, `SELECT * FROM probe_hours`) {
		var raw map[string]int64
		if err := json.Unmarshal([]byte(row["duration_buckets"].(string)), &raw); err != nil {
			t.Fatalf("duration_buckets %v: %v", row["duration_buckets"], err)
		}
		h := hourRow{Runs: row["runs"].(int64), Pass: row["pass"].(int64), ContractError: row["contract_error"].(int64),
			Unavailable: row["unavailable"].(int64), PassedAfterRetries: row["passed_after_retries"].(int64),
			Retries: row["retries"].(int64), Buckets: map[int64]int64{}}
		for k, n := range raw {
			b, err := strconv.ParseInt(k, 10, 64)
			if err != nil || n <= 0 {
				t.Fatalf("duration_buckets %v: key %q, count %d", row["duration_buckets"], k, n)
			}
			h.Buckets[b] = n
		}
		out[[2]string{row["probe"].(string), row["hour"].(string)}] = h
	}
	return out
}

// probeHoursFromResults sums up the results rows as SCHEMA.md says
// probe_hours does.
func probeHoursFromResults(t *testing.T, db *sql.DB) map[[2]string]hourRow {
	t.Helper()
	out := map[[2]string]hourRow{}
	for _, r := range queryMaps(t, db, `SELECT probe, started_at, duration_ms, outcome, attempts FROM results`) {
		k := [2]string{r["probe"].(string), r["started_at"].(string)[:13]}
		h, ok := out[k]
		if !ok {
			h.Buckets = map[int64]int64{}
		}
		h.Runs++
		attempts := r["attempts"].(int64)
		switch r["outcome"] {
		case "pass":
			h.Pass++
			if attempts > 1 {
				h.PassedAfterRetries++
			}
		case "contract_error":
			h.ContractError++
		case "unavailable":
			h.Unavailable++
		}
		if attempts > 1 {
			h.Retries += attempts - 1
		}
		lo, _ := refBucket(r["duration_ms"].(int64))
		h.Buckets[lo]++
		out[k] = h
	}
	return out
}

// randomRun is a run of one of five probes that started in [from, to),
// one in ten of them on the first or the last millisecond of an hour,
// with any outcome, 0 to 3 attempts and a duration from 0 ms to 12 days.
func randomRun(rng *rand.Rand, id string, from, to time.Time) results.Result {
	at := from.Add(time.Duration(rng.Int64N(to.Sub(from).Milliseconds())) * time.Millisecond)
	switch rng.IntN(20) {
	case 0:
		at = at.Truncate(time.Hour)
	case 1:
		at = at.Truncate(time.Hour).Add(-time.Millisecond)
	}
	var ms int
	switch rng.IntN(4) {
	case 0:
		ms = rng.IntN(128)
	case 1:
		ms = 128 + rng.IntN(2000)
	case 2:
		ms = rng.IntN(30_000)
	default:
		ms = rng.IntN(1 << 30)
	}
	outcome := results.Outcomes[rng.IntN(3)]
	code := map[results.Outcome]results.Code{results.ContractError: results.CodeInvalidJSON, results.Unavailable: results.CodeTimeout}[outcome]
	return runAt(id, fmt.Sprint("p", rng.IntN(5)), at, outcome, code, ms, rng.IntN(4))
}

// TestProbeHoursMatchResults is the property that makes probe_hours
// trustworthy: after runs recorded in any order, a prune whose cutoff
// cuts an hour in two, runs recorded late (before the cutoff, as a store
// that was down records its queue), and another prune, probe_hours holds
// exactly what a recount of the stored results gives.
func TestProbeHoursMatchResults(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			ctx := context.Background()
			s, path := newStore(t)
			op := operatorDB(t, path, "mode=ro")
			rng := rand.New(rand.NewPCG(seed, 42))
			end := t0.Truncate(time.Hour)
			n := 0
			recordRandom := func(runs int, from, to time.Time) {
				for range runs {
					n++
					record(t, s, randomRun(rng, fmt.Sprint("r", n), from, to))
				}
			}
			check := func(when string) map[[2]string]hourRow {
				t.Helper()
				got, want := probeHoursTable(t, op), probeHoursFromResults(t, op)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: probe_hours is not the sum of results:\n got  %v\n want %v", when, got, want)
				}
				return got
			}

			recordRandom(400, end.Add(-10*time.Hour), end)
			before := check("after recording")
			cutoff := end.Add(-6*time.Hour + time.Duration(1+rng.Int64N(3_599_998))*time.Millisecond)
			if _, err := s.Prune(ctx, cutoff, 7); err != nil {
				t.Fatal(err)
			}
			after := check("after pruning")
			// The data must exercise what this test claims: an hour that
			// lost some runs to the prune and kept others.
			cut := false
			for k, h := range after {
				cut = cut || (k[1] == cutoff.Format("2006-01-02T15") && h.Runs < before[k].Runs)
			}
			if !cut {
				t.Fatalf("no hour was cut in two by the prune at %v", cutoff)
			}
			recordRandom(60, end.Add(-10*time.Hour), end)
			check("after recording late runs")
			if _, err := s.Prune(ctx, cutoff.Add(2*time.Hour), 1000); err != nil {
				t.Fatal(err)
			}
			check("after a second prune")
		})
	}
}

// TestFailedRecordLeavesProbeHours records runs that fail: a duplicate
// operation id (refused by the results insert), and attempts that repeat
// a number (refused after the result and its probe hour were written).
// Neither leaves a trace in probe_hours: it is written in the run's own
// transaction.
func TestFailedRecordLeavesProbeHours(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	op := operatorDB(t, path, "mode=ro")
	record(t, s,
		runAt("a", "p", t0, results.Pass, "", 40, 1),
		runAt("b", "p", t0.Add(time.Minute), results.ContractError, results.CodeInvalidJSON, 300, 1))
	before := probeHoursTable(t, op)

	dup := runAt("a", "p", t0.Add(2*time.Hour), results.Pass, "", 700, 1)
	if err := s.Record(ctx, dup); !errors.Is(err, sqlite.ErrDuplicate) {
		t.Errorf("Record of a stored operation id: %v, want ErrDuplicate", err)
	}
	repeated := runAt("c", "p", t0.Add(2*time.Minute), results.Pass, "", 900, 2)
	repeated.Attempts[1].Number = 1
	if err := s.Record(ctx, repeated); err == nil {
		t.Error("Record with two attempts numbered 1: no error")
	}
	if got := probeHoursTable(t, op); !reflect.DeepEqual(got, before) {
		t.Errorf("probe_hours after failed records:\n got  %v\n want %v", got, before)
	}
	if got := probeHoursFromResults(t, op); !reflect.DeepEqual(got, before) {
		t.Errorf("results after failed records:\n got  %v\n want %v", got, before)
	}
}

// TestStatsWindowEdges checks which runs Stats counts at the edges of its
// window: the whole hours come from probe_hours and the partial ones from
// results, and a run exactly on since counts while one on until does not,
// whether the bound lies on the hour or not.
func TestStatsWindowEdges(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	h := t0.Truncate(time.Hour) // 13:00
	ms := time.Millisecond
	type run struct {
		at time.Time
		ms int
	}
	var runs []run
	for i, at := range []time.Time{
		h.Add(-ms), h, h.Add(ms), h.Add(30 * time.Minute), h.Add(time.Hour - ms),
		h.Add(time.Hour), h.Add(90 * time.Minute), h.Add(2*time.Hour - ms),
		h.Add(2 * time.Hour), h.Add(2*time.Hour + ms), h.Add(165 * time.Minute),
	} {
		// Durations on both sides of 128 ms, distinct so that every
		// run in or out of the window moves the percentiles.
		d := 20 + 97*i
		runs = append(runs, run{at, d})
		outcome, code := results.Pass, results.Code("")
		if i%3 == 1 {
			outcome, code = results.ContractError, results.CodeInvalidJSON
		}
		record(t, s, runAt(fmt.Sprint("e", i), "p", at, outcome, code, d, 1+i%2))
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
			var in []int
			for _, r := range runs {
				if (tt.since.IsZero() || !r.at.Before(tt.since)) && (tt.until.IsZero() || r.at.Before(tt.until)) {
					in = append(in, r.ms)
				}
			}
			if len(in) == 0 {
				if len(got) != 0 {
					t.Errorf("no run in the window, Stats says %+v", got)
				}
				return
			}
			slices.Sort(in)
			rank := func(p int) time.Duration {
				return estimate(time.Duration(in[(len(in)*p+99)/100-1]) * ms)
			}
			if len(got) != 1 || got[0].Runs != len(in) ||
				got[0].P50 != rank(50) || got[0].P95 != rank(95) || got[0].P99 != rank(99) {
				t.Errorf("Stats: %+v\n want %d runs, p50 %v, p95 %v, p99 %v (durations %v)",
					got, len(in), rank(50), rank(95), rank(99), in)
			}
		})
	}
}
