package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolpulse/toolpulse/results/hourly"
)

// DefaultPruneBatch is how many rows Prune deletes per transaction when the
// caller does not say.
const DefaultPruneBatch = 1000

// shapeCountsKept is how much of shape_counts Prune keeps, back from the
// newest bucket: the 24 hours drift detection reads, plus the hour its
// window starts in, plus one hour of slack.
const shapeCountsKept = 26 * time.Hour

// Each prune statement deletes at most one batch (the LIMIT), oldest
// first, found through an index on the time column.
const (
	// What each deleted result added to probe_hours comes back, to be
	// taken away from it in the same transaction.
	pruneResults = `DELETE FROM results WHERE id IN (
    SELECT id FROM results WHERE started_at < $1 ORDER BY started_at, id LIMIT $2)
RETURNING probe, started_at, duration_ms, outcome, attempts, location`

	// A pending alert may wait for its receiver longer than retention:
	// it stays, and so does the drift a pending shape_drift alert
	// announces, so that it is delivered whole.
	pruneAlerts = `DELETE FROM alerts WHERE id IN (
    SELECT id FROM alerts WHERE created_at < $1 AND state <> 'pending' ORDER BY created_at LIMIT $2)`
	pruneDrifts = `DELETE FROM drifts WHERE id IN (
    SELECT id FROM drifts d
    WHERE detected_at < $1
      AND NOT EXISTS (SELECT 1 FROM alerts a WHERE a.drift_id = d.id AND a.state = 'pending')
    ORDER BY detected_at LIMIT $2)`

	// A tool definition goes once no kept result names it (Result reads
	// it back through results.tool_fingerprint) and it is not its probe's
	// latest (ToolDefinition: the baseline of the next run).
	pruneToolDefinitions = `DELETE FROM tool_definitions WHERE (probe, fingerprint) IN (
    SELECT probe, fingerprint FROM tool_definitions td
    WHERE last_seen_at < $1
      AND last_seen_at < (SELECT max(tl.last_seen_at) FROM tool_definitions tl WHERE tl.probe = td.probe)
      AND NOT EXISTS (SELECT 1 FROM results r WHERE r.probe = td.probe AND r.tool_fingerprint = td.fingerprint)
    LIMIT $2)`

	pruneShapeCounts = `DELETE FROM shape_counts WHERE hour < $1`

	// A profile not written since the cutoff belongs to a probe that has
	// not answered for that long (a live profile is written at least every
	// few minutes): it has forgotten everything anyway.
	pruneProfiles = `DELETE FROM shape_profiles WHERE updated_at < $1`

	// A shape goes once nothing refers to it: no result (the foreign key
	// would refuse it anyway), no kept drift and no hourly count.
	pruneShapes = `DELETE FROM shapes
WHERE last_seen < $1
  AND NOT EXISTS (SELECT 1 FROM results WHERE shape_fingerprint = shapes.fingerprint)
  AND NOT EXISTS (SELECT 1 FROM run_steps WHERE shape_fingerprint = shapes.fingerprint)
  AND NOT EXISTS (SELECT 1 FROM drifts WHERE baseline = shapes.fingerprint)
  AND NOT EXISTS (SELECT 1 FROM drifts WHERE current = shapes.fingerprint)
  AND NOT EXISTS (SELECT 1 FROM shape_counts WHERE fingerprint = shapes.fingerprint)`
)

