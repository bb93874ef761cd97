package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
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
// A bucket is named by the shortest duration, in milliseconds, it holds.
// Below exactBelow every bucket is one millisecond wide; from there on
// each power of two [2^k, 2^(k+1)) is split into 2^subBucketBits buckets
// of 2^(k-subBucketBits) ms, so that a bucket is never wider than 1/64 of
// the durations it holds. The buckets are results/sqlite's, so that both
// stores estimate the same percentiles from the same runs.
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

// upsertProbeHour adds one run to its probe and hour: $1 probe, $2 hour,
// $3 to $7 the run's share of pass, contract_error, unavailable,
// passed_after_retries and retries, and $8 its bucket as text, a key of
// duration_buckets.
const upsertProbeHour = `INSERT INTO probe_hours (probe, hour, runs, pass, contract_error, unavailable,
    passed_after_retries, retries, duration_buckets)
VALUES ($1, $2, 1, $3, $4, $5, $6, $7, jsonb_build_object($8::text, 1))
ON CONFLICT (probe, hour) DO UPDATE SET
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
	var run hourSums
	run.add(string(r.Outcome), int64(r.AttemptCount()), r.Duration.Milliseconds())
	key := strconv.FormatInt(bucketOf(r.Duration.Milliseconds()), 10)
	p.exec("probe hour", upsertProbeHour, r.Probe, hourOf(r.StartedAt),
		run.pass, run.contractError, run.unavailable, run.passedAfterRetries, run.retries, key)
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

// bucketsJSON writes h's buckets as a duration_buckets object, in order
// of duration.
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
type hourKey struct {
	probe string
	hour  time.Time
}

const (
	selectProbeHour = `SELECT runs, pass, contract_error, unavailable, passed_after_retries, retries,
    duration_buckets::text
FROM probe_hours WHERE probe = $1 AND hour = $2
FOR UPDATE`
	updateProbeHour = `UPDATE probe_hours SET runs = $1, pass = $2, contract_error = $3, unavailable = $4,
    passed_after_retries = $5, retries = $6, duration_buckets = $7::text::jsonb
WHERE probe = $8 AND hour = $9`
	deleteProbeHour = `DELETE FROM probe_hours WHERE probe = $1 AND hour = $2`
)

// subtractHours takes the runs of deleted, results being deleted in tx,
// away from their rows of probe_hours, and deletes the rows left with no
// run.
func subtractHours(ctx context.Context, tx pgx.Tx, deleted map[hourKey]*hourSums) error {
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
			h    hourSums
			text string
		)
		err := tx.QueryRow(ctx, selectProbeHour, k.probe, k.hour).Scan(&h.runs, &h.pass,
			&h.contractError, &h.unavailable, &h.passedAfterRetries, &h.retries, &text)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // nothing to take from
		}
		if err != nil {
			return fmt.Errorf("probe_hours %s %s: %w", k.probe, k.hour.Format(hourLayout), err)
		}
		if h.buckets, err = parseBuckets(text); err != nil {
			return fmt.Errorf("probe_hours %s %s: %w", k.probe, k.hour.Format(hourLayout), err)
		}
		h.subtract(deleted[k])
		if h.runs == 0 {
			_, err = tx.Exec(ctx, deleteProbeHour, k.probe, k.hour)
		} else {
			_, err = tx.Exec(ctx, updateProbeHour, h.runs, h.pass, h.contractError, h.unavailable,
				h.passedAfterRetries, h.retries, h.bucketsJSON(), k.probe, k.hour)
		}
		if err != nil {
			return fmt.Errorf("probe_hours %s %s: %w", k.probe, k.hour.Format(hourLayout), err)
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
		if err != nil || b < 0 || bucketOf(b) != b || n < 0 {
			return nil, fmt.Errorf("%w: %q: %d", errBuckets, k, n)
		}
		out[b] += n
	}
	return out, nil
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
