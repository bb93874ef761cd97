package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/hourly"
)

// probe_hours (migrations 0005, 0023) sums up each probe's runs per UTC
// hour and location: the
// counters Stats reports, and the runs' durations counted in buckets, from
// which Stats estimates percentiles. It is kept in the transactions that
// change results: RecordRun adds each run (upsertProbeHour), and Prune
// takes away each result it deletes (subtractHours). A row therefore
// always sums up exactly the results stored for its probe, hour and
// location, even after a crash, and Stats can read a day as some 25 rows
// per probe and location.
//
// upsertProbeHour adds one run to its probe, hour and location: ?1 probe,
// ?2 hour, ?10 location, ?3 to ?7 the run's share of pass, contract_error, unavailable,
// passed_after_retries and retries, ?8 its bucket as text and ?9 the JSON
// path of that key. json_set appends a new key at the end of the object;
// the keys' order means nothing.
const upsertProbeHour = `INSERT INTO probe_hours (probe, hour, location, runs, pass, contract_error,
    unavailable, passed_after_retries, retries, duration_buckets)
VALUES (?1, ?2, ?10, 1, ?3, ?4, ?5, ?6, ?7, json_object(?8, 1))
ON CONFLICT (probe, hour, location) DO UPDATE SET
    runs                 = runs + 1,
    pass                 = pass + excluded.pass,
    contract_error       = contract_error + excluded.contract_error,
    unavailable          = unavailable + excluded.unavailable,
    passed_after_retries = passed_after_retries + excluded.passed_after_retries,
    retries              = retries + excluded.retries,
    duration_buckets     = json_set(duration_buckets, ?9, coalesce(duration_buckets ->> ?9, 0) + 1)`

// addProbeHour adds r to probe_hours in tx, the transaction that stores r.
func addProbeHour(ctx context.Context, tx *sql.Tx, r *results.Result) error {
	var run hourly.Sums
	run.Add(string(r.Outcome), int64(r.AttemptCount()), r.Duration.Milliseconds())
	key := strconv.FormatInt(hourly.Bucket(r.Duration.Milliseconds()), 10)
	_, err := tx.ExecContext(ctx, upsertProbeHour, r.Probe, hourOf(r.StartedAt),
		run.Pass, run.ContractError, run.Unavailable, run.PassedAfterRetries, run.Retries,
		key, `$."`+key+`"`, r.RanFrom())
	return err
}

// hourKey names a row of probe_hours.
type hourKey struct{ probe, hour, location string }

const (
	selectProbeHour = `SELECT runs, pass, contract_error, unavailable, passed_after_retries, retries,
    duration_buckets
FROM probe_hours WHERE probe = ? AND hour = ? AND location = ?`
	updateProbeHour = `UPDATE probe_hours SET runs = ?, pass = ?, contract_error = ?, unavailable = ?,
    passed_after_retries = ?, retries = ?, duration_buckets = ?
WHERE probe = ? AND hour = ? AND location = ?`
	deleteProbeHour = `DELETE FROM probe_hours WHERE probe = ? AND hour = ? AND location = ?`
)

// subtractHours takes the runs of deleted, results being deleted in tx,
// away from their rows of probe_hours, and deletes the rows left with no
// run.
func subtractHours(ctx context.Context, tx *sql.Tx, deleted map[hourKey]*hourly.Sums) error {
	keys := make([]hourKey, 0, len(deleted))
	for k := range deleted {
		keys = append(keys, k)
	}
	// In key order: the rows are visited as they lie in the table.
	slices.SortFunc(keys, func(a, b hourKey) int {
		return cmp.Or(cmp.Compare(a.probe, b.probe), cmp.Compare(a.hour, b.hour), cmp.Compare(a.location, b.location))
	})
	for _, k := range keys {
		var (
			h    hourly.Sums
			text []byte
		)
		err := tx.QueryRowContext(ctx, selectProbeHour, k.probe, k.hour, k.location).Scan(&h.Runs, &h.Pass,
			&h.ContractError, &h.Unavailable, &h.PassedAfterRetries, &h.Retries, &text)
		if errors.Is(err, sql.ErrNoRows) {
			continue // nothing to take from
		}
		if err != nil {
			return fmt.Errorf("probe_hours %s %s %s: %w", k.probe, k.hour, k.location, err)
		}
		h.Buckets = map[int64]int64{}
		if err := parseBuckets(text, func(b, n int64) { h.Buckets[b] += n }); err != nil {
			return fmt.Errorf("probe_hours %s %s %s: %w", k.probe, k.hour, k.location, err)
		}
		h.Subtract(deleted[k])
		if h.Runs == 0 {
			_, err = tx.ExecContext(ctx, deleteProbeHour, k.probe, k.hour, k.location)
		} else {
			_, err = tx.ExecContext(ctx, updateProbeHour, h.Runs, h.Pass, h.ContractError, h.Unavailable,
				h.PassedAfterRetries, h.Retries, h.BucketsJSON(), k.probe, k.hour, k.location)
		}
		if err != nil {
			return fmt.Errorf("probe_hours %s %s %s: %w", k.probe, k.hour, k.location, err)
		}
	}
	return nil
}

var errBuckets = errors.New("malformed duration_buckets")

// parseBuckets calls f with each bucket and count of text: one or more
// duration_buckets objects, as written by upsertProbeHour, bucketsJSON or
// migration 0005, separated by commas as group_concat joins them.
func parseBuckets(text []byte, f func(bucket, runs int64)) error {
	i := 0
	for {
		if i >= len(text) || text[i] != '{' {
			return errBuckets
		}
		i++
		if i < len(text) && text[i] == '}' {
			i++
		} else {
			for {
				if i >= len(text) || text[i] != '"' {
					return errBuckets
				}
				b, j, ok := parseCount(text, i+1)
				if !ok || j+1 >= len(text) || text[j] != '"' || text[j+1] != ':' || hourly.Bucket(b) != b {
					return errBuckets
				}
				n, j, ok := parseCount(text, j+2)
				if !ok || j >= len(text) {
					return errBuckets
				}
				f(b, n)
				i = j + 1
				if text[j] == '}' {
					break
				}
				if text[j] != ',' {
					return errBuckets
				}
			}
		}
		if i == len(text) {
			return nil
		}
		if text[i] != ',' {
			return errBuckets
		}
		i++
	}
}

// parseDurations calls f with each duration of text, durations in
// milliseconds separated by commas (group_concat(duration_ms)).
func parseDurations(text []byte, f func(ms int64)) error {
	i := 0
	for {
		ms, j, ok := parseCount(text, i)
		if !ok {
			return errors.New("malformed durations")
		}
		f(ms)
		if j == len(text) {
			return nil
		}
		if text[j] != ',' {
			return errors.New("malformed durations")
		}
		i = j + 1
	}
}

// parseCount reads the decimal number without sign that starts at
// text[i], and returns it and the index after it.
func parseCount(text []byte, i int) (n int64, end int, ok bool) {
	start := i
	for ; i < len(text) && '0' <= text[i] && text[i] <= '9'; i++ {
		d := int64(text[i] - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, i, false
		}
		n = n*10 + d
	}
	return n, i, i > start
}
