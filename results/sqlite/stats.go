package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

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
	// P50, P95 and P99 are nearest-rank percentiles of the runs' durations
	// (the value at rank ceil(p/100 * Runs) in ascending order), to the
	// millisecond.
	P50, P95, P99 time.Duration
	// DriftEvents counts the probe's drifts detected in the window.
	DriftEvents int
	// LastOutcome, LastCode ("" on pass) and LastStartedAt describe the
	// last run in the window.
	LastOutcome   results.Outcome
	LastCode      results.Code
	LastStartedAt time.Time
	// OutcomeSince is when the probe's current streak of LastOutcome began:
	// the start of the first run of the unbroken sequence of runs with that
	// outcome that ends with the last run. It may lie before the window.
	OutcomeSince time.Time
}

// probeNames lists every probe with a stored result, in order. The
// recursive query walks the distinct names through the index on
// (probe, started_at, ...), one index search per probe, instead of reading
// every row as SELECT DISTINCT would (SQLite has no loose index scan).
const probeNames = `WITH RECURSIVE probes (probe) AS (
    SELECT min(probe) FROM results
    UNION ALL
    SELECT (SELECT min(probe) FROM results WHERE probe > probes.probe)
    FROM probes
    WHERE probes.probe IS NOT NULL
)
SELECT probe FROM probes WHERE probe IS NOT NULL`

// statsProbe sums up one probe's runs in [?2, ?3), in one row. It reads
// only the covering index results_probe_started_covering (migration 0003),
// never the table, and twice: once for the counters (totals), and once for
// the percentiles, where SQLite groups the runs into one bin per distinct
// duration in milliseconds (sorting this probe's window in its own
// memory), keeps a running count over the bins in order of duration with
// a window function, and picks the first bin whose running count reaches
// the nearest rank: upto >= ceil(p/100 * n), written upto * 100 >= p * n
// in integers. Go receives one row per probe, never a duration per run.
const statsProbe = `WITH
totals AS (
    SELECT
        count(*) AS n,
        sum(outcome = 'pass') AS pass,
        sum(outcome = 'contract_error') AS contract_error,
        sum(outcome = 'unavailable') AS unavailable,
        sum(outcome = 'pass' AND attempts > 1) AS passed_after_retries,
        sum(max(attempts - 1, 0)) AS retries
    FROM results
    WHERE probe = ?1 AND started_at >= ?2 AND started_at < ?3
),
bins AS (
    SELECT duration_ms AS ms, count(*) AS runs
    FROM results
    WHERE probe = ?1 AND started_at >= ?2 AND started_at < ?3
    GROUP BY duration_ms
),
cumulative AS (
    SELECT ms, sum(runs) OVER (ORDER BY ms ROWS UNBOUNDED PRECEDING) AS upto
    FROM bins
)
SELECT
    t.n, t.pass, t.contract_error, t.unavailable, t.passed_after_retries, t.retries,
    min(CASE WHEN c.upto * 100 >= 50 * t.n THEN c.ms END),
    min(CASE WHEN c.upto * 100 >= 95 * t.n THEN c.ms END),
    min(CASE WHEN c.upto * 100 >= 99 * t.n THEN c.ms END)
FROM totals t LEFT JOIN cumulative c ON true`

// statsDrifts counts drift events per probe; %s is the WHERE clause of the
// window on detected_at, a range of the index on detected_at.
const statsDrifts = `SELECT probe, count(*) FROM drifts%s GROUP BY probe`

// statsLast is a probe's last run in the window, in the order history is
// listed in: an index search.
const statsLast = `SELECT started_at, outcome, code FROM results
WHERE probe = ? AND started_at >= ? AND started_at < ?
ORDER BY started_at DESC, id DESC
LIMIT 1`

// streakBreak is the probe's latest run with outcome ?2 up to the last run
// in the window, which started at ?3: an index search on (probe, outcome,
// started_at). A run with another outcome that started in the same
// millisecond as the last run was recorded before it (else it would be the
// last run), so it counts as before it.
const streakBreak = `SELECT started_at, id FROM results
WHERE probe = ?1 AND outcome = ?2 AND started_at <= ?3
ORDER BY started_at DESC, id DESC
LIMIT 1`

// streakStart is the probe's first run after the run (?2, ?3); ("", 0)
// stands for "before the first run".
const streakStart = `SELECT started_at FROM results
WHERE probe = ?1 AND started_at >= ?2 AND (started_at > ?2 OR id > ?3)
ORDER BY started_at, id
LIMIT 1`

// Stats returns, for every probe with runs started in [since, until), what
// its runs there add up to, sorted by probe. A zero since or until leaves
// that side of the window open; the bounds are exact as in History. Drift
// events count when their detected_at lies in the same window.
//
// Everything is read in one read transaction, probe by probe, from
// indexes only: the probe names (one index search each); the probe's runs
// in the window (a range of the covering index
// results_probe_started_covering, read twice by one query that returns the
// counters and the percentiles, computed in SQLite: see statsProbe); its
// last run; and the start of its current streak, however long: the latest
// run of each other outcome before the last run, then the first run after
// the latest of those. The cost follows the window's runs, not the stored
// history, and Go never holds more than one row per probe.
func (s *Store) Stats(ctx context.Context, since, until time.Time) ([]ProbeStats, error) {
	st, err := s.stats(ctx, since, until)
	if err != nil {
		return nil, fmt.Errorf("sqlite: stats: %w", err)
	}
	return st, nil
}

