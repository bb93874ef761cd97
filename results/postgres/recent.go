package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// recentRuns is the last $2 runs of probe $1, newest first: one range of
// the covering index on (probe, started_at, id), read backwards.
const recentRuns = `SELECT started_at, outcome, duration_ms, attempts
FROM results
WHERE probe = $1
ORDER BY started_at DESC, id DESC
LIMIT $2`

// RecentRuns returns the last n runs of each of probes, oldest first, all
// read in one transaction so that the probes are seen at one moment. A
// probe without runs has no entry. n of 0 or less means
// results.DefaultLimit. Runs are read from the covering index on (probe,
// started_at, id) alone.
func (s *Store) RecentRuns(ctx context.Context, probes []string, n int) (map[string][]results.RecentRun, error) {
	runs, err := s.recentRuns(ctx, probes, n)
	if err != nil {
		return nil, fmt.Errorf("postgres: recent runs: %w", ctxErr(ctx, err))
	}
	return runs, nil
}

func (s *Store) recentRuns(ctx context.Context, probes []string, n int) (map[string][]results.RecentRun, error) {
	if n <= 0 {
		n = results.DefaultLimit
	}
	tx, err := s.pool.BeginTx(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	out := make(map[string][]results.RecentRun, len(probes))
	for _, probe := range probes {
		if _, done := out[probe]; done {
			continue
		}
		rows, err := tx.Query(ctx, recentRuns, probe, n)
		if err != nil {
			return nil, err
		}
		var runs []results.RecentRun
		for rows.Next() {
			var (
				r        results.RecentRun
				at       time.Time
				outcome  string
				duration int64
			)
			if err := rows.Scan(&at, &outcome, &duration, &r.Attempts); err != nil {
				rows.Close()
				return nil, err
			}
			r.StartedAt = at.UTC()
			r.Outcome, r.Duration = results.Outcome(outcome), time.Duration(duration)*time.Millisecond
			runs = append(runs, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("probe %q: %w", probe, err)
		}
		if len(runs) > 0 {
			slices.Reverse(runs)
			out[probe] = runs
		}
	}
	return out, nil
}

// LastDrifts returns the latest drift event of each of probes that has
// one, with one search of the index on (probe, detected_at, id) per
// probe, all in one read transaction.
func (s *Store) LastDrifts(ctx context.Context, probes []string) (map[string]results.Drift, error) {
	out, err := s.lastDrifts(ctx, probes)
	if err != nil {
		return nil, fmt.Errorf("postgres: last drifts: %w", ctxErr(ctx, err))
	}
	return out, nil
}

func (s *Store) lastDrifts(ctx context.Context, probes []string) (map[string]results.Drift, error) {
	tx, err := s.pool.BeginTx(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	out := make(map[string]results.Drift, len(probes))
	for _, probe := range probes {
		query, args := driftsQuery(probe, time.Time{}, 1)
		ds, err := s.drifts(ctx, tx, query, args...)
		if err != nil {
			return nil, fmt.Errorf("probe %q: %w", probe, err)
		}
		if len(ds) > 0 {
			out[probe] = ds[0]
		}
	}
	return out, nil
}
