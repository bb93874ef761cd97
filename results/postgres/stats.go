package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/hourly"
)

// probeNames lists every probe with a stored result, in order. The
// recursive query walks the distinct names through the index on
// (probe, started_at, id), one index search per probe, instead of reading
// every row as SELECT DISTINCT would (Postgres has no loose index scan).
const probeNames = `WITH RECURSIVE probes (probe) AS (
    SELECT min(probe) FROM results
    UNION ALL
    SELECT (SELECT min(probe) FROM results WHERE probe > probes.probe)
    FROM probes
    WHERE probes.probe IS NOT NULL
)
SELECT probe FROM probes WHERE probe IS NOT NULL`

// statsSums sums up the runs in a window of every probe of $1 (a text
// array), one row per probe in the order of $1: the UTC hours of
// probe_hours in [$2, $3) (a range of its primary key per probe), then
// the runs started in [$4, $5) and [$6, $7), less those started in
// [$8, $9) and [$10, $11) (ranges of the covering index
// results_probe_started_covering per probe, each a branch of its own:
// with an OR Postgres may read the time index for every probe's runs
// instead). See statsWindow. A row holds the hours' counters and their
// duration_buckets objects as text joined by commas, then the cut hours'
// counters and the durations of their runs in milliseconds, each with the
// sign it counts with. Go adds the two up and merges the durations into
// the probe's histogram: expanding the objects in SQL (jsonb_each) costs
// the server several times what printing them does, and Go parses their
// text quickly. The text is duration_buckets_text, which Postgres keeps
// as duration_buckets prints (migration 0009): copying it costs the
// server a few ms a call where printing the jsonb cost some 100 ms.
//
// One statement for many probes (a part of them, statsParts): the
// per-probe reads are index ranges joined LATERAL to the probe names, so
// that a thousand probes cost a thousand index searches inside a few
// statements, not thousands of statements.
const statsSumsSQL = `SELECT h.runs, h.pass, h.contract_error, h.unavailable, h.passed_after_retries, h.retries,
    h.buckets, e.runs, e.pass, e.contract_error, e.unavailable, e.passed_after_retries, e.retries,
    e.durations, e.signs
FROM unnest($1::text[]) WITH ORDINALITY AS p (probe, n)
CROSS JOIN LATERAL (
    SELECT sum(runs)::bigint AS runs, sum(pass)::bigint AS pass,
        sum(contract_error)::bigint AS contract_error, sum(unavailable)::bigint AS unavailable,
        sum(passed_after_retries)::bigint AS passed_after_retries, sum(retries)::bigint AS retries,
        string_agg(duration_buckets_text, ',') AS buckets
    FROM probe_hours
    WHERE probe = p.probe%[1]s AND hour >= $2 AND hour < $3
) h
CROSS JOIN LATERAL (
    SELECT sum(sign)::bigint AS runs, sum(sign * (outcome = 'pass')::int)::bigint AS pass,
        sum(sign * (outcome = 'contract_error')::int)::bigint AS contract_error,
        sum(sign * (outcome = 'unavailable')::int)::bigint AS unavailable,
        sum(sign * (outcome = 'pass' AND attempts > 1)::int)::bigint AS passed_after_retries,
        sum(sign * greatest(attempts - 1, 0))::bigint AS retries,
        array_agg(duration_ms) AS durations, array_agg(sign) AS signs
    FROM (` + statsEdges + `) r
) e
ORDER BY p.n`

var (
	// statsSums reads the runs of every location.
	statsSums = fmt.Sprintf(statsSumsSQL, "")
	// statsSumsIn reads those from the locations of $12, a text array.
	statsSumsIn = fmt.Sprintf(statsSumsSQL, inLocations("$12"))
)

// inLocations is the condition that a row's location is one of the text
// array param.
func inLocations(param string) string {
	return " AND location = ANY(" + param + "::text[])"
}

// statsEdges is the runs of the cut hours of statsSums' window of the
// probe p.probe, each with the sign it is counted with: +1 for the runs
// inside the window, -1 for those of a whole hour of probe_hours that lie
// outside it.
const statsEdges = `
        SELECT 1::bigint AS sign, outcome, attempts, duration_ms FROM results
        WHERE probe = p.probe%[1]s AND started_at >= $4 AND started_at < $5
        UNION ALL
        SELECT 1, outcome, attempts, duration_ms FROM results
        WHERE probe = p.probe%[1]s AND started_at >= $6 AND started_at < $7
        UNION ALL
        SELECT -1, outcome, attempts, duration_ms FROM results
        WHERE probe = p.probe%[1]s AND started_at >= $8 AND started_at < $9
        UNION ALL
        SELECT -1, outcome, attempts, duration_ms FROM results
        WHERE probe = p.probe%[1]s AND started_at >= $10 AND started_at < $11`

