package hourly

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// boundaryDurations are the durations around every power of two, where
// bucket widths change, and the extremes.
func boundaryDurations() []int64 {
	ds := []int64{0, 1, math.MaxInt64 - 1, math.MaxInt64}
	for k := 1; k < 63; k++ {
		ds = append(ds, 1<<k-1, 1<<k, 1<<k+1)
	}
	return ds
}

// TestBuckets checks the bucket arithmetic on every duration up to 300 s
// and around every power of two: each duration lies in its bucket, the
// buckets are numbered densely in order, widths double with each power of
// two from 128 ms on, and the estimate is exact below 128 ms and less than
// 1/128 of the duration away above.
func TestBuckets(t *testing.T) {
	check := func(d int64) {
		t.Helper()
		b := Bucket(d)
		i := Index(b)
		if b > d || i < 0 || i >= NumBuckets || At(i) != b {
			t.Fatalf("duration %d: bucket %d, index %d of %d, At %d", d, b, i, NumBuckets, At(i))
		}
		if i+1 < NumBuckets && At(i+1) <= d {
			t.Fatalf("duration %d: bucket %d, but the next bucket %d starts at or below it", d, b, At(i+1))
		}
		est := Estimate(b)
		diff := max(est-d, d-est)
		switch {
		case d < 128 && diff != 0:
			t.Fatalf("duration %d: estimate %d, want it exact below 128 ms", d, est)
		case d >= 128 && diff > 0 && diff >= d/128+min(d%128, 1):
			t.Fatalf("duration %d: estimate %d is off by %d, not less than 1/128 of it", d, est, diff)
		}
	}
	prev := -1
	for d := range int64(300_000) {
		check(d)
		if i := Index(Bucket(d)); i != prev && i != prev+1 {
			t.Fatalf("duration %d: bucket index %d after %d: indexes skip", d, i, prev)
		} else {
			prev = i
		}
	}
	for _, d := range boundaryDurations() {
		check(d)
	}
	if got := Index(Bucket(math.MaxInt64)); got != NumBuckets-1 {
		t.Errorf("the largest duration is in bucket %d, want the last, %d", got, NumBuckets-1)
	}
	for k := 7; k < 63; k++ {
		lo, hi := Index(Bucket(1<<k)), Index(Bucket(1<<k+(1<<k-1)))
		width := At(lo+1) - At(lo)
		if hi-lo+1 != 64 || width != 1<<(k-6) {
			t.Errorf("[2^%d, 2^%d): %d buckets %d ms wide, want 64 of %d ms", k, k+1, hi-lo+1, width, 1<<(k-6))
		}
	}
}

// TestHistogramPercentiles checks that the histogram's percentiles are
// the estimates of the exact nearest-rank percentiles: bucketing keeps the
// order of durations, so the run at rank r of the buckets is in the bucket
// of the run at rank r. One histogram serves every sample, as in Stats.
func TestHistogramPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	h := NewHistogram()
	for n := range 300 {
		ds := make([]int64, n)
		for i := range ds {
			switch rng.IntN(3) {
			case 0:
				ds[i] = rng.Int64N(128)
			case 1:
				ds[i] = rng.Int64N(5000)
			default:
				ds[i] = rng.Int64N(1 << 40)
			}
			h.Add(Bucket(ds[i]), 1)
		}
		slices.Sort(ds)
		got := h.Percentiles(50, 95, 99)
		h.Reset()
		for j, p := range []int64{50, 95, 99} {
			want := int64(0)
			if n > 0 {
				rank := (int64(n)*p + 99) / 100 // ceil(p/100 * n)
				want = Estimate(Bucket(ds[rank-1]))
			}
			if got[j] != want {
				t.Fatalf("%d runs: p%d = %d, want %d", n, p, got[j], want)
			}
		}
	}
	if h.runs != 0 || slices.ContainsFunc(h.counts, func(c int64) bool { return c != 0 }) {
		t.Errorf("histogram not empty after reset: %d runs", h.runs)
	}
}
