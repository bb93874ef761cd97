package postgres

import (
	"context"
	"errors"
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

// statsCounts sums up one probe's runs in a window, in one row: the UTC
// hours of probe_hours in [$2, $3) (a range of its primary key), plus the
// runs started in [$4, $5) and [$6, $7), less those started in [$8, $9)
// and [$10, $11) (ranges of the covering index
// results_probe_started_covering, each a branch of its own: with an OR
// Postgres may read the time index for every probe's runs instead). See
// statsWindow.
const statsCounts = `SELECT sum(runs)::bigint, sum(pass)::bigint, sum(contract_error)::bigint,
    sum(unavailable)::bigint, sum(passed_after_retries)::bigint, sum(retries)::bigint
FROM (
    SELECT runs, pass, contract_error, unavailable, passed_after_retries, retries
    FROM probe_hours
    WHERE probe = $1 AND hour >= $2 AND hour < $3
    UNION ALL
    SELECT sign, sign * (outcome = 'pass')::int, sign * (outcome = 'contract_error')::int,
        sign * (outcome = 'unavailable')::int, sign * (outcome = 'pass' AND attempts > 1)::int,
        sign * greatest(attempts - 1, 0)
    FROM (` + statsEdges + `) r
) x`

// statsEdges is the runs of the cut hours of statsCounts' window, each
// with the sign it is counted with: +1 for the runs inside the window,
// -1 for those of a whole hour of probe_hours that lie outside it.
const statsEdges = `
        SELECT 1 AS sign, outcome, attempts, duration_ms FROM results
        WHERE probe = $1 AND started_at >= $4 AND started_at < $5
        UNION ALL
        SELECT 1, outcome, attempts, duration_ms FROM results
        WHERE probe = $1 AND started_at >= $6 AND started_at < $7
        UNION ALL
        SELECT -1, outcome, attempts, duration_ms FROM results
        WHERE probe = $1 AND started_at >= $8 AND started_at < $9
        UNION ALL
        SELECT -1, outcome, attempts, duration_ms FROM results
        WHERE probe = $1 AND started_at >= $10 AND started_at < $11`

// statsDurations is what statsCounts counts, as durations: the
// duration buckets of the hours (false: a bucket and its runs) and the
// durations of the runs of the cut hours (true: a duration in
// milliseconds and its runs, negative for runs taken away). Go merges
// them into one histogram per probe.
const statsDurations = `SELECT b.key::bigint, b.value::bigint, false
FROM probe_hours h CROSS JOIN LATERAL jsonb_each_text(h.duration_buckets) b
WHERE h.probe = $1 AND h.hour >= $2 AND h.hour < $3
UNION ALL
SELECT duration_ms, sum(sign), true
FROM (` + statsEdges + `) r
GROUP BY duration_ms`

// statsWindow is a window of Stats split for statsCounts: UTC hours
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

func (w statsWindow) args(probe string) []any {
	return []any{probe, w.hourFrom, w.hourTo, w.add[0][0], w.add[0][1], w.add[1][0], w.add[1][1],
		w.sub[0][0], w.sub[0][1], w.sub[1][0], w.sub[1][1]}
}

// statsDrifts counts drift events per probe; %s is the WHERE clause of the
// window on detected_at, a range of the index on detected_at.
const statsDrifts = `SELECT probe, count(*) FROM drifts%s GROUP BY probe`

// statsLast is a probe's last run in the window, in the order history is
// listed in: an index search.
const statsLast = `SELECT started_at, outcome, code FROM results
WHERE probe = $1 AND started_at >= $2 AND started_at < $3
ORDER BY started_at DESC, id DESC
LIMIT 1`

// streakBreak is the probe's latest run with outcome $2 up to the last run
// in the window, which started at $3: an index search on (probe, outcome,
// started_at, id). A run with another outcome that started in the same
// millisecond as the last run was recorded before it (else it would be
// the last run), so it counts as before it.
const streakBreak = `SELECT started_at, id FROM results
WHERE probe = $1 AND outcome = $2 AND started_at <= $3
ORDER BY started_at DESC, id DESC
LIMIT 1`

// streakStart is the probe's first run after the run ($2, $3); (minTime,
// 0) stands for "before the first run".
const streakStart = `SELECT started_at FROM results
WHERE probe = $1 AND (started_at, id) > ($2, $3)
ORDER BY started_at, id
LIMIT 1`

// Stats returns, for every probe with runs started in [since, until), what
// its runs there add up to, sorted by probe. A zero since or until leaves
// that side of the window open; the bounds are exact as in History. Drift
// events count when their detected_at lies in the same window.
//
// Everything is read in one read transaction, from indexes: the probe
// names (one index search each); each probe's counters and durations in
// the window (the window's whole hours from probe_hours, its partial
// first and last hour from ranges of the covering index
// results_probe_started_covering) and its last run; and the start of its
// current streak, however long: the latest run of each other outcome
// before the last run, then the first run after the latest of those. The
// cost follows the window's hours and probes, not its runs or the stored
// history. The per-probe queries are pipelined, every probe's at once, so
// that the round trips do not grow with the probes: five in all.
func (s *Store) Stats(ctx context.Context, since, until time.Time) ([]results.ProbeStats, error) {
	st, err := s.stats(ctx, since, until)
	if err != nil {
		return nil, fmt.Errorf("postgres: stats: %w", ctxErr(ctx, err))
	}
	return st, nil
}

func (s *Store) stats(ctx context.Context, since, until time.Time) ([]results.ProbeStats, error) {
	tx, err := s.pool.BeginTx(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	lo, hi := minTime, maxTime
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
	window := splitWindow(since, until)
	all := make([]results.ProbeStats, len(probes))
	for i, probe := range probes {
		all[i].Probe = probe
	}
	if err := summarize(ctx, tx, all, window, lo, hi); err != nil {
		return nil, err
	}
	var out []results.ProbeStats
	for _, p := range all {
		if p.Runs > 0 {
			out = append(out, p)
		}
	}
	if err := streaks(ctx, tx, out); err != nil {
		return nil, err
	}

	var drifts where
	drifts.window("detected_at", since, until)
	rows, err := tx.Query(ctx, fmt.Sprintf(statsDrifts, drifts.String()), drifts.args...)
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

// summarize fills the counters, percentiles and last run of each of ps
// from the probe's runs in the window, with every probe's queries sent at
// once; they stay zero for a probe without runs there.
func summarize(ctx context.Context, tx pgx.Tx, ps []results.ProbeStats, w statsWindow, lo, hi time.Time) (err error) {
	var b pgx.Batch
	for i := range ps {
		args := w.args(ps[i].Probe)
		b.Queue(statsCounts, args...)
		b.Queue(statsDurations, args...)
		b.Queue(statsLast, ps[i].Probe, lo, hi)
	}
	br := tx.SendBatch(ctx, &b)
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	hist := hourly.NewHistogram()
	for i := range ps {
		p := &ps[i]
		if err := summarizeOne(br, p, hist); err != nil {
			return fmt.Errorf("%s: %w", p.Probe, err)
		}
	}
	return nil
}

// summarizeOne reads the answers to one probe's queries of summarize.
// hist is left empty.
func summarizeOne(br pgx.BatchResults, p *results.ProbeStats, hist *hourly.Histogram) error {
	// Over no rows, sum() is NULL: zero.
	var runs, pass, contract, unavail, after, extra *int64
	if err := br.QueryRow().Scan(&runs, &pass, &contract, &unavail, &after, &extra); err != nil {
		return err
	}
	p.Runs, p.Pass, p.ContractError, p.Unavailable = int(num(runs)), int(num(pass)), int(num(contract)), int(num(unavail))
	p.PassedAfterRetries, p.Retries = int(num(after)), int(num(extra))

	defer hist.Reset()
	rows, err := br.Query()
	if err != nil {
		return err
	}
	for rows.Next() {
		var (
			v, n     int64
			duration bool
		)
		if err := rows.Scan(&v, &n, &duration); err != nil {
			rows.Close()
			return err
		}
		if duration {
			v = hourly.Bucket(v) // n < 0: runs taken away from an hour
		} else if v < 0 || hourly.Bucket(v) != v || n < 0 {
			rows.Close()
			return fmt.Errorf("probe_hours: %w: bucket %d with %d runs", errBuckets, v, n)
		}
		hist.Add(v, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if hist.Runs() != int64(p.Runs) {
		return fmt.Errorf("probe_hours: %d runs in duration buckets, %d counted", hist.Runs(), p.Runs)
	}
	pct := hist.Percentiles(50, 95, 99)
	p.P50 = time.Duration(pct[0]) * time.Millisecond
	p.P95 = time.Duration(pct[1]) * time.Millisecond
	p.P99 = time.Duration(pct[2]) * time.Millisecond

	var (
		lastAt  time.Time
		outcome string
		code    *string
	)
	err = br.QueryRow().Scan(&lastAt, &outcome, &code)
	if errors.Is(err, pgx.ErrNoRows) && p.Runs == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("last run: %w", err)
	}
	p.LastOutcome, p.LastCode = results.Outcome(outcome), results.Code(str(code))
	p.LastStartedAt = lastAt.UTC()
	return nil
}

// streaks fills OutcomeSince of each of ps, whose last run is known: the
// streak ends at the last run and starts right after the latest earlier
// run with another outcome. Two rounds of pipelined queries: the latest
// run of each other outcome, then the first run after the latest of those.
func streaks(ctx context.Context, tx pgx.Tx, ps []results.ProbeStats) error {
	type mark struct {
		at time.Time
		id int64
	}
	breaks := make([]mark, len(ps))
	for i := range breaks {
		breaks[i] = mark{at: minTime}
	}
	var b pgx.Batch
	for i := range ps {
		for _, o := range results.Outcomes {
			if o == ps[i].LastOutcome {
				continue
			}
			b.Queue(streakBreak, ps[i].Probe, string(o), ps[i].LastStartedAt).QueryRow(func(row pgx.Row) error {
				var m mark
				err := row.Scan(&m.at, &m.id)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("%s: streak: %w", ps[i].Probe, err)
				}
				if m.at.After(breaks[i].at) || (m.at.Equal(breaks[i].at) && m.id > breaks[i].id) {
					breaks[i] = m
				}
				return nil
			})
		}
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return err
	}
	b = pgx.Batch{}
	for i := range ps {
		b.Queue(streakStart, ps[i].Probe, breaks[i].at, breaks[i].id).QueryRow(func(row pgx.Row) error {
			var start time.Time
			if err := row.Scan(&start); err != nil {
				return fmt.Errorf("%s: streak start: %w", ps[i].Probe, err)
			}
			ps[i].OutcomeSince = start.UTC()
			return nil
		})
	}
	return tx.SendBatch(ctx, &b).Close()
}

// readStrings returns the single text column of every row of query.
func readStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
