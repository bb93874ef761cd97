package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
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

// statsCounts sums up one probe's runs in a window, in one row: the whole
// UTC hours of the window from probe_hours ($2 <= hour < $3, a range of
// its primary key), and the runs of the partial hours at either end from
// results ([$4, $5) and [$6, $7), ranges of the covering index
// results_probe_started_covering, each a branch of its own: with an OR
// Postgres may read the time index for every probe's runs instead).
const statsCounts = `SELECT sum(runs)::bigint, sum(pass)::bigint, sum(contract_error)::bigint,
    sum(unavailable)::bigint, sum(passed_after_retries)::bigint, sum(retries)::bigint
FROM (
    SELECT runs, pass, contract_error, unavailable, passed_after_retries, retries
    FROM probe_hours
    WHERE probe = $1 AND hour >= $2 AND hour < $3
    UNION ALL
    SELECT 1, (outcome = 'pass')::int, (outcome = 'contract_error')::int, (outcome = 'unavailable')::int,
        (outcome = 'pass' AND attempts > 1)::int, greatest(attempts - 1, 0)
    FROM results
    WHERE probe = $1 AND started_at >= $4 AND started_at < $5
    UNION ALL
    SELECT 1, (outcome = 'pass')::int, (outcome = 'contract_error')::int, (outcome = 'unavailable')::int,
        (outcome = 'pass' AND attempts > 1)::int, greatest(attempts - 1, 0)
    FROM results
    WHERE probe = $1 AND started_at >= $6 AND started_at < $7
) x`

// statsDurations is what statsCounts counts, as durations: the
// duration buckets of the whole hours (false: a bucket and its runs) and
// the durations of the runs of the partial hours (true: a duration in
// milliseconds and its runs). Go merges them into one histogram per probe.
const statsDurations = `SELECT b.key::bigint, b.value::bigint, false
FROM probe_hours h CROSS JOIN LATERAL jsonb_each_text(h.duration_buckets) b
WHERE h.probe = $1 AND h.hour >= $2 AND h.hour < $3
UNION ALL
SELECT duration_ms, count(*), true
FROM (
    SELECT duration_ms FROM results WHERE probe = $1 AND started_at >= $4 AND started_at < $5
    UNION ALL
    SELECT duration_ms FROM results WHERE probe = $1 AND started_at >= $6 AND started_at < $7
) r
GROUP BY duration_ms`

// statsWindow is a window of Stats split for statsCounts: the whole UTC
// hours inside it, [hourFrom, hourTo), and the ranges of started_at
// before and after them, [head[0], head[1]) and [tail[0], tail[1]), read
// from results; a range whose ends are equal is empty. An open end of the
// window takes every hour on that side.
type statsWindow struct {
	hourFrom, hourTo time.Time
	head, tail       [2]time.Time
}

// splitWindow splits [since, until), each bound rounded up to the
// millisecond as storedTime does; a zero bound is an open end.
func splitWindow(since, until time.Time) statsWindow {
	w := statsWindow{hourFrom: minTime, hourTo: maxTime,
		head: [2]time.Time{minTime, minTime}, tail: [2]time.Time{maxTime, maxTime}}
	lo, hi := minTime, maxTime
	if !since.IsZero() {
		start := storedTime(since)
		first := start.Truncate(time.Hour) // UTC hours: Truncate counts from the zero time
		if first.Before(start) {
			first = first.Add(time.Hour)
		}
		lo = start
		w.hourFrom, w.head = first, [2]time.Time{lo, first}
	}
	if !until.IsZero() {
		end := storedTime(until)
		last := end.Truncate(time.Hour)
		hi = end
		w.hourTo, w.tail = last, [2]time.Time{last, hi}
	}
	if !w.hourFrom.Before(w.hourTo) {
		// No whole hour: the window, if not empty, lies within one hour
		// or across the boundary of two.
		return statsWindow{hourFrom: maxTime, hourTo: maxTime,
			head: [2]time.Time{lo, hi}, tail: [2]time.Time{maxTime, maxTime}}
	}
	return w
}

func (w statsWindow) args(probe string) []any {
	return []any{probe, w.hourFrom, w.hourTo, w.head[0], w.head[1], w.tail[0], w.tail[1]}
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
	hist := newHistogram()
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
func summarizeOne(br pgx.BatchResults, p *results.ProbeStats, hist *histogram) error {
	// Over no rows, sum() is NULL: zero.
	var runs, pass, contract, unavail, after, extra *int64
	if err := br.QueryRow().Scan(&runs, &pass, &contract, &unavail, &after, &extra); err != nil {
		return err
	}
	p.Runs, p.Pass, p.ContractError, p.Unavailable = int(num(runs)), int(num(pass)), int(num(contract)), int(num(unavail))
	p.PassedAfterRetries, p.Retries = int(num(after)), int(num(extra))

	defer hist.reset()
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
			v = bucketOf(v)
		} else if v < 0 || bucketOf(v) != v || n < 0 {
			rows.Close()
			return fmt.Errorf("probe_hours: %w: bucket %d with %d runs", errBuckets, v, n)
		}
		hist.add(v, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if hist.runs != int64(p.Runs) {
		return fmt.Errorf("probe_hours: %d runs in duration buckets, %d counted", hist.runs, p.Runs)
	}
	pct := hist.percentiles(50, 95, 99)
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
