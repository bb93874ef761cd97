// Package hourly is what both stores keep per probe and UTC hour in
// probe_hours: the sums Stats reports (runs, outcomes, retries) and the
// runs' durations counted in buckets, from which Stats estimates
// percentiles with a Histogram. The buckets must be the same in both
// stores, so that they estimate the same percentiles from the same runs.
package hourly

import (
	"math/bits"
	"slices"
	"strconv"

	"github.com/toolpulse/toolpulse/results"
)

// A bucket is named by the shortest duration, in milliseconds, it holds.
// Below ExactBelow every bucket is one millisecond wide; from there on
// each power of two [2^k, 2^(k+1)) is split into 2^SubBucketBits buckets
// of 2^(k-SubBucketBits) ms, so that a bucket is never wider than 1/64 of
// the durations it holds.
const (
	SubBucketBits = 6
	ExactBelow    = 1 << (SubBucketBits + 1) // 128 ms
	// NumBuckets is how many buckets cover every duration up to the
	// largest int64: ExactBelow exact ones, then 2^SubBucketBits per power
	// of two from 2^7 to 2^62.
	NumBuckets = ExactBelow + (63-SubBucketBits-1)<<SubBucketBits
)

// Bucket returns the bucket a duration of ms milliseconds (ms >= 0)
// falls in.
func Bucket(ms int64) int64 {
	if ms < ExactBelow {
		return ms
	}
	shift := bits.Len64(uint64(ms)) - SubBucketBits - 1
	return ms >> shift << shift
}

// Estimate is the duration that stands for every run in bucket b:
// its middle, rounded down. For a duration d in b it is off by at most
// half the bucket's width, which is less than d/128.
func Estimate(b int64) int64 {
	if b < ExactBelow {
		return b
	}
	width := int64(1) << (bits.Len64(uint64(b)) - SubBucketBits - 1)
	return b + (width-1)/2
}

// Index numbers the buckets 0, 1, 2... in the order of their
// durations; b must be a bucket (Bucket(b) == b).
func Index(b int64) int {
	if b < ExactBelow {
		return int(b)
	}
	k := bits.Len64(uint64(b)) - 1 // b is in [2^k, 2^(k+1))
	return ExactBelow + (k-SubBucketBits-1)<<SubBucketBits + int(b>>(k-SubBucketBits)) - 1<<SubBucketBits
}

// At is the bucket numbered i by Index.
func At(i int) int64 {
	if i < ExactBelow {
		return int64(i)
	}
	j := i - ExactBelow
	k := j>>SubBucketBits + SubBucketBits + 1
	return int64(j&(1<<SubBucketBits-1)+1<<SubBucketBits) << (k - SubBucketBits)
}

// Sums is what some runs of one probe and hour add up to: a row of
// probe_hours.
type Sums struct {
	Runs, Pass, ContractError, Unavailable, PassedAfterRetries, Retries int64
	Buckets                                                             map[int64]int64
}

// Add counts one run as probe_hours does.
func (h *Sums) Add(outcome string, attempts, ms int64) {
	h.Runs++
	switch results.Outcome(outcome) {
	case results.Pass:
		h.Pass++
		if attempts > 1 {
			h.PassedAfterRetries++
		}
	case results.ContractError:
		h.ContractError++
	case results.Unavailable:
		h.Unavailable++
	}
	h.Retries += max(attempts-1, 0)
	if h.Buckets == nil {
		h.Buckets = map[int64]int64{}
	}
	h.Buckets[Bucket(ms)]++
}

// Subtract takes d's runs away from h. Counts stop at zero: a row that
// does not hold what was recorded (edited by hand) must not stop
// retention, and is gone once its runs are.
func (h *Sums) Subtract(d *Sums) {
	h.Runs = max(h.Runs-d.Runs, 0)
	h.Pass = max(h.Pass-d.Pass, 0)
	h.ContractError = max(h.ContractError-d.ContractError, 0)
	h.Unavailable = max(h.Unavailable-d.Unavailable, 0)
	h.PassedAfterRetries = max(h.PassedAfterRetries-d.PassedAfterRetries, 0)
	h.Retries = max(h.Retries-d.Retries, 0)
	for b, n := range d.Buckets {
		if h.Buckets[b] <= n {
			delete(h.Buckets, b)
		} else {
			h.Buckets[b] -= n
		}
	}
}

// BucketsJSON writes h's buckets as a duration_buckets object, in order
// of duration.
func (h *Sums) BucketsJSON() string {
	keys := make([]int64, 0, len(h.Buckets))
	for b := range h.Buckets {
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
		out = strconv.AppendInt(out, h.Buckets[b], 10)
	}
	return string(append(out, '}'))
}

// Histogram counts one probe's runs per bucket, to find the percentiles.
// Stats reuses one for every probe.
// A Histogram merges duration buckets and estimates percentiles from
// them; Reset empties it for reuse.
type Histogram struct {
	counts []int64 // by Index
	runs   int64
	lo, hi int // counts outside [lo, hi] are zero
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]int64, NumBuckets), lo: NumBuckets, hi: -1}
}

// Add counts n runs in bucket b.
func (h *Histogram) Add(b, n int64) {
	i := Index(b)
	h.counts[i] += n
	h.runs += n
	h.lo, h.hi = min(h.lo, i), max(h.hi, i)
}

// Runs is how many runs h counts.
func (h *Histogram) Runs() int64 { return h.runs }

// Reset empties h.
func (h *Histogram) Reset() {
	if h.hi >= h.lo {
		clear(h.counts[h.lo : h.hi+1])
	}
	h.runs, h.lo, h.hi = 0, NumBuckets, -1
}

// Percentiles estimates the nearest-rank percentile p (the duration at
// rank ceil(p/100 * runs) in ascending order) for each p in ps, in order,
// in milliseconds: the estimate of the bucket holding that run. They are
// zero when there are no runs.
func (h *Histogram) Percentiles(ps ...int64) []int64 {
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
			out[next] = Estimate(At(i))
			next++
		}
	}
	return out
}
