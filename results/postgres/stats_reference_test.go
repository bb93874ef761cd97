package postgres

// The per-probe implementation of Stats that the set-based one replaced,
// kept as the reference it must agree with (TestStatsMatchesPerProbe):
// five pipelined statements per probe.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/hourly"
)

// refCounts sums up one probe's runs in a window, in one row: the UTC
// hours of probe_hours in [$2, $3) (a range of its primary key), plus the
// runs started in [$4, $5) and [$6, $7), less those started in [$8, $9)
// and [$10, $11) (ranges of the covering index
// results_probe_started_covering, each a branch of its own: with an OR
// Postgres may read the time index for every probe's runs instead). See
// statsWindow.
const refCounts = `SELECT sum(runs)::bigint, sum(pass)::bigint, sum(contract_error)::bigint,
    sum(unavailable)::bigint, sum(passed_after_retries)::bigint, sum(retries)::bigint
FROM (
    SELECT runs, pass, contract_error, unavailable, passed_after_retries, retries
    FROM probe_hours
    WHERE probe = $1 AND hour >= $2 AND hour < $3
    UNION ALL
    SELECT sign, sign * (outcome = 'pass')::int, sign * (outcome = 'contract_error')::int,
        sign * (outcome = 'unavailable')::int, sign * (outcome = 'pass' AND attempts > 1)::int,
        sign * greatest(attempts - 1, 0)
    FROM (` + refEdges + `) r
) x`

