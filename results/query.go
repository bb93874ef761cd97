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
