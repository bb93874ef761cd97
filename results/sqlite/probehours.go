package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"

	"github.com/toolpulse/toolpulse/results"
)

// probe_hours (migration 0005) sums up each probe's runs per UTC hour: the
// counters Stats reports, and the runs' durations counted in buckets, from
// which Stats estimates percentiles. It is kept in the transactions that
// change results: RecordRun adds each run (upsertProbeHour), and Prune
// takes away each result it deletes (subtractHours). A row therefore
// always sums up exactly the results stored for its probe and hour, even
// after a crash, and Stats can read a day as some 25 rows per probe.
//
// A bucket is named by the shortest duration, in milliseconds, it holds.
// Below exactBelow every bucket is one millisecond wide; from there on
// each power of two [2^k, 2^(k+1)) is split into 2^subBucketBits buckets
// of 2^(k-subBucketBits) ms, so that a bucket is never wider than 1/64 of
// the durations it holds. Migration 0005 spells the same function out in
// SQL for its backfill (TestUpgradeTo0005BackfillsProbeHours holds the two
// together).
const (
	subBucketBits = 6
	exactBelow    = 1 << (subBucketBits + 1) // 128 ms
	// numBuckets is how many buckets cover every duration up to the
	// largest int64: exactBelow exact ones, then 2^subBucketBits per power
	// of two from 2^7 to 2^62.
	numBuckets = exactBelow + (63-subBucketBits-1)<<subBucketBits
)

// bucketOf returns the bucket a duration of ms milliseconds (ms >= 0)
// falls in.
func bucketOf(ms int64) int64 {
	if ms < exactBelow {
		return ms
	}
	shift := bits.Len64(uint64(ms)) - subBucketBits - 1
	return ms >> shift << shift
}

// bucketEstimate is the duration that stands for every run in bucket b:
// its middle, rounded down. For a duration d in b it is off by at most
// half the bucket's width, which is less than d/128.
func bucketEstimate(b int64) int64 {
	if b < exactBelow {
		return b
	}
	width := int64(1) << (bits.Len64(uint64(b)) - subBucketBits - 1)
	return b + (width-1)/2
}

// bucketIndex numbers the buckets 0, 1, 2... in the order of their
// durations; b must be a bucket (bucketOf(b) == b).
func bucketIndex(b int64) int {
	if b < exactBelow {
		return int(b)
	}
	k := bits.Len64(uint64(b)) - 1 // b is in [2^k, 2^(k+1))
	return exactBelow + (k-subBucketBits-1)<<subBucketBits + int(b>>(k-subBucketBits)) - 1<<subBucketBits
}

// bucketAt is the bucket numbered i by bucketIndex.
func bucketAt(i int) int64 {
	if i < exactBelow {
		return int64(i)
	}
	j := i - exactBelow
	k := j>>subBucketBits + subBucketBits + 1
	return int64(j&(1<<subBucketBits-1)+1<<subBucketBits) << (k - subBucketBits)
}

// upsertProbeHour adds one run to its probe and hour: ?1 probe, ?2 hour,
// ?3 to ?7 the run's share of pass, contract_error, unavailable,
// passed_after_retries and retries, ?8 its bucket as text and ?9 the JSON
// path of that key. json_set appends a new key at the end of the object;
// the keys' order means nothing.
const upsertProbeHour = `INSERT INTO probe_hours (probe, hour, runs, pass, contract_error, unavailable,
    passed_after_retries, retries, duration_buckets)
VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?7, json_object(?8, 1))
ON CONFLICT (probe, hour) DO UPDATE SET
    runs                 = runs + 1,
    pass                 = pass + excluded.pass,
    contract_error       = contract_error + excluded.contract_error,
    unavailable          = unavailable + excluded.unavailable,
    passed_after_retries = passed_after_retries + excluded.passed_after_retries,
    retries              = retries + excluded.retries,
    duration_buckets     = json_set(duration_buckets, ?9, coalesce(duration_buckets ->> ?9, 0) + 1)`

// addProbeHour adds r to probe_hours in tx, the transaction that stores r.
func addProbeHour(ctx context.Context, tx *sql.Tx, r *results.Result) error {
	var run hourSums
	run.add(string(r.Outcome), int64(r.AttemptCount()), r.Duration.Milliseconds())
	key := strconv.FormatInt(bucketOf(r.Duration.Milliseconds()), 10)
	_, err := tx.ExecContext(ctx, upsertProbeHour, r.Probe, hourOf(r.StartedAt),
		run.pass, run.contractError, run.unavailable, run.passedAfterRetries, run.retries,
		key, `$."`+key+`"`)
	return err
}

// hourSums is what some runs of one probe and hour add up to: a row of
// probe_hours.
type hourSums struct {
	runs, pass, contractError, unavailable, passedAfterRetries, retries int64
	buckets                                                             map[int64]int64
}

// add counts one run as probe_hours does.
func (h *hourSums) add(outcome string, attempts, ms int64) {
	h.runs++
	switch results.Outcome(outcome) {
	case results.Pass:
		h.pass++
		if attempts > 1 {
			h.passedAfterRetries++
		}
	case results.ContractError:
		h.contractError++
	case results.Unavailable:
		h.unavailable++
	}
	h.retries += max(attempts-1, 0)
	if h.buckets == nil {
		h.buckets = map[int64]int64{}
	}
	h.buckets[bucketOf(ms)]++
}