// refEdges is the runs of the cut hours of refCounts' window, each
// with the sign it is counted with: +1 for the runs inside the window,
// -1 for those of a whole hour of probe_hours that lie outside it.
const refEdges = `
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

// refDurations is what refCounts counts, as durations: the
// duration buckets of the hours (false: a bucket and its runs) and the
// durations of the runs of the cut hours (true: a duration in
// milliseconds and its runs, negative for runs taken away). Go merges
// them into one histogram per probe.
const refDurations = `SELECT b.key::bigint, b.value::bigint, false
FROM probe_hours h CROSS JOIN LATERAL jsonb_each_text(h.duration_buckets) b
WHERE h.probe = $1 AND h.hour >= $2 AND h.hour < $3
UNION ALL
SELECT duration_ms, sum(sign), true
FROM (` + refEdges + `) r
GROUP BY duration_ms`

// refLast is a probe's last run in the window, in the order history is
// listed in, with its kind and MCP tool: an index search.
const refLast = `SELECT started_at, outcome, code, kind, mcp_tool, mcp_server FROM results
WHERE probe = $1 AND started_at >= $2 AND started_at < $3
ORDER BY started_at DESC, id DESC
LIMIT 1`

// refStreakBreak is the probe's latest run with outcome $2 up to the last run
// in the window, which started at $3: an index search on (probe, outcome,
// started_at, id). A run with another outcome that started in the same
// millisecond as the last run was recorded before it (else it would be
// the last run), so it counts as before it.
const refStreakBreak = `SELECT started_at, id FROM results
WHERE probe = $1 AND outcome = $2 AND started_at <= $3
ORDER BY started_at DESC, id DESC
LIMIT 1`

// refStreakStart is the probe's first run after the run ($2, $3); (minTime,
// 0) stands for "before the first run".
const refStreakStart = `SELECT started_at FROM results
WHERE probe = $1 AND (started_at, id) > ($2, $3)
ORDER BY started_at, id
LIMIT 1`

func (s *Store) refStats(ctx context.Context, since, until time.Time) ([]results.ProbeStats, error) {
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
	if err := refSummarize(ctx, tx, all, window, lo, hi); err != nil {
		return nil, err
	}
	var out []results.ProbeStats
	for _, p := range all {
		if p.Runs > 0 {
			out = append(out, p)
		}
	}
	if err := refStreaks(ctx, tx, out); err != nil {
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

// refSummarize fills the counters, percentiles and last run of each of ps
// from the probe's runs in the window, with every probe's queries sent at
// once; they stay zero for a probe without runs there.
func refSummarize(ctx context.Context, tx pgx.Tx, ps []results.ProbeStats, w statsWindow, lo, hi time.Time) (err error) {
	var b pgx.Batch
	for i := range ps {
		args := append([]any{ps[i].Probe}, w.args()...)
		b.Queue(refCounts, args...)
		b.Queue(refDurations, args...)
		b.Queue(refLast, ps[i].Probe, lo, hi)
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
		if err := refSummarizeOne(br, p, hist); err != nil {
			return fmt.Errorf("%s: %w", p.Probe, err)
		}
	}
	return nil
}

// refSummarizeOne reads the answers to one probe's queries of refSummarize.
// hist is left empty.
func refSummarizeOne(br pgx.BatchResults, p *results.ProbeStats, hist *hourly.Histogram) error {
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
		lastAt             time.Time
		outcome, kind      string
		code, tool, server *string
	)
	err = br.QueryRow().Scan(&lastAt, &outcome, &code, &kind, &tool, &server)
	if errors.Is(err, pgx.ErrNoRows) && p.Runs == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("last run: %w", err)
	}
	p.LastOutcome, p.LastCode = results.Outcome(outcome), results.Code(str(code))
	p.LastStartedAt, p.LastKind = lastAt.UTC(), results.ProbeKind(kind)
	if tool != nil {
		p.LastMCP = &results.MCPTarget{Tool: *tool, Server: str(server)}
	}
	return nil
}

// refStreaks fills OutcomeSince of each of ps, whose last run is known: the
// streak ends at the last run and starts right after the latest earlier
// run with another outcome. Two rounds of pipelined queries: the latest
// run of each other outcome, then the first run after the latest of those.
func refStreaks(ctx context.Context, tx pgx.Tx, ps []results.ProbeStats) error {
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
			b.Queue(refStreakBreak, ps[i].Probe, string(o), ps[i].LastStartedAt).QueryRow(func(row pgx.Row) error {
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
		b.Queue(refStreakStart, ps[i].Probe, breaks[i].at, breaks[i].id).QueryRow(func(row pgx.Row) error {
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

// TestStatsMatchesPerProbe: the set-based Stats answers exactly what the
// per-probe statements it replaced answered (refStats), on a random
// history of several probes (runs on and around hour boundaries, several
// in one millisecond, long and short streaks, runs with retries, a probe
// whose runs all lie before most windows, drift events) and windows
// with random, hour-aligned and open ends.
func TestStatsMatchesPerProbe(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	rng := rand.New(rand.NewPCG(26, 1))
	base := time.Date(2026, 10, 26, 9, 0, 0, 0, time.UTC)
	span := 6 * time.Hour
	// A time in the history: often on an hour or a millisecond off it.
	at := func() time.Time {
		h := base.Add(time.Duration(rng.IntN(6)) * time.Hour)
		switch rng.IntN(5) {
		case 0:
			return h
		case 1:
			return h.Add(time.Duration(rng.IntN(3)-1) * time.Millisecond)
		default:
			return base.Add(time.Duration(rng.Int64N(int64(span))) / time.Millisecond * time.Millisecond)
		}
	}
	var recs []results.Result
	probes := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	for i := range 900 {
		probe := probes[rng.IntN(len(probes))]
		start := at()
		if probe == "zeta" {
			start = base.Add(-time.Duration(1+rng.IntN(3600_000)) * time.Millisecond) // before every hour
		}
		// Streaks: a probe's outcome follows the hour it ran in, mostly.
		outcome := results.Outcomes[(int(start.Sub(base)/time.Hour)+len(probe))%3]
		if rng.IntN(4) == 0 {
			outcome = results.Outcomes[rng.IntN(3)]
		}
		r := results.Result{
			OperationID: fmt.Sprintf("op-%d", i),
			Probe:       probe,
			Kind:        results.ProbeHTTP,
			StartedAt:   start,
			Duration:    time.Duration(rng.IntN(3000)) * time.Millisecond,
			Outcome:     outcome,
			Consumer:    results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"},
		}
		for n := 1; n <= rng.IntN(3); n++ {
			r.Attempts = append(r.Attempts, results.Attempt{Number: n, StartedAt: start, Duration: time.Millisecond})
		}
		switch outcome {
		case results.ContractError:
			r.Error = &results.Error{Code: results.CodeInvalidJSON, Message: "bad"}
		case results.Unavailable:
			r.Error = &results.Error{Code: results.CodeTimeout, Message: "slow"}
		}
		recs = append(recs, r)
		if i%7 == 0 { // the same millisecond, recorded after it
			r.OperationID += "-tie"
			r.Outcome, r.Error = results.Pass, nil
			recs = append(recs, r)
		}
	}
	// Recorded in order, so that ties in a millisecond get ids in the
	// order above; in parallel batches for speed.
	for i := 0; i < len(recs); i += 50 {
		var wg sync.WaitGroup
		errs := make(chan error, 50)
		for _, r := range recs[i:min(i+50, len(recs))] {
			if strings.HasSuffix(r.OperationID, "-tie") {
				continue
			}
			wg.Go(func() { errs <- s.Record(ctx, r) })
		}
		wg.Wait()
		for _, r := range recs[i:min(i+50, len(recs))] {
			if strings.HasSuffix(r.OperationID, "-tie") {
				if err := s.Record(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		}
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	pgtest.Exec(t, dsn, `INSERT INTO drifts (probe, operation_id, detected_at, baseline, current, diff)
SELECT probe, operation_id, started_at, 'a', 'b', 'd' FROM results WHERE id % 5 = 0`)

	windows := [][2]time.Time{{}, {base.Add(time.Hour), {}}, {{}, base.Add(2 * time.Hour)},
		{base.Add(-time.Hour), base}, {base.Add(time.Hour), base.Add(time.Hour)}, {base.Add(3 * time.Hour), base.Add(time.Hour)}}
	for range 150 {
		w := [2]time.Time{at(), at()}
		if w[1].Before(w[0]) && rng.IntN(4) > 0 {
			w[0], w[1] = w[1], w[0]
		}
		switch rng.IntN(6) {
		case 0:
			w[0] = time.Time{}
		case 1:
			w[1] = time.Time{}
		case 2:
			w[1] = w[0].Add(time.Duration(rng.Int64N(int64(time.Hour)))) // within an hour or across one boundary
		case 3:
			w[0] = w[0].Add(time.Duration(rng.IntN(1000)) * time.Microsecond) // below a millisecond
		}
		windows = append(windows, w)
	}
	for _, w := range windows {
		want, err := s.refStats(ctx, w[0], w[1])
		if err != nil {
			t.Fatalf("[%v, %v): per probe: %v", w[0], w[1], err)
		}
		got, err := s.Stats(ctx, w[0], w[1])
		if err != nil {
			t.Fatalf("[%v, %v): %v", w[0], w[1], err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("window [%v, %v):\n got  %+v\n want %+v", w[0], w[1], got, want)
		}
	}
}

// TestStatsHelperSeesTheSnapshot: the probes Stats' second transaction
// reads are read in the snapshot of the first, so runs committed between
// the two transactions' starts count in neither.
func TestStatsHelperSeesTheSnapshot(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := time.Date(2026, 10, 26, 9, 0, 0, 0, time.UTC)
	run := func(id, probe string, at time.Time, o results.Outcome) {
		t.Helper()
		r := results.Result{OperationID: id, Probe: probe, Kind: results.ProbeHTTP, StartedAt: at,
			Duration: 10 * time.Millisecond, Outcome: o, Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"}}
		if o != results.Pass {
			r.Error = &results.Error{Code: results.CodeTimeout, Message: "slow"}
		}
		if err := s.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// Every probe is a part of its own.
	var probes []string
	for i := range statsParts {
		probe := fmt.Sprintf("p%d", i)
		probes = append(probes, probe)
		run(probe+"-1", probe, base, results.Pass)
	}
	want, err := s.Stats(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}

	var helped int
	statsTestHook = func(w *statsWork, started bool) {
		if !started {
			for i, probe := range probes {
				run(probe+"-2", probe, base.Add(time.Duration(i+1)*time.Minute), results.Unavailable)
			}
			return
		}
		// Wait for the helper to claim a part.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			w.mu.Lock()
			helped = w.helped
			w.mu.Unlock()
			if helped > 0 {
				return
			}
		}
	}
	defer func() { statsTestHook = nil }()
	got, err := s.Stats(ctx, time.Time{}, time.Time{})
	statsTestHook = nil
	if err != nil {
		t.Fatal(err)
	}
	if helped == 0 {
		t.Fatal("the second transaction read no part")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Stats saw runs committed after it began:\n got  %+v\n want %+v", got, want)
	}
	after, err := s.Stats(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if after[0].Runs != 2 || after[0].LastOutcome != results.Unavailable {
		t.Errorf("after: %+v, want the second run counted", after[0])
	}
}
