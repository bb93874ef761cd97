package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

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
    SELECT id FROM results WHERE started_at < ? ORDER BY started_at LIMIT ?)
RETURNING probe, started_at, duration_ms, outcome, attempts, location`

	// A pending alert may wait for its receiver longer than retention:
	// it stays, and so does the drift a pending shape_drift alert
	// announces, so that it is delivered whole.
	pruneAlerts = `DELETE FROM alerts WHERE id IN (
    SELECT id FROM alerts WHERE created_at < ? AND state <> 'pending' ORDER BY created_at LIMIT ?)`
	pruneDrifts = `DELETE FROM drifts WHERE id IN (
    SELECT id FROM drifts d
    WHERE detected_at < ?
      AND NOT EXISTS (SELECT 1 FROM alerts a WHERE a.drift_id = d.id AND a.state = 'pending')
    ORDER BY detected_at LIMIT ?)`

	// A tool definition goes once no kept result names it (Result reads
	// it back through results.tool_fingerprint) and it is not its probe's
	// latest (ToolDefinition: the baseline of the next run). A drift of
	// kind definition keeps its own description excerpts and reads no
	// definition. Each row is its primary key and last_seen_at, all in
	// the index tool_definitions_last, and one search of results_tool.
	pruneToolDefinitions = `DELETE FROM tool_definitions WHERE (probe, fingerprint) IN (
    SELECT probe, fingerprint FROM tool_definitions td
    WHERE last_seen_at < ?
      AND last_seen_at < (SELECT max(tl.last_seen_at) FROM tool_definitions tl WHERE tl.probe = td.probe)
      AND NOT EXISTS (SELECT 1 FROM results r WHERE r.probe = td.probe AND r.tool_fingerprint = td.fingerprint)
    LIMIT ?)`

	pruneShapeCounts = `DELETE FROM shape_counts WHERE hour < ?`

	// A profile not written since the cutoff belongs to a probe that has
	// not answered for that long (a live profile is written at least every
	// few minutes): it has forgotten everything anyway.
	pruneProfiles = `DELETE FROM shape_profiles WHERE updated_at < ?`

	// A shape goes once nothing refers to it: no result (the foreign key
	// would refuse it anyway), no kept drift (its fingerprints keep their
	// text while it is kept) and no hourly count (a probe's first profile
	// may still be built from it).
	pruneShapes = `DELETE FROM shapes