// Prune deletes what is older than before and returns how many results
// it deleted, as results/sqlite's Prune does:
//
//   - results started before it, with their attempts and steps, each
//     taken away from its probe's hour in probe_hours in the same
//     transaction (an hour left with no run is deleted);
//   - alerts created before it that are not pending;
//   - drifts detected before it, except those a pending alert announces;
//   - shape_counts buckets more than 26 hours older than the newest bucket;
//   - shapes last seen before it that no result, drift or bucket refers
//     to any more;
//   - shape profiles last written before it;
//   - tool definitions last seen before it that no result names any
//     more, except each probe's latest.
//
// Results, alerts and drifts are deleted oldest first, at most batch rows
// (0 or less: DefaultPruneBatch) per transaction, so that no transaction
// holds its locks long. Prune loops until nothing is left to delete or
// ctx is done. On an error, ctx's own when it ended, it returns the
// results deleted so far, which stay deleted; running it again carries
// on. A zero before is refused.
func (s *Store) Prune(ctx context.Context, before time.Time, batch int) (deleted int, err error) {
	if before.IsZero() {
		return 0, errors.New("postgres: prune: zero cutoff time")
	}
	if batch <= 0 {
		batch = DefaultPruneBatch
	}
	cutoff := storedTime(before)
	deleted, err = s.pruneResultBatches(ctx, cutoff, batch)
	if err != nil {
		return deleted, fmt.Errorf("postgres: prune results: %w", ctxErr(ctx, err))
	}
	for _, p := range []struct{ what, query string }{
		{"alerts", pruneAlerts},
		{"drifts", pruneDrifts},
		{"tool definitions", pruneToolDefinitions},
	} {
		if _, err := s.pruneBatches(ctx, p.query, cutoff, batch); err != nil {
			return deleted, fmt.Errorf("postgres: prune %s: %w", p.what, ctxErr(ctx, err))
		}
	}
	if err := s.pruneShapes(ctx, cutoff); err != nil {
		return deleted, fmt.Errorf("postgres: prune shapes: %w", ctxErr(ctx, err))
	}
	return deleted, nil
}

// pruneResultBatches deletes results in batches until it deletes less
// than a batch.
func (s *Store) pruneResultBatches(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	total := 0
	for {
		n, err := s.pruneResultsBatch(ctx, cutoff, batch)
		total += n
		if err != nil || n < batch {
			return total, err
		}
	}
}

// pruneResultsBatch deletes one batch of results started before cutoff,
// oldest first, with their attempts, and takes them away from
// probe_hours, in one transaction, and returns how many it deleted.
func (s *Store) pruneResultsBatch(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, pruneResults, cutoff, batch)
	if err != nil {
		return 0, err
	}
	deleted := map[hourKey]*hourly.Sums{}
	n := 0
	for rows.Next() {
		var (
			probe, outcome, location string
			startedAt                time.Time
			ms                       int64
			attempts                 int64
		)
		if err := rows.Scan(&probe, &startedAt, &ms, &outcome, &attempts, &location); err != nil {
			rows.Close()
			return 0, err
		}
		k := hourKey{probe, hourOf(startedAt), location}
		if deleted[k] == nil {
			deleted[k] = &hourly.Sums{}
		}
		deleted[k].Add(outcome, attempts, ms)
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if err := subtractHours(ctx, tx, deleted); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err // nothing was deleted
	}
	return n, nil
}

// pruneBatches runs a batch delete, one transaction each, until it
// deletes less than a batch.
func (s *Store) pruneBatches(ctx context.Context, query string, cutoff time.Time, batch int) (int, error) {
	total := 0
	for {
		tag, err := s.pool.Exec(ctx, query, cutoff, batch)
		if err != nil {
			return total, err
		}
		n := int(tag.RowsAffected())
		total += n
		if n < batch {
			return total, nil
		}
	}
}

// pruneShapes trims shape_counts, shapes and shape_profiles, in one
// transaction: the tables are small, bounded by probes and fingerprints
// rather than runs.
func (s *Store) pruneShapes(ctx context.Context, cutoff time.Time) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var newest *time.Time
		if err := tx.QueryRow(ctx, `SELECT max(hour) FROM shape_counts`).Scan(&newest); err != nil {
			return err
		}
		if newest != nil {
			if _, err := tx.Exec(ctx, pruneShapeCounts, hourOf(newest.Add(-shapeCountsKept))); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, pruneShapes, cutoff); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, pruneProfiles, cutoff)
		return err
	})
}

// Ping checks that the store can do its job: a read of schema_migrations,
// and a check that the server accepts writes (not a read-only standby,
// not default_transaction_read_only), as RecordRun needs. It never waits
// past ctx's deadline.
func (s *Store) Ping(ctx context.Context) error {
	var (
		version  int
		readOnly string
	)
	if err := s.pool.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil {
		return fmt.Errorf("postgres: ping: read: %w", ctxErr(ctx, err))
	}
	if err := s.pool.QueryRow(ctx, `SHOW transaction_read_only`).Scan(&readOnly); err != nil {
		return fmt.Errorf("postgres: ping: %w", ctxErr(ctx, err))
	}
	if readOnly != "off" {
		return errors.New("postgres: ping: the server accepts no writes (transaction_read_only is on: a standby, or a read-only role or database)")
	}
	return nil
}