// statsWindow is a window of Stats split for statsSums: UTC hours
// [hourFrom, hourTo) read from probe_hours, plus the runs started in the
// ranges add, less those started in the ranges sub, read from results. An
// hour the window cuts is read either way, whichever reads fewer runs
// (by time): the runs inside the window, or its whole hour less the runs
// outside. The latter makes the usual window, up to now, cost one row of
// probe_hours rather than up to an hour of runs. A range whose ends are
// equal is empty.
type statsWindow struct {
	hourFrom, hourTo time.Time
	add, sub         [2][2]time.Time
}

// emptyRange reads no run.
var emptyRange = [2]time.Time{maxTime, maxTime}

// splitWindow splits [since, until), each bound rounded up to the
// millisecond as storedTime does; a zero bound is an open end.
func splitWindow(since, until time.Time) statsWindow {
	w := statsWindow{hourFrom: minTime, hourTo: maxTime,
		add: [2][2]time.Time{emptyRange, emptyRange}, sub: [2][2]time.Time{emptyRange, emptyRange}}
	start, end := minTime, maxTime
	if !since.IsZero() {
		start = storedTime(since)
	}
	if !until.IsZero() {
		end = storedTime(until)
	}
	if !start.Before(end) {
		w.hourFrom, w.hourTo = maxTime, maxTime
		return w
	}
	if !since.IsZero() && !until.IsZero() && start.Truncate(time.Hour).Equal(end.Truncate(time.Hour)) {
		// Within one hour (UTC: Truncate counts from the zero time).
		h := start.Truncate(time.Hour)
		if end.Sub(start) <= time.Hour/2 {
			w.hourFrom, w.hourTo = maxTime, maxTime
			w.add[0] = [2]time.Time{start, end}
		} else {
			w.hourFrom, w.hourTo = h, h.Add(time.Hour)
			w.sub[0], w.sub[1] = [2]time.Time{h, start}, [2]time.Time{end, h.Add(time.Hour)}
		}
		return w
	}
	if !since.IsZero() {
		first := start.Truncate(time.Hour)
		if first.Before(start) {
			first = first.Add(time.Hour) // the first whole hour
			if first.Sub(start) <= time.Hour/2 {
				w.hourFrom, w.add[0] = first, [2]time.Time{start, first}
			} else {
				w.hourFrom, w.sub[0] = first.Add(-time.Hour), [2]time.Time{first.Add(-time.Hour), start}
			}
		} else {
			w.hourFrom = first
		}
	}
	if !until.IsZero() {
		last := end.Truncate(time.Hour) // the end of the last whole hour
		if last.Before(end) && end.Sub(last) > time.Hour/2 {
			w.hourTo, w.sub[1] = last.Add(time.Hour), [2]time.Time{end, last.Add(time.Hour)}
		} else {
			w.hourTo, w.add[1] = last, [2]time.Time{last, end}
		}
	}
	return w
}

// args are statsSums' parameters from $2 on.
func (w statsWindow) args() []any {
	return []any{w.hourFrom, w.hourTo, w.add[0][0], w.add[0][1], w.add[1][0], w.add[1][1],
		w.sub[0][0], w.sub[0][1], w.sub[1][0], w.sub[1][1]}
}

// statsDrifts counts drift events per probe; %s is the WHERE clause of the
// window on detected_at, a range of the index on detected_at.
const statsDrifts = `SELECT probe, count(*) FROM drifts%s GROUP BY probe`

