package main

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// startLag sums up how late the runs of a window started, as the provider
// saw them arrive.
type startLag struct {
	// Runs are the runs whose lag was measured; SkippedTicks the ticks
	// between a probe's first and last measured run with no run at all.
	Runs         int `json:"runs"`
	SkippedTicks int `json:"skipped_ticks"`
	// Nearest-rank percentiles and the maximum, in milliseconds.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
}

// startLags measures the lag of every run that arrived in [from, to).
//
// A probe's job runs one interval after its previous tick, whatever the
// run took: its ticks are phase + k·interval for a phase fixed when it was
// scheduled (see runner/schedule.go). The provider sees only arrivals, so
// the phase is estimated from them: on the circle of one interval, the
// arrivals of a probe bunch up just after its phase, and the phase is
// taken as the first arrival after the widest empty stretch of that
// circle. A run's lag is then how much later than that it arrived, in
// [0, interval): how much later than the probe's most punctual runs, as
// the true phase cannot be seen from outside. A run late by more than an
// interval shows as a skipped tick; a second arrival at the same tick (a
// retry) is not a run.
func startLags(arrivals [][]int64, interval time.Duration, from, to int64) startLag {
	iv := int64(interval)
	var lags []int64
	var out startLag
	for _, a := range arrivals {
		if len(a) == 0 {
			continue
		}
		a = slices.Clone(a)
		slices.Sort(a)
		phase := circularStart(a, iv)
		lastK, lo, hi, n := int64(math.MinInt64), int64(0), int64(0), 0
		for _, t := range a {
			rel := t - phase
			k := rel / iv
			if rel < 0 && rel%iv != 0 {
				k-- // floor, for arrivals before the phase's origin
			}
			if k == lastK {
				continue // a retry of the same run
			}
			lastK = k
			if t < from || t >= to {
				continue
			}
			lags = append(lags, rel-k*iv)
			if n == 0 {
				lo = k
			}
			hi = k
			n++
		}
		if n > 0 {
			out.SkippedTicks += int(hi-lo+1) - n
		}
	}
	out.Runs = len(lags)
	if len(lags) == 0 {
		return out
	}
	slices.Sort(lags)
	out.P50MS = nsMS(nearestRank(lags, 50))
	out.P99MS = nsMS(nearestRank(lags, 99))
	out.MaxMS = nsMS(lags[len(lags)-1])
	return out
}

// circularStart returns the arrival of sorted (Unix ns) that follows the
// widest gap between their positions modulo iv: where a probe's runs
// begin, however late some of them were.
func circularStart(sorted []int64, iv int64) int64 {
	pos := make([]int64, len(sorted))
	for i, t := range sorted {
		pos[i] = (t%iv + iv) % iv
	}
	order := make([]int, len(sorted))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(pos[x], pos[y]) })
	first, last := order[0], order[len(order)-1]
	best, start := pos[first]+iv-pos[last], first // the gap across the circle's origin
	for j := 1; j < len(order); j++ {
		if g := pos[order[j]] - pos[order[j-1]]; g > best {
			best, start = g, order[j]
		}
	}
	return sorted[start]
}

// nearestRank is the p-th percentile of sorted: the value at rank
// ceil(p/100·n).
func nearestRank(sorted []int64, p int) int64 {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

// nsMS is n nanoseconds in milliseconds, to the microsecond.
func nsMS(n int64) float64 { return float64(n/1000) / 1000 }
