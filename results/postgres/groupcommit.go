package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/groupcommit"
)

// Group commit, as in results/sqlite. The store's writer goroutine
// records every run waiting in one transaction, rolls back alone a run
// that fails (see commitBatch), and tells each caller the outcome only
// once the COMMIT has returned: a run reported recorded is durable. One
// COMMIT (one WAL flush on the server, one round trip) is then shared by
// the runs recorded at the same time, and the runs of one instance reach
// the database in the order they were handed over.

// ErrClosed is returned, wrapped, by RecordRun and Record once Close has
// been called.
var ErrClosed = groupcommit.ErrClosed

// commitBatch records the runs of batch in one transaction and answers
// each request. A run that fails is rolled back alone and its caller gets
// its error; the others are committed. When the transaction as a whole
// fails (BEGIN, COMMIT, a lost connection), every caller gets an error
// and nothing of the batch is stored.
//
// A failed statement aborts a Postgres transaction, so a run that fails
// can be rolled back alone only to a savepoint, and a savepoint per run
// costs a round trip and a subtransaction each. Runs rarely fail, so the
// batch is first written without savepoints; only if one of its runs
// fails is that transaction rolled back and the batch written again, each
// run in a savepoint of its own.
func (s *Store) commitBatch(ctx context.Context, batch []*groupcommit.Request) {
	if !s.writeBatch(ctx, batch, false) {
		s.writeBatch(ctx, batch, true)
	}
}

// writeBatch writes the runs of batch in one transaction, each in a
// savepoint of its own if savepoints is set, commits them and answers
// every request. Without savepoints, when a run fails and others share the
// transaction, it rolls back instead, answers nobody and returns false:
// the batch is to be written again with savepoints.
func (s *Store) writeBatch(ctx context.Context, batch []*groupcommit.Request, savepoints bool) bool {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		failAll(batch, fmt.Errorf("begin: %w", err))
		return true
	}
	defer tx.Rollback(ctx) // after a COMMIT, a no-op

	// The fences first: their share locks are held until the COMMIT.
	epochs, err := lockFences(ctx, tx, batch)
	if err != nil {
		failAll(batch, err)
		return true
	}
	if epochs != nil && s.hooks.fencesLocked != nil {
		s.hooks.fencesLocked()
	}

	ids := make([][]int64, len(batch))
	errs := make([]error, len(batch))
	written := make([]bool, len(batch)) // claimed, not refused, and written or queued
	// Without savepoints the runs' statements share one pipeline, sent
	// once for the whole batch: one round trip for all of them rather
	// than one per run, during which the writer would otherwise wait for
	// the server between runs (BENCHMARKS.md). A run with drifts or a
	// handover sends what is queued before it, for rows it reads back.
	var p pipeline
	queued := -1 // the last run queued: when it is alone in batch, p holds its statements
	for i, r := range batch {
		if !r.Claim() {
			continue // its caller has gone: not written
		}
		if errs[i] = fenceError(r.Rec.Fence, epochs); errs[i] != nil {
			continue // refused: nothing of it is written
		}
		written[i] = true
		if savepoints {
			var lost error
			ids[i], errs[i], lost = recordInSavepoint(ctx, tx, r.Rec)
			if lost != nil {
				failLost(ctx, tx, batch, i, errs[i], lost)
				return true
			}
			continue
		}
		// A run that fails here leaves its writes in the transaction.
		// Alone in its batch (one run after another, as the runner's
		// write queue records them), the rollback below undoes them;
		// otherwise the batch is written again.
		ids[i], errs[i] = queueRunSafely(ctx, tx, &p, r.Rec)
		if errs[i] != nil && len(batch) > 1 {
			return false
		}
		queued = i
	}
	if !savepoints && queued >= 0 && errs[queued] == nil {
		if err := p.send(ctx, tx); err != nil {
			if len(batch) > 1 {
				return false
			}
			ids[queued], errs[queued] = nil, err
		}
	}
	recorded := 0
	for i := range batch {
		if written[i] && errs[i] == nil {
			recorded++
		}
	}
	if recorded > 0 {
		if err := tx.Commit(ctx); err != nil {
			failAll(batch, fmt.Errorf("commit: %w", err))
			return true
		}
		s.gc.Commits.Add(1)
		s.gc.Runs.Add(int64(recorded))
	} else {
		_ = tx.Rollback(ctx) // the fences' locks go now, not after the checks below
	}
	for i, r := range batch {
		if errors.Is(errs[i], ErrDuplicate) {
			ids[i], errs[i] = s.resolveDuplicate(ctx, r.Rec, errs[i])
		}
		r.Finish(ids[i], errs[i])
	}
	return true
}