func (s *Store) stats(ctx context.Context, since, until time.Time) ([]ProbeStats, error) {
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()

	// The open ends of the window as text bounds that every stored time
	// lies within: times start with a digit, and "~" sorts after digits.
	lo, hi := "", "~"
	if !since.IsZero() {
		lo = storedTime(since)
	}
	if !until.IsZero() {
		hi = storedTime(until)
	}

	probes, err := readStrings(ctx, tx, probeNames)
	if err != nil {
		return nil, fmt.Errorf("probes: %w", err)
	}
	st, err := prepareStats(ctx, tx)
	if err != nil {
		return nil, err
	}
	defer st.close()
	var out []ProbeStats
	for _, probe := range probes {
		p := ProbeStats{Probe: probe}
		if err := st.summarize(ctx, &p, lo, hi); err != nil {
			return nil, fmt.Errorf("%s: %w", probe, err)
		}
		if p.Runs == 0 {
			continue
		}
		if err := st.lastAndStreak(ctx, &p, lo, hi); err != nil {
			return nil, fmt.Errorf("%s: %w", probe, err)
		}
		out = append(out, p)
	}

	var drifts where
	drifts.window("detected_at", since, until)
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(statsDrifts, drifts.String()), drifts.args...)
	if err != nil {
		return nil, fmt.Errorf("drifts: %w", err)
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var probe string
		var n int
		if err := rows.Scan(&probe, &n); err != nil {
			return nil, fmt.Errorf("drifts: %w", err)
		}
		counts[probe] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("drifts: %w", err)
	}
	for i := range out {
		out[i].DriftEvents = counts[out[i].Probe]
	}
	return out, nil
}

// statsStmts are Stats' per-probe queries, prepared once per call: their
// parsing and planning would otherwise cost as much as running them.
type statsStmts struct {
	summary, last, streakBreak, streakStart *sql.Stmt
}

func prepareStats(ctx context.Context, tx *sql.Tx) (*statsStmts, error) {
	st := &statsStmts{}
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&st.summary, statsProbe},
		{&st.last, statsLast},
		{&st.streakBreak, streakBreak},
		{&st.streakStart, streakStart},
	} {
		var err error
		if *p.dst, err = tx.PrepareContext(ctx, p.query); err != nil {
			st.close()
			return nil, fmt.Errorf("prepare: %w", err)
		}
	}
	return st, nil
}

func (st *statsStmts) close() {
	for _, s := range []*sql.Stmt{st.summary, st.last, st.streakBreak, st.streakStart} {
		if s != nil {
			s.Close()
		}
	}
}

// summarize fills p's counters and percentiles from the probe's runs in
// [lo, hi); they stay zero when it has none.
func (st *statsStmts) summarize(ctx context.Context, p *ProbeStats, lo, hi string) error {
	var (
		pass, contract, unavail, after, extra sql.NullInt64
		p50, p95, p99                         sql.NullInt64
	)
	err := st.summary.QueryRowContext(ctx, p.Probe, lo, hi).Scan(&p.Runs,
		&pass, &contract, &unavail, &after, &extra, &p50, &p95, &p99)
	if err != nil {
		return err
	}
	// Over no rows, sum() and min() are NULL: zero.
	p.Pass, p.ContractError, p.Unavailable = int(pass.Int64), int(contract.Int64), int(unavail.Int64)
	p.PassedAfterRetries, p.Retries = int(after.Int64), int(extra.Int64)
	p.P50 = time.Duration(p50.Int64) * time.Millisecond
	p.P95 = time.Duration(p95.Int64) * time.Millisecond
	p.P99 = time.Duration(p99.Int64) * time.Millisecond
	return nil
}

// readStrings returns the single text column of every row of query.
func readStrings(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// lastAndStreak fills p's Last fields and OutcomeSince from the probe's
// last run in [lo, hi).
func (st *statsStmts) lastAndStreak(ctx context.Context, p *ProbeStats, lo, hi string) error {
	var (
		lastAt, outcome string
		code            sql.NullString
	)
	err := st.last.QueryRowContext(ctx, p.Probe, lo, hi).Scan(&lastAt, &outcome, &code)
	if err != nil {
		return fmt.Errorf("last run: %w", err)
	}
	p.LastOutcome, p.LastCode = results.Outcome(outcome), results.Code(code.String)
	if p.LastStartedAt, err = parseTime(lastAt); err != nil {
		return err
	}

	// The streak ends at the last run and starts right after the latest
	// earlier run with another outcome.
	breakAt, breakID := "", int64(0)
	for _, o := range results.Outcomes {
		if o == p.LastOutcome {
			continue
		}
		var at string
		var id int64
		err := st.streakBreak.QueryRowContext(ctx, p.Probe, string(o), lastAt).Scan(&at, &id)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("streak: %w", err)
		}
		if at > breakAt || (at == breakAt && id > breakID) {
			breakAt, breakID = at, id
		}
	}
	var start string
	if err := st.streakStart.QueryRowContext(ctx, p.Probe, breakAt, breakID).Scan(&start); err != nil {
		return fmt.Errorf("streak start: %w", err)
	}
	p.OutcomeSince, err = parseTime(start)
	return err
}