WHERE last_seen < ?
  AND NOT EXISTS (SELECT 1 FROM results WHERE shape_fingerprint = shapes.fingerprint)
  AND NOT EXISTS (SELECT 1 FROM run_steps WHERE shape_fingerprint = shapes.fingerprint)
  AND NOT EXISTS (SELECT 1 FROM drifts WHERE baseline = shapes.fingerprint OR current = shapes.fingerprint)
  AND NOT EXISTS (SELECT 1 FROM shape_counts WHERE fingerprint = shapes.fingerprint)`
)

// Prune deletes what is older than before and returns how many results
// it deleted:
//
//   - results started before it, with their attempts, each taken away
//     from its probe's hour in probe_hours in the same transaction (an
//     hour left with no run is deleted), so that probe_hours keeps
//     summing up exactly the results that are stored;
//   - alerts created before it that are not pending (a pending alert is
//     kept until it is delivered or given up on);
//   - drifts detected before it, except those a pending alert announces;
//   - shape_counts buckets more than 26 hours older than the newest bucket
//     (the latest recorded run stands for "now", so Prune reads no clock;
//     the buckets only serve drift detection's 24-hour window);
//   - shapes last seen before it that no result, drift or bucket refers
//     to any more;
//   - shape profiles last written before it;
//   - tool definitions last seen before it that no result names any
//     more, except each probe's latest, which its next run is compared
//     with.
//
// Results, alerts and drifts are deleted oldest first, and tool
// definitions in any order, at most batch rows (0 or less:
// DefaultPruneBatch) per write transaction, so that RecordRun,
// which shares the one writer, waits for one short batch at most, never
// for the whole prune. Prune loops until nothing is left to delete or ctx
// is done. On an error, ctx's own when it ended, it returns the results
// deleted so far, which stay deleted; running it again carries on. A zero
// before is refused.
func (s *Store) Prune(ctx context.Context, before time.Time, batch int) (deleted int, err error) {
	if before.IsZero() {
		return 0, errors.New("sqlite: prune: zero cutoff time")
	}
	if batch <= 0 {
		batch = DefaultPruneBatch
	}
	cutoff := storedTime(before)
	deleted, err = s.pruneResultBatches(ctx, cutoff, batch)
	if err != nil {
		return deleted, fmt.Errorf("sqlite: prune results: %w", err)
	}
	if _, err := s.pruneBatches(ctx, pruneAlerts, cutoff, batch); err != nil {
		return deleted, fmt.Errorf("sqlite: prune alerts: %w", err)
	}
	if _, err := s.pruneBatches(ctx, pruneDrifts, cutoff, batch); err != nil {
		return deleted, fmt.Errorf("sqlite: prune drifts: %w", err)
	}
	if _, err := s.pruneBatches(ctx, pruneToolDefinitions, cutoff, batch); err != nil {
		return deleted, fmt.Errorf("sqlite: prune tool definitions: %w", err)
	}
	if err := s.pruneShapes(ctx, cutoff); err != nil {
		return deleted, fmt.Errorf("sqlite: prune shapes: %w", err)
	}
	return deleted, nil
}

// pruneResultBatches deletes results in batches until it deletes less
// than a batch.
func (s *Store) pruneResultBatches(ctx context.Context, cutoff string, batch int) (int, error) {
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
// probe_hours, in one write transaction, and returns how many it deleted.
func (s *Store) pruneResultsBatch(ctx context.Context, cutoff string, batch int) (n int, err error) {
	defer func() { err = ctxErr(ctx, err) }()
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, pruneResults, cutoff, batch)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	deleted := map[hourKey]*hourly.Sums{}
	for rows.Next() {
		var (
			probe, startedAt, outcome, location string
			ms, attempts                        int64
		)
		if err := rows.Scan(&probe, &startedAt, &ms, &outcome, &attempts, &location); err != nil {
			return 0, err
		}
		k := hourKey{probe, startedAt[:min(len(startedAt), len("2006-01-02T15"))], location}
		if deleted[k] == nil {
			deleted[k] = &hourly.Sums{}
		}
		deleted[k].Add(outcome, attempts, ms)
		n++
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if err := subtractHours(ctx, tx, deleted); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err // nothing was deleted
	}
	return n, nil
}

// pruneBatches runs a batch delete until it deletes less than a batch.
func (s *Store) pruneBatches(ctx context.Context, query, cutoff string, batch int) (int, error) {
	total := 0
	for {
		n, err := s.write(ctx, query, cutoff, batch)
		total += int(n)
		if err != nil || n < int64(batch) {
			return total, err
		}
	}
}

// pruneShapes trims shape_counts, shapes and shape_profiles, in one
// transaction: the tables are small, bounded by probes and fingerprints
// rather than runs.
func (s *Store) pruneShapes(ctx context.Context, cutoff string) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var newest sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT max(hour) FROM shape_counts`).Scan(&newest); err != nil {
		return err
	}
	if newest.Valid {
		h, err := time.Parse("2006-01-02T15", newest.String)
		if err != nil {
			return fmt.Errorf("shape_counts hour %q: %w", newest.String, err)
		}
		if _, err := tx.ExecContext(ctx, pruneShapeCounts, hourOf(h.Add(-shapeCountsKept))); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, pruneShapes, cutoff); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, pruneProfiles, cutoff); err != nil {
		return err
	}
	return tx.Commit()
}

// write runs one statement in its own write transaction and returns the
// rows it changed. BEGIN IMMEDIATE (the writer's _txlock) takes the write
// lock first, so a concurrent writer in another process makes it wait
// (busy_timeout) rather than fail half-way.
func (s *Store) write(ctx context.Context, query string, args ...any) (n int64, err error) {
	defer func() { err = ctxErr(ctx, err) }()
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	if n, err = res.RowsAffected(); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err // nothing was deleted
	}
	return n, nil
}

// ctxErr is err from a write transaction, or ctx's error if ctx ended:
// database/sql then rolls the transaction back by itself, and the
// statement or Commit fails with "interrupted" or ErrTxDone, which do not
// say why.
func ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Ping checks that the store can do its job: a read through the reader
// pool, and the write lock taken and released on the writer (BEGIN
// IMMEDIATE, then ROLLBACK: nothing is written), which fails while another
// process holds the lock, as RecordRun would. It waits for the writer as
// RecordRun does, behind a write in progress, but never past ctx's
// deadline: for the check, SQLite's busy timeout (which does not see ctx)
// is cut to the time left.
func (s *Store) Ping(ctx context.Context) error {
	var version int
	if err := s.reader.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil {
		return fmt.Errorf("sqlite: ping: read: %w", err)
	}
	if err := s.pingWriter(ctx); err != nil {
		return fmt.Errorf("sqlite: ping: write lock: %w", err)
	}
	return nil
}

func (s *Store) pingWriter(ctx context.Context) (err error) {
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < busyTimeoutMS*time.Millisecond {
		wait := max(time.Until(deadline).Milliseconds(), 0)
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", wait)); err != nil {
			return err
		}
		defer func() {
			_, rerr := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeoutMS))
			if rerr != nil {
				// A writer left with a shorter wait would fail writes that
				// should wait: drop the connection, and the pool opens a
				// new one with the settings of writeParams.
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
				err = errors.Join(err, fmt.Errorf("restore busy_timeout: %w", rerr))
			}
		}()
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	return tx.Rollback()
}
