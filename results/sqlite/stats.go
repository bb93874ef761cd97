package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/hourly"
)

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

// statsProbe sums up one probe's runs in a window, in one row: the whole
// UTC hours of the window from probe_hours (?2 <= hour < ?3, a range of
// its primary key), and the runs of the partial hours at either end from
// results ([?4, ?5) and [?6, ?7), ranges of the covering index
// results_probe_started_covering). It returns the counters, the
// duration_buckets objects of the hours joined by commas, and the
// durations of the runs read from results, also joined by commas: Go
// merges them into one histogram per probe. A day is 23 or 24 rows of
// probe_hours and at most two hours' runs per probe.
const statsProbeSQL = `SELECT sum(runs), sum(pass), sum(contract_error), sum(unavailable),
    sum(passed_after_retries), sum(retries), group_concat(buckets), group_concat(durations)
FROM (
    SELECT sum(runs) AS runs, sum(pass) AS pass, sum(contract_error) AS contract_error,
        sum(unavailable) AS unavailable, sum(passed_after_retries) AS passed_after_retries,
        sum(retries) AS retries, group_concat(duration_buckets) AS buckets, NULL AS durations
    FROM probe_hours
    WHERE probe = ?1%[1]s AND hour >= ?2 AND hour < ?3
    UNION ALL
    SELECT count(*), sum(outcome = 'pass'), sum(outcome = 'contract_error'),
        sum(outcome = 'unavailable'), sum(outcome = 'pass' AND attempts > 1),
        sum(max(attempts - 1, 0)), NULL, group_concat(duration_ms)
    FROM results
    WHERE probe = ?1%[1]s AND started_at >= ?4 AND started_at < ?5
    UNION ALL
    SELECT count(*), sum(outcome = 'pass'), sum(outcome = 'contract_error'),
        sum(outcome = 'unavailable'), sum(outcome = 'pass' AND attempts > 1),
        sum(max(attempts - 1, 0)), NULL, group_concat(duration_ms)
    FROM results
    WHERE probe = ?1%[1]s AND started_at >= ?6 AND started_at < ?7
)`

// statsProbe reads the runs of every location.
var statsProbe = fmt.Sprintf(statsProbeSQL, "")

// inLocations is the condition that column, a row's location, is one of
// n parameters numbered from first on: a list of parameters rather than a
// JSON array (json_each), which SQLite would read and filter again on
// every one of the thousands of calls of a Stats.
func inLocations(column string, first, n int) string {
	if n == 1 {
		return fmt.Sprintf(" AND %s = ?%d", column, first)
	}
	params := make([]string, n)
	for i := range params {
		params[i] = fmt.Sprintf("?%d", first+i)
	}
	return " AND " + column + " IN (" + strings.Join(params, ", ") + ")"
}

// statsWindow is a window of Stats split for statsProbe: the whole UTC
// hours inside it, [hourFrom, hourTo) as probe_hours spells hours, and
// the ranges of started_at before and after them, [head[0], head[1]) and
// [tail[0], tail[1]), read from results; a range whose ends are equal is
// empty. An open end of the window ("" since, "~" until, as in stats)
// takes every hour on that side.
type statsWindow struct {
	hourFrom, hourTo string
	head, tail       [2]string
}

// splitWindow splits [since, until), each bound rounded up to the
// millisecond as storedTime does; a zero bound is an open end.
func splitWindow(since, until time.Time) statsWindow {
	w := statsWindow{hourFrom: "", hourTo: "~"}
	lo, hi := "", "~"
	if !since.IsZero() {
		start := ceilMillisecond(since)
		first := start.Truncate(time.Hour) // UTC hours: Truncate counts from the zero time
		if first.Before(start) {
			first = first.Add(time.Hour)
		}
		lo = results.FormatTime(start)
		w.hourFrom, w.head = hourOf(first), [2]string{lo, results.FormatTime(first)}
	}
	if !until.IsZero() {
		end := ceilMillisecond(until)
		last := end.Truncate(time.Hour)
		hi = results.FormatTime(end)
		w.hourTo, w.tail = hourOf(last), [2]string{results.FormatTime(last), hi}
	}
	if w.hourFrom >= w.hourTo {
		// No whole hour: the window, if not empty, lies within one hour
		// or across the boundary of two.
		return statsWindow{head: [2]string{lo, hi}}
	}
	return w
}

