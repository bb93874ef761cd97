package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// handStats is the operator's own answer to "toolpulse stats", written
// independently of the store's queries: FILTER counts, percentiles as the
// duration at rank ceil(p * n / 100) of each probe's sorted durations
// (without ceil(), which this SQLite lacks), and the streak start as the
// earliest run that no run of another outcome follows before the last one.
// ?1 and ?2 are the window's bounds as stored text.
const handStats = `
WITH w AS (SELECT * FROM results WHERE started_at >= ?1 AND started_at < ?2),
last AS (
    SELECT probe, started_at, id, outcome, code, kind, mcp_tool, mcp_server FROM (
        SELECT probe, started_at, id, outcome, code, kind, mcp_tool, mcp_server,
               row_number() OVER (PARTITION BY probe ORDER BY started_at DESC, id DESC) AS n
        FROM w)
    WHERE n = 1
),
ranked AS (
    SELECT probe, duration_ms, row_number() OVER (PARTITION BY probe ORDER BY duration_ms) AS rank
    FROM w
),
agg AS (
    SELECT probe,
           count(*) AS runs,
           count(*) FILTER (WHERE outcome = 'pass') AS pass,
           count(*) FILTER (WHERE outcome = 'contract_error') AS contract_error,
           count(*) FILTER (WHERE outcome = 'unavailable') AS unavailable,
           count(*) FILTER (WHERE outcome = 'pass' AND attempts > 1) AS passed_after_retries,
           coalesce(sum(attempts - 1) FILTER (WHERE attempts > 1), 0) AS retries
    FROM w GROUP BY probe
)
SELECT a.probe, a.runs, a.pass, a.contract_error, a.unavailable, a.passed_after_retries, a.retries,
       (SELECT duration_ms FROM ranked r WHERE r.probe = a.probe
        AND r.rank = (a.runs * 50) / 100 + ((a.runs * 50) % 100 > 0)) AS p50,
       (SELECT duration_ms FROM ranked r WHERE r.probe = a.probe
        AND r.rank = (a.runs * 95) / 100 + ((a.runs * 95) % 100 > 0)) AS p95,
       (SELECT duration_ms FROM ranked r WHERE r.probe = a.probe
        AND r.rank = (a.runs * 99) / 100 + ((a.runs * 99) % 100 > 0)) AS p99,
       (SELECT count(*) FROM drifts d
        WHERE d.probe = a.probe AND d.detected_at >= ?1 AND d.detected_at < ?2) AS drift_events,
       l.outcome, coalesce(l.code, ''), l.started_at,
       (SELECT min(x.started_at) FROM results x
        WHERE x.probe = a.probe AND (x.started_at, x.id) <= (l.started_at, l.id)
          AND NOT EXISTS (
              SELECT 1 FROM results y
              WHERE y.probe = a.probe AND y.outcome <> l.outcome
                AND (y.started_at, y.id) >= (x.started_at, x.id)
                AND (y.started_at, y.id) <= (l.started_at, l.id))) AS outcome_since,
       l.kind, l.mcp_tool, l.mcp_server
FROM agg a JOIN last l ON l.probe = a.probe
ORDER BY a.probe`

