package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/hourly"
)

// probe_hours sums up each probe's runs per UTC hour, as in results/sqlite
// (migration 0005 there): the counters Stats reports, and the runs'
// durations counted in buckets, from which Stats estimates percentiles.
// It is kept in the transactions that change results: RecordRun adds each
// run (upsertProbeHour), and Prune takes away each result it deletes
// (subtractHours). A row therefore always sums up exactly the results
// stored for its probe and hour, and Stats can read a day as some 25
// rows per probe.
//
// upsertProbeHour adds one run to its probe and hour: $1 probe, $2 hour,
// $3 to $7 the run's share of pass, contract_error, unavailable,
// passed_after_retries and retries, and $8 its bucket. The bucket's runs
// go up by one where bucket_ms holds it, or it is appended: an assignment
// one past an array's end extends it, to both arrays at the same index.
const upsertProbeHour = `INSERT INTO probe_hours (probe, hour, runs, pass, contract_error, unavailable,
    passed_after_retries, retries, bucket_ms, bucket_runs)
VALUES ($1, $2, 1, $3, $4, $5, $6, $7, ARRAY[$8::bigint], ARRAY[1::bigint])
ON CONFLICT (probe, hour) DO UPDATE SET
    runs                 = probe_hours.runs + 1,
    pass                 = probe_hours.pass + excluded.pass,
    contract_error       = probe_hours.contract_error + excluded.contract_error,
    unavailable          = probe_hours.unavailable + excluded.unavailable,
    passed_after_retries = probe_hours.passed_after_retries + excluded.passed_after_retries,
    retries              = probe_hours.retries + excluded.retries,
    bucket_ms[coalesce(array_position(probe_hours.bucket_ms, $8::bigint), cardinality(probe_hours.bucket_ms) + 1)]
        = $8::bigint,
    bucket_runs[coalesce(array_position(probe_hours.bucket_ms, $8::bigint), cardinality(probe_hours.bucket_ms) + 1)]
        = coalesce(probe_hours.bucket_runs[array_position(probe_hours.bucket_ms, $8::bigint)], 0) + 1`

// queueProbeHour adds r to probe_hours in the transaction that stores r.
func queueProbeHour(p *pipeline, r *results.Result) {
	var run hourly.Sums
	run.Add(string(r.Outcome), int64(r.AttemptCount()), r.Duration.Milliseconds())
	p.exec("probe hour", upsertProbeHour, r.Probe, hourOf(r.StartedAt),
		run.Pass, run.ContractError, run.Unavailable, run.PassedAfterRetries, run.Retries,
		hourly.Bucket(r.Duration.Milliseconds()))
}

// hourKey names a row of probe_hours.
type hourKey struct {
	probe string
	hour  time.Time
}

const (
	selectProbeHour = `SELECT runs, pass, contract_error, unavailable, passed_after_retries, retries,
    bucket_ms, bucket_runs
FROM probe_hours WHERE probe = $1 AND hour = $2
FOR UPDATE`
	updateProbeHour = `UPDATE probe_hours SET runs = $1, pass = $2, contract_error = $3, unavailable = $4,
    passed_after_retries = $5, retries = $6, bucket_ms = $7, bucket_runs = $8
WHERE probe = $9 AND hour = $10`
	deleteProbeHour = `DELETE FROM probe_hours WHERE probe = $1 AND hour = $2`
)

// subtractHours takes the runs of deleted, results being deleted in tx,
// away from their rows of probe_hours, and deletes the rows left with no
// run.
func subtractHours(ctx context.Context, tx pgx.Tx, deleted map[hourKey]*hourly.Sums) error {
	keys := make([]hourKey, 0, len(deleted))
	for k := range deleted {
		keys = append(keys, k)
	}
	// In key order, so that two transactions lock rows in the same order.
	slices.SortFunc(keys, func(a, b hourKey) int {
		return cmp.Or(cmp.Compare(a.probe, b.probe), a.hour.Compare(b.hour))
	})
	for _, k := range keys {
		var (
			h          hourly.Sums
			bucketMS   []int64
			bucketRuns []int64
		)
		err := tx.QueryRow(ctx, selectProbeHour, k.probe, k.hour).Scan(&h.Runs, &h.Pass,
			&h.ContractError, &h.Unavailable, &h.PassedAfterRetries, &h.Retries, &bucketMS, &bucketRuns)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // nothing to take from
		}
		if err != nil {
			return fmt.Errorf("probe_hours %s %s: %w", k.probe, k.hour.Format(hourLayout), err)
		}
		if h.Buckets, err = bucketMap(bucketMS, bucketRuns); err != nil {
			return fmt.Errorf("probe_hours %s %s: %w", k.probe, k.hour.Format(hourLayout), err)
		}
		h.Subtract(deleted[k])
		if h.Runs == 0 {
			_, err = tx.Exec(ctx, deleteProbeHour, k.probe, k.hour)
		} else {
			bucketMS, bucketRuns = bucketArrays(h.Buckets)
			_, err = tx.Exec(ctx, updateProbeHour, h.Runs, h.Pass, h.ContractError, h.Unavailable,
				h.PassedAfterRetries, h.Retries, bucketMS, bucketRuns, k.probe, k.hour)
		}
		if err != nil {
			return fmt.Errorf("probe_hours %s %s: %w", k.probe, k.hour.Format(hourLayout), err)
		}
	}
	return nil
}

// hourLayout spells an hour in errors.
const hourLayout = "2006-01-02T15Z"

var errBuckets = errors.New("malformed duration buckets")

// bucketMap reads a row's bucket_ms and bucket_runs into the buckets of an
// hourly.Sums: each key a duration in milliseconds that is a bucket, mapped
// to its runs.
func bucketMap(ms, runs []int64) (map[int64]int64, error) {
	if len(ms) != len(runs) {
		return nil, fmt.Errorf("%w: %d buckets, %d counts", errBuckets, len(ms), len(runs))
	}
	out := make(map[int64]int64, len(ms))
	for i, b := range ms {
		if b < 0 || hourly.Bucket(b) != b || runs[i] < 0 {
			return nil, fmt.Errorf("%w: %d: %d", errBuckets, b, runs[i])
		}
		out[b] += runs[i]
	}
	return out, nil
}

// bucketArrays is the bucket_ms and bucket_runs of buckets, in bucket order,
// leaving out the buckets no run is left in.
func bucketArrays(buckets map[int64]int64) (ms, runs []int64) {
	for _, b := range slices.Sorted(maps.Keys(buckets)) {
		if n := buckets[b]; n > 0 {
			ms, runs = append(ms, b), append(runs, n)
		}
	}
	return ms, runs
}