// statsDrifts counts drift events per probe; %s is the WHERE clause of the
// window on detected_at, a range of the index on detected_at.
const statsDrifts = `SELECT probe, count(*) FROM drifts%s GROUP BY probe`

// statsLast is a probe's last run in the window, in the order history is
// listed in, with the kind of probe and the MCP tool and server that made
// it: an index search, then the table row (for its code).
const statsLastSQL = `SELECT started_at, outcome, code, kind, mcp_tool, mcp_server FROM results
WHERE probe = ?1 AND started_at >= ?2 AND started_at < ?3%[1]s
ORDER BY started_at DESC, id DESC
LIMIT 1`

// streakBreak is the probe's latest run with outcome ?2 up to the last run
// in the window, which started at ?3: an index search on (probe, outcome,
// started_at). A run with another outcome that started in the same
// millisecond as the last run was recorded before it (else it would be the
// last run), so it counts as before it.
const streakBreakSQL = `SELECT started_at, id FROM results
WHERE probe = ?1 AND outcome = ?2 AND started_at <= ?3%[1]s
ORDER BY started_at DESC, id DESC
LIMIT 1`

// streakStart is the probe's first run after the run (?2, ?3); ("", 0)
// stands for "before the first run".
const streakStartSQL = `SELECT started_at FROM results
WHERE probe = ?1 AND started_at >= ?2 AND (started_at > ?2 OR id > ?3)%[1]s
ORDER BY started_at, id
LIMIT 1`

// The queries of every location.
var (
	statsLast   = fmt.Sprintf(statsLastSQL, "")
	streakBreak = fmt.Sprintf(streakBreakSQL, "")
	streakStart = fmt.Sprintf(streakStartSQL, "")
)

// Stats returns, for every probe with runs started in [since, until), what
// its runs there add up to, sorted by probe. A zero since or until leaves
// that side of the window open; the bounds are exact as in History. Drift
// events count when their detected_at lies in the same window.
//
// With locations, only the runs from those locations count, in the sums
// as in the last run and the streak; without, the runs from every
// location. Drift events are the probe's, from whichever location.
//
// Everything is read in one read transaction, probe by probe, from
// indexes only: the probe names (one index search each); the probe's
// counters and durations in the window (statsProbe: the window's whole
// hours from probe_hours, its partial first and last hour from ranges of
// the covering index results_probe_started_covering); its last run, with
// the kind of probe that made it (the run's table row); and the start of
// its current streak, however long: the latest run of each other outcome
// before the last run, then the first run after the latest of those. The cost follows the window's hours and probes, not its runs
// or the stored history, and Go never holds more than one probe's
// histogram.
func (s *Store) Stats(ctx context.Context, since, until time.Time, locations ...string) ([]results.ProbeStats, error) {
	st, err := s.stats(ctx, since, until, locations)
	if err != nil {
		return nil, fmt.Errorf("sqlite: stats: %w", err)
	}
	return st, nil
}

