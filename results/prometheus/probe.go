package prometheus

import (
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// durationBuckets suit HTTP probes: a few milliseconds on loopback, up to
// the default retry budget (15s) and beyond.
var durationBuckets = [...]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30}

// nBuckets is the number of duration buckets, +Inf left out.
const nBuckets = len(durationBuckets)

// noOutcome is probe.last before the probe's first run that counts for it.
const noOutcome = -1

// probe is everything one probe's series show, in plain numbers: a few
// hundred bytes, where client_golang's own series took kilobytes. The
// series are built from it at scrape time (collect.go). Its methods
// assume the Metrics mutex is held.
type probe struct {
	name string
	// created is when the probe's series appeared, in Unix nanoseconds:
	// the created timestamp of its counters and histogram.
	created int64

	// buckets counts runs per duration bucket, not cumulatively; runs
	// beyond the last bound are only in durCount.
	buckets  [len(durationBuckets)]uint64
	durSum   float64
	durCount uint64

	attempts uint64
	retried  [3]uint64 // by outcomeIndex, in the order of results.Outcomes
	drifts   [2]uint64 // by driftKindIndex

	// lastRun and last hold the last run that was not canceled; last is
	// noOutcome until there is one, and then the gauges exist.
	lastRun float64 // Unix seconds
	last    int8
	// hasValidated says whether the validated-items series exists: the
	// last run that was not canceled passed.
	hasValidated bool
	validated    float64

	// runs counts runs per (outcome, code label); runs[0] is the pass
	// series, which exists from the start.
	runs []runCount
	// custom lists the rule-raised codes admitted as their own label
	// value, at most MaxCustomCodes.
	custom []results.Code
}

// runCount is one toolpulse_runs_total series of a probe.
type runCount struct {
	code    string
	n       uint64
	created int64 // Unix nanoseconds
	outcome int8  // outcomeIndex
}

// newProbe returns the state of a probe whose series appear now, with
// every counter at 0.
func newProbe(name string) *probe {
	now := time.Now().UnixNano()
	return &probe{
		name:    name,
		created: now,
		last:    noOutcome,
		runs:    []runCount{{code: NoCode, created: now, outcome: outcomeIndex(results.Pass)}},
	}
}

// outcomeIndex returns the position of o in results.Outcomes, or -1.
func outcomeIndex(o results.Outcome) int8 {
	switch o {
	case results.Pass:
		return 0
	case results.ContractError:
		return 1
	case results.Unavailable:
		return 2
	}
	return -1
}

// hasCustom reports whether code was admitted as its own label value.
func (p *probe) hasCustom(code results.Code) bool {
	for _, c := range p.custom {
		if c == code {
			return true
		}
	}
	return false
}

// countRun adds one run to the runs series of (outcome, code), creating
// the series on first use.
func (p *probe) countRun(outcome int8, code string) {
	for i := range p.runs {
		if rc := &p.runs[i]; rc.outcome == outcome && rc.code == code {
			rc.n++
			return
		}
	}
	p.runs = append(p.runs, runCount{code: code, n: 1, created: time.Now().UnixNano(), outcome: outcome})
}

// observe records a run's duration in seconds and its attempts; retried
// runs are counted by their outcome.
func (p *probe) observe(seconds float64, attempts int, outcome int8) {
	// The first bucket whose bound is >= seconds, as client_golang's
	// histogram picks it; NaN and values beyond 30s fall into none.
	for i, bound := range durationBuckets {
		if seconds <= bound {
			p.buckets[i]++
			break
		}
	}
	p.durSum += seconds
	p.durCount++
	p.attempts += uint64(attempts)
	if attempts > 1 {
		p.retried[outcome]++
	}
}

// setLast makes r, a run that was not canceled, the probe's last run.
func (p *probe) setLast(outcome int8, r *results.Result) {
	p.last = outcome
	end := r.StartedAt.Add(r.Duration)
	p.lastRun = float64(end.UnixNano()) / 1e9
	p.hasValidated = r.Outcome == results.Pass
	p.validated = 0
	if p.hasValidated {
		p.validated = float64(r.ValidatedCount)
	}
}

// unreached returns how many of the lowest duration buckets no run fell
// into: their cumulative counts are 0, the others' are not.
func (p *probe) unreached() int {
	for i, n := range p.buckets {
		if n > 0 {
			return i
		}
	}
	return nBuckets
}