func statsBySQL(t *testing.T, db *sql.DB, since, until time.Time) []results.ProbeStats {
	t.Helper()
	lo, hi := "0000", "9999"
	if !since.IsZero() {
		lo = results.FormatTime(since)
	}
	if !until.IsZero() {
		hi = results.FormatTime(until)
	}
	rows, err := db.Query(handStats, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []results.ProbeStats
	for rows.Next() {
		var (
			p                              results.ProbeStats
			p50, p95, p99                  int64
			outcome, code, last, streakBeg string
			kind                           string
			tool, server                   sql.NullString
		)
		err := rows.Scan(&p.Probe, &p.Runs, &p.Pass, &p.ContractError, &p.Unavailable,
			&p.PassedAfterRetries, &p.Retries, &p50, &p95, &p99, &p.DriftEvents,
			&outcome, &code, &last, &streakBeg, &kind, &tool, &server)
		if err != nil {
			t.Fatal(err)
		}
		p.P50, p.P95, p.P99 = time.Duration(p50)*time.Millisecond, time.Duration(p95)*time.Millisecond, time.Duration(p99)*time.Millisecond
		p.LastOutcome, p.LastCode = results.Outcome(outcome), results.Code(code)
		p.LastStartedAt = parseStored(t, last)
		p.OutcomeSince = parseStored(t, streakBeg)
		p.LastKind = results.ProbeKind(kind)
		if tool.Valid {
			p.LastMCP = &results.MCPTarget{Tool: tool.String, Server: server.String}
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func parseStored(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(results.TimeLayout, s)
	if err != nil {
		t.Fatal(err)
	}
	return at.UTC()
}

// fillRandom records three days of runs of four probes at irregular
// intervals, with outcomes in streaks, retries, durations of a wide spread
// (some equal), runs that share a start, and drifts.
func fillRandom(t *testing.T, s *sqlite.Store, end time.Time) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	probes := []string{"alpha", "beta", "gamma", "delta"}
	codes := map[results.Outcome][]results.Code{
		results.ContractError: {results.CodeInvalidJSON, results.CodeEmptySelection, "unsupported_results_container"},
		results.Unavailable:   {results.CodeTimeout, results.CodeServerError},
	}
	n := 0
	for pi, probe := range probes {
		at := end.Add(-72 * time.Hour).Add(time.Duration(pi) * time.Minute)
		outcome := results.Pass
		for at.Before(end) {
			// Outcomes change in streaks; delta only ever passes.
			if probe != "delta" && rng.IntN(8) == 0 {
				outcome = results.Outcomes[rng.IntN(3)]
			}
			var code results.Code
			if outcome != results.Pass {
				code = codes[outcome][rng.IntN(len(codes[outcome]))]
			}
			attempts := 1
			if outcome != results.ContractError && rng.IntN(4) == 0 {
				attempts = 2 + rng.IntN(2)
			}
			n++
			id := fmt.Sprint("r", n)
			r := runAt(id, probe, at, outcome, code, rng.IntN(400)+rng.IntN(3)*1000, attempts)
			rec := &results.RunRecord{Result: r}
			if r.Shape != nil && rng.IntN(20) == 0 {
				rec.Drift = &results.Drift{Kind: results.DriftResponse, Probe: probe, OperationID: id, DetectedAt: at.Add(time.Millisecond),
					Baseline: fpMap, Current: r.Shape.Fingerprint, Diff: driftDiff}
				if r.Shape.Fingerprint == fpMap {
					rec.Drift.Baseline = fpList
				}
			}
			recordRun(t, s, rec)
			if rng.IntN(30) == 0 { // another run in the same millisecond
				n++
				record(t, s, runAt(fmt.Sprint("r", n), probe, at, results.Outcomes[rng.IntN(3)%2], results.CodeInvalidJSON, 5, 1))
			}
			at = at.Add(time.Duration(10+rng.IntN(50)) * time.Minute)
		}
	}
}

// TestStatsAgreesWithSQL compares Stats with handStats over several
// windows of fillRandom's three days, some on the hour and some not:
// counters, last runs and streaks exactly, and percentiles as the
// estimates of handStats' exact ones (see withEstimates).
func TestStatsAgreesWithSQL(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	end := t0
	fillRandom(t, s, end)
	op := operatorDB(t, path, "mode=ro")
	tests := []struct {
		name         string
		since, until time.Time
	}{
		{"last 24h", end.Add(-24 * time.Hour), time.Time{}},
		{"everything", time.Time{}, time.Time{}},
		{"a day in the middle", end.Add(-48 * time.Hour), end.Add(-24 * time.Hour)},
		{"until only", time.Time{}, end.Add(-60 * time.Hour)},
		{"one hour", end.Add(-30 * time.Hour), end.Add(-29 * time.Hour)},
		{"after the last run", end, time.Time{}},
		{"whole hours", end.Truncate(time.Hour).Add(-30 * time.Hour), end.Truncate(time.Hour).Add(-6 * time.Hour)},
		{"since on the hour", end.Truncate(time.Hour).Add(-47 * time.Hour), time.Time{}},
		{"until on the hour", time.Time{}, end.Truncate(time.Hour).Add(-20 * time.Hour)},
		{"within one hour", end.Truncate(time.Hour).Add(-40*time.Hour + 5*time.Minute), end.Truncate(time.Hour).Add(-40*time.Hour + 55*time.Minute)},
		{"across one hour's end", end.Truncate(time.Hour).Add(-40*time.Hour - 30*time.Minute), end.Truncate(time.Hour).Add(-40*time.Hour + 30*time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Stats(ctx, tt.since, tt.until)
			if err != nil {
				t.Fatal(err)
			}
			want := withEstimates(t, statsBySQL(t, op, tt.since, tt.until))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Stats:\n got  %+v\n want %+v", got, want)
			}
			if tt.name == "last 24h" {
				// The data must exercise what the comparison claims to.
				var streakBefore, retries, drifts bool
				for _, p := range got {
					streakBefore = streakBefore || p.OutcomeSince.Before(tt.since)
					retries = retries || p.PassedAfterRetries > 0
					drifts = drifts || p.DriftEvents > 0
				}
				if len(got) != 4 || !streakBefore || !retries || !drifts {
					t.Errorf("fillRandom does not cover the cases: %+v", got)
				}
			}
		})
	}
}

// TestViewsAgreeWithStats reads probe_summary_24h and latest_results as
// an operator would and checks them against Stats and Latest over the same
// rows. The view's 24 hours follow the clock, so the runs are placed
// relative to now, away from the window's edge.
func TestViewsAgreeWithStats(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	fillRandom(t, s, now.Add(-time.Minute))
	// fillRandom's runs are 10 to 60 minutes apart: move any that lies
	// within two minutes of "24 hours ago" out of the way, so that the
	// view and Stats, which read the clock a moment apart, see the same.
	op := operatorDB(t, path, "mode=ro")
	edge := now.Add(-24 * time.Hour)
	if n := count(t, op, `SELECT count(*) FROM results WHERE started_at BETWEEN ? AND ?`,
		results.FormatTime(edge.Add(-2*time.Minute)), results.FormatTime(edge.Add(2*time.Minute))); n > 0 {
		t.Fatalf("%d runs within 2 minutes of the edge of the window: move fillRandom's end", n)
	}

	stats, err := s.Stats(ctx, edge, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	summary := queryMaps(t, op, `SELECT * FROM probe_summary_24h`)
	if len(summary) != len(stats) || len(stats) == 0 {
		t.Fatalf("probe_summary_24h has %d rows, Stats %d", len(summary), len(stats))
	}
	rate := func(k, n int) float64 { return float64(k) / float64(n) }
	for i, p := range stats {
		row := summary[i]
		want := map[string]any{
			"probe": p.Probe, "runs": int64(p.Runs), "pass": int64(p.Pass),
			"contract_error": int64(p.ContractError), "unavailable": int64(p.Unavailable),
			"passed_after_retries": int64(p.PassedAfterRetries),
			"last_started_at":      results.FormatTime(p.LastStartedAt),
		}
		for col, w := range want {
			if row[col] != w {
				t.Errorf("%s: %s = %v, Stats says %v", p.Probe, col, row[col], w)
			}
		}
		for col, w := range map[string]float64{
			"pass_rate":           rate(p.Pass, p.Runs),
			"contract_error_rate": rate(p.ContractError, p.Runs),
			"unavailable_rate":    rate(p.Unavailable, p.Runs),
		} {
			if got, ok := row[col].(float64); !ok || math.Abs(got-w) > 0.00005 {
				t.Errorf("%s: %s = %v, want %.4f", p.Probe, col, row[col], w)
			}
		}
		// The durations Stats does not report, from History's rows.
		rs, err := s.History(ctx, results.HistoryQuery{Probes: []string{p.Probe}, Since: edge, Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		var sum, maxMS int64
		for _, r := range rs {
			sum += r.Duration.Milliseconds()
			maxMS = max(maxMS, r.Duration.Milliseconds())
		}
		avg := float64(sum) / float64(len(rs))
		if got, ok := row["avg_duration_ms"].(float64); !ok || math.Abs(got-avg) > 0.05+1e-9 {
			t.Errorf("%s: avg_duration_ms = %v, want %.1f", p.Probe, row["avg_duration_ms"], avg)
		}
		if row["max_duration_ms"] != maxMS || len(rs) != p.Runs {
			t.Errorf("%s: max_duration_ms = %v over %d runs, want %v over %d", p.Probe, row["max_duration_ms"], p.Runs, maxMS, len(rs))
		}
	}

	latest, err := s.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	view := queryMaps(t, op, `SELECT * FROM latest_results`)
	if len(view) != len(latest) {
		t.Fatalf("latest_results has %d rows, Latest %d", len(view), len(latest))
	}
	for i, r := range latest {
		row := queryMaps(t, op, `SELECT * FROM results WHERE operation_id = ?`, r.OperationID)
		if !reflect.DeepEqual(view[i], row[0]) {
			t.Errorf("latest_results row %d:\n got  %v\n want %v", i, view[i], row[0])
		}
	}
}