func (s *Store) stats(ctx context.Context, since, until time.Time, locations []string) ([]results.ProbeStats, error) {
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
	st, err := prepareStats(ctx, tx, locations)
	if err != nil {
		return nil, err
	}
	defer st.close()
	window := splitWindow(since, until)
	hist := hourly.NewHistogram()
	var out []results.ProbeStats
	for _, probe := range probes {
		p := results.ProbeStats{Probe: probe}
		if err := st.summarize(ctx, &p, window, hist); err != nil {
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
	// in is the locations, appended to every query's arguments; nil
	// without locations.
	in []any
}

func prepareStats(ctx context.Context, tx *sql.Tx, locations []string) (*statsStmts, error) {
	st := &statsStmts{}
	summary, filter, breakFilter := statsProbe, "", ""
	if len(locations) > 0 {
		for _, l := range locations {
			st.in = append(st.in, l)
		}
		summary = fmt.Sprintf(statsProbeSQL, inLocations("location", 8, len(locations)))
		filter = inLocations("location", 4, len(locations))
		// +location: streakBreak must keep searching
		// results_probe_outcome_started, where the latest run of an
		// outcome is the first row; on results_probe_location_started
		// it would walk back over every run of the location until one
		// had the outcome, all of them when none has.
		breakFilter = inLocations("+location", 4, len(locations))
	}
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&st.summary, summary},
		{&st.last, fmt.Sprintf(statsLastSQL, filter)},
		{&st.streakBreak, fmt.Sprintf(streakBreakSQL, breakFilter)},
		{&st.streakStart, fmt.Sprintf(streakStartSQL, filter)},
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
// the window; they stay zero when it has none. hist is left empty.
func (st *statsStmts) summarize(ctx context.Context, p *results.ProbeStats, w statsWindow, hist *hourly.Histogram) error {
	rows, err := st.summary.QueryContext(ctx, append([]any{p.Probe, w.hourFrom, w.hourTo, w.head[0], w.head[1], w.tail[0], w.tail[1]}, st.in...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	// Over no rows, sum() is NULL: zero. RawBytes: the texts are only
	// parsed, never kept.
	var (
		runs, pass, contract, unavail, after, extra sql.NullInt64
		buckets, durations                          sql.RawBytes
	)
	if err := rows.Scan(&runs, &pass, &contract, &unavail, &after, &extra, &buckets, &durations); err != nil {
		return err
	}
	p.Runs, p.Pass, p.ContractError, p.Unavailable = int(runs.Int64), int(pass.Int64), int(contract.Int64), int(unavail.Int64)
	p.PassedAfterRetries, p.Retries = int(after.Int64), int(extra.Int64)

	defer hist.Reset()
	if len(buckets) > 0 {
		if err := parseBuckets(buckets, hist.Add); err != nil {
			return fmt.Errorf("probe_hours: %w", err)
		}
	}
	if len(durations) > 0 {
		if err := parseDurations(durations, func(ms int64) { hist.Add(hourly.Bucket(ms), 1) }); err != nil {
			return err
		}
	}
	if hist.Runs() != runs.Int64 {
		return fmt.Errorf("probe_hours: %d runs in duration buckets, %d counted", hist.Runs(), runs.Int64)
	}
	ps := hist.Percentiles(50, 95, 99)
	p.P50 = time.Duration(ps[0]) * time.Millisecond
	p.P95 = time.Duration(ps[1]) * time.Millisecond
	p.P99 = time.Duration(ps[2]) * time.Millisecond
	return rows.Close()
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
func (st *statsStmts) lastAndStreak(ctx context.Context, p *results.ProbeStats, lo, hi string) error {
	var (
		lastAt, outcome, kind    string
		code, mcpTool, mcpServer sql.NullString
	)
	err := st.last.QueryRowContext(ctx, append([]any{p.Probe, lo, hi}, st.in...)...).Scan(&lastAt, &outcome, &code, &kind, &mcpTool, &mcpServer)
	if err != nil {
		return fmt.Errorf("last run: %w", err)
	}
	p.LastOutcome, p.LastCode = results.Outcome(outcome), results.Code(code.String)
	p.LastKind, p.LastMCP = results.ProbeKind(kind), nil
	if mcpTool.Valid {
		p.LastMCP = &results.MCPTarget{Tool: mcpTool.String, Server: mcpServer.String}
	}
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
		err := st.streakBreak.QueryRowContext(ctx, append([]any{p.Probe, string(o), lastAt}, st.in...)...).Scan(&at, &id)
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
	if err := st.streakStart.QueryRowContext(ctx, append([]any{p.Probe, breakAt, breakID}, st.in...)...).Scan(&start); err != nil {
		return fmt.Errorf("streak start: %w", err)
	}
	p.OutcomeSince, err = parseTime(start)
	return err
}