// statsLatest is, for every probe of $1 (a text array), its last run in
// [$2, $3), in the order history is listed in, with the kind of probe and
// the MCP tool and server that made it (read from the table row, as its
// code is), and the start of its current streak, however long: the first
// run after the latest run with another outcome (of those in $4, a text
// array of every outcome) up to the last run. A probe without a run in the window has no row. Every
// read is an index search per probe: the last run backwards on
// results_probe_started_covering; the latest run of each other outcome on
// results_probe_outcome_started (a run with another outcome that started
// in the same millisecond as the last run was recorded before it, else it
// would be the last run, so it counts as before it); and the first run
// after the latest of those, forwards on results_probe_started_covering
// from (started_at, id), or from the first run when there is none. Like
// statsSumsSQL, %[1]s is where statsLatestIn narrows it to some locations.
const statsLatestSQL = `SELECT p.n, l.started_at, l.outcome, l.code, l.kind, l.mcp_tool, l.mcp_server, s.started_at
FROM unnest($1::text[]) WITH ORDINALITY AS p (probe, n)
CROSS JOIN LATERAL (
    SELECT started_at, outcome, code, kind, mcp_tool, mcp_server FROM results
    WHERE probe = p.probe%[1]s AND started_at >= $2 AND started_at < $3
    ORDER BY started_at DESC, id DESC
    LIMIT 1
) l
LEFT JOIN LATERAL (
    SELECT b.started_at, b.id
    FROM unnest($4::text[]) AS o (outcome)
    CROSS JOIN LATERAL (
        SELECT started_at, id FROM results
        WHERE probe = p.probe%[1]s AND outcome = o.outcome AND started_at <= l.started_at
        ORDER BY started_at DESC, id DESC
        LIMIT 1
    ) b
    WHERE o.outcome <> l.outcome
    ORDER BY b.started_at DESC, b.id DESC
    LIMIT 1
) k ON true
CROSS JOIN LATERAL (
    SELECT started_at FROM results
    WHERE probe = p.probe%[1]s AND (started_at, id) > (coalesce(k.started_at, $5), coalesce(k.id, 0))
    ORDER BY started_at, id
    LIMIT 1
) s
ORDER BY p.n`

