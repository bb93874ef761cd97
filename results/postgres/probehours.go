package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/hourly"
)

// probe_hours sums up each probe's runs per UTC hour and location
// (migration 0007), as in results/sqlite (migrations 0005 and 0023 there): the counters Stats reports, and the runs'
// durations counted in buckets, from which Stats estimates percentiles.
// It is kept in the transactions that change results: RecordRun adds each
// run (upsertProbeHour), and Prune takes away each result it deletes
// (subtractHours). A row therefore always sums up exactly the results
// stored for its probe, hour and location, and Stats can read a day as
// some 25 rows per probe and location.
// Postgres keeps duration_buckets_text (migration 0009), the text it
// prints for duration_buckets, as a stored generated column: Stats reads
// that, and no writer sets it.
//
// upsertProbeHour adds one run to its probe, hour and location: $1 probe,
// $2 hour, $9 location, $3 to $7 the run's share of pass, contract_error, unavailable,
// passed_after_retries and retries, and $8 its bucket as text, a key of
// duration_buckets.
const upsertProbeHour = `INSERT INTO probe_hours (probe, hour, location, runs, pass, contract_error,
    unavailable, passed_after_retries, retries, duration_buckets)
VALUES ($1, $2, $9, 1, $3, $4, $5, $6, $7, jsonb_build_object($8::text, 1))
ON CONFLICT (probe, hour, location) DO UPDATE SET
    runs                 = probe_hours.runs + 1,
    pass                 = probe_hours.pass + excluded.pass,
    contract_error       = probe_hours.contract_error + excluded.contract_error,
    unavailable          = probe_hours.unavailable + excluded.unavailable,
    passed_after_retries = probe_hours.passed_after_retries + excluded.passed_after_retries,
    retries              = probe_hours.retries + excluded.retries,
    duration_buckets     = probe_hours.duration_buckets || jsonb_build_object($8::text,
        coalesce((probe_hours.duration_buckets ->> $8::text)::bigint, 0) + 1)`

// queueProbeHour adds r to probe_hours in the transaction that stores r.
func queueProbeHour(p *pipeline, r *results.Result) {
	var run hourly.Sums
	run.Add(string(r.Outcome), int64(r.AttemptCount()), r.Duration.Milliseconds())
	key := strconv.FormatInt(hourly.Bucket(r.Duration.Milliseconds()), 10)
	p.exec("probe hour", upsertProbeHour, r.Probe, hourOf(r.StartedAt),
		run.Pass, run.ContractError, run.Unavailable, run.PassedAfterRetries, run.Retries, key, r.RanFrom())
}

// hourKey names a row of probe_hours.
type hourKey struct {
	probe    string
	hour     time.Time
	location string
}

const (
	selectProbeHour = `SELECT runs, pass, contract_error, unavailable, passed_after_retries, retries,
    duration_buckets::text
FROM probe_hours WHERE probe = $1 AND hour = $2 AND location = $3
FOR UPDATE`
	updateProbeHour = `UPDATE probe_hours SET runs = $1, pass = $2, contract_error = $3, unavailable = $4,
    passed_after_retries = $5, retries = $6, duration_buckets = $7::text::jsonb
WHERE probe = $8 AND hour = $9 AND location = $10`
	deleteProbeHour = `DELETE FROM probe_hours WHERE probe = $1 AND hour = $2 AND location = $3`
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
		return cmp.Or(cmp.Compare(a.probe, b.probe), a.hour.Compare(b.hour), cmp.Compare(a.location, b.location))
	})
	for _, k := range keys {
		var (
			h    hourly.Sums
			text string
		)
		err := tx.QueryRow(ctx, selectProbeHour, k.probe, k.hour, k.location).Scan(&h.Runs, &h.Pass,
			&h.ContractError, &h.Unavailable, &h.PassedAfterRetries, &h.Retries, &text)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // nothing to take from
		}
		if err != nil {
			return fmt.Errorf("probe_hours %s %s %s: %w", k.probe, k.hour.Format(hourLayout), k.location, err)
		}
		if h.Buckets, err = parseBuckets(text); err != nil {
			return fmt.Errorf("probe_hours %s %s %s: %w", k.probe, k.hour.Format(hourLayout), k.location, err)
		}
		h.Subtract(deleted[k])
		if h.Runs == 0 {
			_, err = tx.Exec(ctx, deleteProbeHour, k.probe, k.hour, k.location)
		} else {
			_, err = tx.Exec(ctx, updateProbeHour, h.Runs, h.Pass, h.ContractError, h.Unavailable,
				h.PassedAfterRetries, h.Retries, h.BucketsJSON(), k.probe, k.hour, k.location)
		}
		if err != nil {
			return fmt.Errorf("probe_hours %s %s %s: %w", k.probe, k.hour.Format(hourLayout), k.location, err)
		}
	}
	return nil
}

// hourLayout spells an hour in errors.
const hourLayout = "2006-01-02T15Z"

var errBuckets = errors.New("malformed duration_buckets")

// parseBuckets reads a duration_buckets object: bucket keys, each a
// duration in milliseconds that is a bucket, mapped to run counts.
func parseBuckets(text string) (map[int64]int64, error) {
	var raw map[string]int64
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", errBuckets, err)
	}
	out := make(map[int64]int64, len(raw))
	for k, n := range raw {
		b, err := strconv.ParseInt(k, 10, 64)
		if err != nil || b < 0 || hourly.Bucket(b) != b || n < 0 {
			return nil, fmt.Errorf("%w: %q: %d", errBuckets, k, n)
		}
		out[b] += n
	}
	return out, nil
}