// subtract takes d's runs away from h. Counts stop at zero: a row that
// does not hold what was recorded (edited by hand) must not stop
// retention, and is gone once its runs are.
func (h *hourSums) subtract(d *hourSums) {
	h.runs = max(h.runs-d.runs, 0)
	h.pass = max(h.pass-d.pass, 0)
	h.contractError = max(h.contractError-d.contractError, 0)
	h.unavailable = max(h.unavailable-d.unavailable, 0)
	h.passedAfterRetries = max(h.passedAfterRetries-d.passedAfterRetries, 0)
	h.retries = max(h.retries-d.retries, 0)
	for b, n := range d.buckets {
		if h.buckets[b] <= n {
			delete(h.buckets, b)
		} else {
			h.buckets[b] -= n
		}
	}
}

// bucketsJSON writes h's buckets as duration_buckets holds them, in order
// of duration, as json_group_object writes them in migration 0005.
func (h *hourSums) bucketsJSON() string {
	keys := make([]int64, 0, len(h.buckets))
	for b := range h.buckets {
		keys = append(keys, b)
	}
	slices.Sort(keys)
	out := []byte{'{'}
	for i, b := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = strconv.AppendInt(out, b, 10)
		out = append(out, '"', ':')
		out = strconv.AppendInt(out, h.buckets[b], 10)
	}
	return string(append(out, '}'))
}

// hourKey names a row of probe_hours.
type hourKey struct{ probe, hour string }

const (
	selectProbeHour = `SELECT runs, pass, contract_error, unavailable, passed_after_retries, retries,
    duration_buckets
FROM probe_hours WHERE probe = ? AND hour = ?`
	updateProbeHour = `UPDATE probe_hours SET runs = ?, pass = ?, contract_error = ?, unavailable = ?,
    passed_after_retries = ?, retries = ?, duration_buckets = ?
WHERE probe = ? AND hour = ?`
	deleteProbeHour = `DELETE FROM probe_hours WHERE probe = ? AND hour = ?`
)

// subtractHours takes the runs of deleted, results being deleted in tx,
// away from their rows of probe_hours, and deletes the rows left with no
// run.
func subtractHours(ctx context.Context, tx *sql.Tx, deleted map[hourKey]*hourSums) error {
	keys := make([]hourKey, 0, len(deleted))
	for k := range deleted {
		keys = append(keys, k)
	}
	// In key order: the rows are visited as they lie in the table.
	slices.SortFunc(keys, func(a, b hourKey) int {
		return cmp.Or(cmp.Compare(a.probe, b.probe), cmp.Compare(a.hour, b.hour))
	})
	for _, k := range keys {
		var (
			h    hourSums
			text []byte
		)
		err := tx.QueryRowContext(ctx, selectProbeHour, k.probe, k.hour).Scan(&h.runs, &h.pass,
			&h.contractError, &h.unavailable, &h.passedAfterRetries, &h.retries, &text)
		if errors.Is(err, sql.ErrNoRows) {
			continue // nothing to take from
		}
		if err != nil {
			return fmt.Errorf("probe_hours %s %s: %w", k.probe, k.hour, err)
		}
		h.buckets = map[int64]int64{}
		if err := parseBuckets(text, func(b, n int64) { h.buckets[b] += n }); err != nil {
			return fmt.Errorf("probe_hours %s %s: %w", k.probe, k.hour, err)
		}
		h.subtract(deleted[k])
		if h.runs == 0 {
			_, err = tx.ExecContext(ctx, deleteProbeHour, k.probe, k.hour)
		} else {
			_, err = tx.ExecContext(ctx, updateProbeHour, h.runs, h.pass, h.contractError, h.unavailable,
				h.passedAfterRetries, h.retries, h.bucketsJSON(), k.probe, k.hour)
		}
		if err != nil {
			return fmt.Errorf("probe_hours %s %s: %w", k.probe, k.hour, err)
		}
	}
	return nil
}

// histogram counts one probe's runs per bucket, to find the percentiles.
// Stats reuses one for every probe.
type histogram struct {
	counts []int64 // by bucketIndex
	runs   int64
	lo, hi int // counts outside [lo, hi] are zero
}

func newHistogram() *histogram {
	return &histogram{counts: make([]int64, numBuckets), lo: numBuckets, hi: -1}
}

func (h *histogram) add(b, n int64) {
	i := bucketIndex(b)
	h.counts[i] += n
	h.runs += n
	h.lo, h.hi = min(h.lo, i), max(h.hi, i)
}

func (h *histogram) reset() {
	if h.hi >= h.lo {
		clear(h.counts[h.lo : h.hi+1])
	}
	h.runs, h.lo, h.hi = 0, numBuckets, -1
}

// percentiles estimates the nearest-rank percentile p (the duration at
// rank ceil(p/100 * runs) in ascending order) for each p in ps, in order,
// in milliseconds: the estimate of the bucket holding that run. They are
// zero when there are no runs.
func (h *histogram) percentiles(ps ...int64) []int64 {
	out := make([]int64, len(ps))
	if h.runs == 0 {
		return out
	}
	var upto int64
	next := 0
	for i := h.lo; i <= h.hi && next < len(ps); i++ {
		upto += h.counts[i]
		// upto >= ceil(p/100 * runs), in integers.
		for next < len(ps) && upto*100 >= ps[next]*h.runs {
			out[next] = bucketEstimate(bucketAt(i))
			next++
		}
	}
	return out
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
				if !ok || j+1 >= len(text) || text[j] != '"' || text[j+1] != ':' || bucketOf(b) != b {
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
