package results

import (
	"errors"
	"time"
)

// This file holds what a store answers besides results themselves: the
// question History is asked, and the summaries behind stats, the status
// page and test --from-db. They are here, not with one store, so that
// every store (SQLite, and Postgres for a fleet) answers in the same
// types and one contract test (internal/storetest) holds them all to it.

// ErrNotFound is what every store wraps when what was asked for is not
// stored (a result, a pending alert, a silence), so that callers (the
// status page, silence expire) tell "not there" from a failure whichever
// store answers.
var ErrNotFound = errors.New("not found")

// DefaultLimit is how many rows a store's History and Drifts return when
// the caller asks for none.
const DefaultLimit = 50

// HistoryQuery selects recorded results. Every filter narrows the answer;
// an empty or zero filter does not filter.
type HistoryQuery struct {
	Probes   []string    // any of these probes; empty: all
	Since    time.Time   // started at or after; zero: unbounded
	Until    time.Time   // started before; zero: unbounded
	Outcomes []Outcome   // any of these outcomes; empty: all
	Codes    []Code      // any of these codes; empty: all (a pass has no code)
	Kinds    []ProbeKind // results of any of these kinds of probe; empty: all
	// Locations: results run from any of these locations (SPEC §13);
	// empty: all.
	Locations []string
	Limit     int // at most this many; 0 or less: DefaultLimit
}

// RecentRun is one run as a status page draws it: when it started, how it
// ended, how long it took and how many attempts it made.
type RecentRun struct {
	StartedAt time.Time
	Outcome   Outcome
	Duration  time.Duration
	Attempts  int
}

// PassSample is the body of a probe's latest passing shape.
type PassSample struct {
	Probe       string
	OperationID string // the latest passing run
	StartedAt   time.Time
	Fingerprint string
	Body        string // the shape's stored sample
}

// ProbeStats sums up one probe's runs over a window of time.
type ProbeStats struct {
	Probe string
	// Runs counts the runs started in the window; Pass, ContractError and
	// Unavailable split them by outcome.
	Runs, Pass, ContractError, Unavailable int
	// PassedAfterRetries counts passes that took more than one attempt:
	// the flakiness that retries hide.
	PassedAfterRetries int
	// Retries counts attempts beyond the first, over all runs.
	Retries int
	// P50, P95 and P99 estimate the nearest-rank percentiles of the runs'
	// durations: the duration of the run at rank ceil(p/100 * Runs) in
	// ascending order. Durations are counted in buckets as runs are
	// recorded (results/sqlite: probe_hours in its SCHEMA.md), and the
	// estimate is the middle of the bucket that run falls in, rounded down
	// to the millisecond. Below 128 ms a bucket is one millisecond wide, so the
	// estimate is exact; from 128 ms on, each power of two is split into
	// 64 buckets, and the estimate is less than 1/128 (0.79 %) away from
	// the exact value: at most 1 ms off below 256 ms, 2 ms below 512 ms,
	// 4 ms below 1024 ms, and so on.
	P50, P95, P99 time.Duration
	// DriftEvents counts the probe's drifts detected in the window.
	DriftEvents int
	// LastOutcome, LastCode ("" on pass) and LastStartedAt describe the
	// last run in the window.
	LastOutcome   Outcome
	LastCode      Code
	LastStartedAt time.Time
	// LastKind is the kind of probe that made the last run in the window
	// (never ""), and LastMCP the tool and server it called, nil unless
	// it is an MCP probe's: what the probe was then, which is what it is
	// now when the window ends now.
	LastKind ProbeKind
	LastMCP  *MCPTarget
	// OutcomeSince is when the probe's current streak of LastOutcome began:
	// the start of the first run of the unbroken sequence of runs with that
	// outcome that ends with the last run. It may lie before the window.
	OutcomeSince time.Time
}

// RunsFrom asks for the newest runs of one probe from one location (SPEC
// §13): what the fleet's decider replays through a probe's thresholds.
// A store answers many at once (NewestRuns), in one query where it can.
type RunsFrom struct {
	Probe    string
	Location string // as a store keeps it: DefaultLocation for the default one
	Limit    int    // at most this many; 0 or less: DefaultLimit
}

// RunsKey is the probe and stored location of r, as RunsFrom names them.
func RunsKey(r Result) RunsFrom {
	return RunsFrom{Probe: r.Probe, Location: LocationOrDefault(r.Location)}
}

// SplitRuns deals rs, the runs of every probe and location of want
// (each newest first, grouped or not), out to want: the i-th slice holds
// want[i]'s runs, newest first as they came, at most want[i].Limit (or
// DefaultLimit) of them. A want asked twice gets its runs twice.
func SplitRuns(want []RunsFrom, rs []Result) [][]Result {
	byKey := map[RunsFrom][]Result{}
	for _, r := range rs {
		k := RunsKey(r)
		byKey[k] = append(byKey[k], r)
	}
	out := make([][]Result, len(want))
	for i, w := range want {
		runs := byKey[RunsFrom{Probe: w.Probe, Location: w.Location}]
		if n := w.limit(); len(runs) > n {
			runs = runs[:n]
		}
		out[i] = runs
	}
	return out
}

// limit is w.Limit, or DefaultLimit for 0 or less.
func (w RunsFrom) limit() int {
	if w.Limit <= 0 {
		return DefaultLimit
	}
	return w.Limit
}

// Distinct is want with each probe and location once, at the largest limit
// asked of it, in the order first asked: what a store needs to read to
// answer want.
func Distinct(want []RunsFrom) []RunsFrom {
	at := map[RunsFrom]int{}
	var out []RunsFrom
	for _, w := range want {
		k := RunsFrom{Probe: w.Probe, Location: w.Location}
		if i, ok := at[k]; ok {
			out[i].Limit = max(out[i].Limit, w.limit())
			continue
		}
		at[k] = len(out)
		out = append(out, RunsFrom{Probe: w.Probe, Location: w.Location, Limit: w.limit()})
	}
	return out
}