// failLost answers every request of batch after the transaction was lost
// while batch[failed] was being written, with err: the savepoint could
// not be used, as when the connection was lost. The failed
// run keeps its own error, whose classification (a refusal or a fault)
// still holds for it; the others are told that their batch was lost.
func failLost(ctx context.Context, tx pgx.Tx, batch []*groupcommit.Request, failed int, err, lost error) {
	_ = tx.Rollback(ctx) // the connection may be gone already
	id := batch[failed].Rec.Result.OperationID
	mates := fmt.Errorf("the transaction of a batch of %d runs was lost at run %s: %w", len(batch), id, lost)
	if err != nil {
		mates = fmt.Errorf("the transaction of a batch of %d runs was lost when run %s failed (%v): %w", len(batch), id, err, lost)
	}
	for i, r := range batch {
		if i == failed && err != nil {
			r.Finish(nil, fmt.Errorf("%w; its batch's transaction was lost: %v", err, lost))
			continue
		}
		r.Finish(nil, mates)
	}
}

// failAll answers every request of batch with err.
func failAll(batch []*groupcommit.Request, err error) {
	for _, r := range batch {
		r.Finish(nil, err)
	}
}

// recordInSavepoint records rec inside a savepoint of tx. err is the run's
// own failure, after which the savepoint has been rolled back and tx goes
// on; lost is a failure of the savepoint itself, after which tx is
// unusable (the connection was lost, the server shut down).
func recordInSavepoint(ctx context.Context, tx pgx.Tx, rec *results.RunRecord) (ids []int64, err, lost error) {
	if _, err := tx.Exec(ctx, "SAVEPOINT run"); err != nil {
		return nil, nil, fmt.Errorf("savepoint: %w", err)
	}
	ids, err = writeRunSafely(ctx, tx, rec)
	if err != nil {
		if _, rerr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT run"); rerr != nil {
			return nil, err, fmt.Errorf("rollback to savepoint: %w", rerr)
		}
	}
	if _, rerr := tx.Exec(ctx, "RELEASE SAVEPOINT run"); rerr != nil {
		return nil, err, fmt.Errorf("release savepoint: %w", rerr)
	}
	if err != nil {
		return nil, err, nil
	}
	return ids, nil, nil
}

// writeRunSafely is writeRun with a panic turned into the run's error, a
// refusal: writing it again would panic again. The writer goroutine
// serves every caller, and one bad run must not end the process; the
// runner, which used to see such a panic in its own goroutine, drops the
// run after a few refusals.
func writeRunSafely(ctx context.Context, tx pgx.Tx, rec *results.RunRecord) (ids []int64, err error) {
	defer func() {
		if v := recover(); v != nil {
			ids, err = nil, refuse(fmt.Errorf("writing the run panicked: %v", v))
		}
	}()
	return writeRun(ctx, tx, rec)
}

// queueRunSafely is queueRun with a panic turned into the run's error, as
// writeRunSafely does.
func queueRunSafely(ctx context.Context, tx pgx.Tx, p *pipeline, rec *results.RunRecord) (ids []int64, err error) {
	defer func() {
		if v := recover(); v != nil {
			ids, err = nil, refuse(fmt.Errorf("writing the run panicked: %v", v))
		}
	}()
	return queueRun(ctx, tx, p, rec)
}