var (
	// statsLatest reads the runs of every location.
	statsLatest = fmt.Sprintf(statsLatestSQL, "")
	// statsLatestIn reads those from the locations of $6, a text array.
	statsLatestIn = fmt.Sprintf(statsLatestSQL, inLocations("$6"))
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
// Everything is read from indexes in one snapshot: the probe names (one
// index search each), then, for a part of the probes at a time
// (statsParts), two statements over all of the part's probes at once: the
// counters and durations in the window (statsSums: the window's whole
// hours from probe_hours, its partial first and last hour from ranges of
// the covering index results_probe_started_covering), and the last run
// with the start of the current streak, however long (statsLatest); then
// the drift events. A second transaction on another connection, importing
// the first's snapshot, reads parts alongside. The cost follows the
// window's hours and probes, not its runs or the stored history, and the
// round trips follow the parts, not the probes.
func (s *Store) Stats(ctx context.Context, since, until time.Time, locations ...string) ([]results.ProbeStats, error) {
	st, err := s.stats(ctx, since, until, locations)
	if err != nil {
		return nil, fmt.Errorf("postgres: stats: %w", ctxErr(ctx, err))
	}
	return st, nil
}

func (s *Store) stats(ctx context.Context, since, until time.Time, locations []string) ([]results.ProbeStats, error) {
	tx, err := s.pool.BeginTx(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// A helper reads some of the probes in a transaction of its own, on
	// another connection, while this one reads the others (statsParts).
	h := s.startStatsHelper(ctx)
	defer h.stop()

	var (
		b        pgx.Batch
		probes   []string
		exported string
	)
	b.Queue(probeNames).Query(func(rows pgx.Rows) error {
		probes, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	b.Queue("SELECT pg_export_snapshot()").QueryRow(func(row pgx.Row) error { return row.Scan(&exported) })
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, fmt.Errorf("probes: %w", err)
	}
	if len(probes) == 0 {
		return nil, nil
	}
	all := make([]results.ProbeStats, len(probes))
	for i, probe := range probes {
		all[i].Probe = probe
	}
	work := newStatsWork(all, since, until, locations)
	if statsTestHook != nil {
		statsTestHook(work, false)
	}
	h.start(work, exported)
	if statsTestHook != nil {
		statsTestHook(work, true)
	}
	if err := work.read(ctx, tx, false); err != nil {
		return nil, err
	}
	var drifts where
	drifts.window("detected_at", since, until)
	rows, err := tx.Query(ctx, fmt.Sprintf(statsDrifts, drifts.String()), drifts.args...)
	if err != nil {
		return nil, fmt.Errorf("drifts: %w", err)
	}
	counts, err := driftCounts(rows)
	if err != nil {
		return nil, fmt.Errorf("drifts: %w", err)
	}
	if err := h.wait(); err != nil {
		return nil, err
	}
	var out []results.ProbeStats
	for i, p := range all {
		switch {
		case p.Runs > 0 && !work.found[i]:
			return nil, fmt.Errorf("%s: last run: %w", p.Probe, pgx.ErrNoRows)
		case p.Runs > 0:
			p.DriftEvents = counts[p.Probe]
			out = append(out, p)
		}
	}
	return out, nil
}

// summarize fills the counters and percentiles of each of ps, in the order
// statsSums was given the probes, from its answer; they stay zero for a
// probe without runs in the window.
func summarize(rows pgx.Rows, ps []results.ProbeStats) error {
	defer rows.Close()
	hist := hourly.NewHistogram()
	var (
		// Over no rows, sum() is NULL: zero.
		hours, edges     [6]*int64
		buckets          []byte
		durations, signs []int64
	)
	i := 0
	for rows.Next() {
		if i == len(ps) {
			return fmt.Errorf("sums: more rows than the %d probes", len(ps))
		}
		p := &ps[i]
		i++
		// RawBytes-like: buckets is only parsed, never kept.
		if err := rows.Scan(&hours[0], &hours[1], &hours[2], &hours[3], &hours[4], &hours[5], &buckets,
			&edges[0], &edges[1], &edges[2], &edges[3], &edges[4], &edges[5], &durations, &signs); err != nil {
			return fmt.Errorf("%s: %w", p.Probe, err)
		}
		var sums [6]int
		for k := range sums {
			sums[k] = int(num(hours[k]) + num(edges[k]))
		}
		p.Runs, p.Pass, p.ContractError, p.Unavailable, p.PassedAfterRetries, p.Retries =
			sums[0], sums[1], sums[2], sums[3], sums[4], sums[5]
		if err := percentiles(p, hist, buckets, durations, signs); err != nil {
			return fmt.Errorf("%s: %w", p.Probe, err)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if i != len(ps) {
		return fmt.Errorf("sums: %d rows for %d probes", i, len(ps))
	}
	return nil
}

// percentiles sets p's percentiles from the duration_buckets objects of
// its whole hours (their text, joined by commas) and the durations of the
// runs of its cut hours, each counted with its sign (-1: a run taken away
// from an hour). hist is left empty.
func percentiles(p *results.ProbeStats, hist *hourly.Histogram, buckets []byte, durations, signs []int64) error {
	defer hist.Reset()
	if len(signs) != len(durations) {
		return fmt.Errorf("sums: %d durations, %d signs", len(durations), len(signs))
	}
	if err := parseBucketsText(buckets, hist.Add); err != nil {
		return fmt.Errorf("probe_hours: %w", err)
	}
	for i, ms := range durations {
		hist.Add(hourly.Bucket(ms), signs[i])
	}
	if hist.Runs() != int64(p.Runs) {
		return fmt.Errorf("probe_hours: %d runs in duration buckets, %d counted", hist.Runs(), p.Runs)
	}
	pct := hist.Percentiles(50, 95, 99)
	p.P50 = time.Duration(pct[0]) * time.Millisecond
	p.P95 = time.Duration(pct[1]) * time.Millisecond
	p.P99 = time.Duration(pct[2]) * time.Millisecond
	return nil
}

// latest fills the last run (its outcome, start and kind) and
// OutcomeSince of each of ps that has a run in the window from
// statsLatest's answer, and marks it in found.
func latest(rows pgx.Rows, ps []results.ProbeStats, found []bool) error {
	defer rows.Close()
	var (
		n                  int64
		lastAt, since      time.Time
		outcome, kind      string
		code, tool, server *string
	)
	for rows.Next() {
		if err := rows.Scan(&n, &lastAt, &outcome, &code, &kind, &tool, &server, &since); err != nil {
			return fmt.Errorf("last run: %w", err)
		}
		if n < 1 || n > int64(len(ps)) || found[n-1] {
			return fmt.Errorf("last run: probe number %d of %d", n, len(ps))
		}
		p := &ps[n-1]
		found[n-1] = true
		p.LastOutcome, p.LastCode = results.Outcome(outcome), results.Code(str(code))
		p.LastStartedAt, p.OutcomeSince = lastAt.UTC(), since.UTC()
		p.LastKind, p.LastMCP = results.ProbeKind(kind), nil
		if tool != nil {
			p.LastMCP = &results.MCPTarget{Tool: *tool, Server: str(server)}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("last run: %w", err)
	}
	return nil
}

// driftCounts reads statsDrifts' answer: drift events per probe.
func driftCounts(rows pgx.Rows) (map[string]int, error) {
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var probe string
		var n int
		if err := rows.Scan(&probe, &n); err != nil {
			return nil, err
		}
		counts[probe] = n
	}
	return counts, rows.Err()
}

// readStrings returns the single text column of every row of query.
func readStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
