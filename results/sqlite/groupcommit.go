package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/groupcommit"
)

// Group commit. Every RecordRun used to be a transaction of its own, and
// its COMMIT (some ten pages appended to the write-ahead log, and a
// checkpoint every hundred runs or so) took some 40% of its CPU. The
// store's writer goroutine now records every run waiting in one
// transaction, rolls back alone a run that fails (see commitBatch), and
// tells each caller the outcome only once the COMMIT has returned: a run
// reported recorded survives a crash of the process.

// ErrClosed is returned, wrapped, by RecordRun and Record once Close has
// been called.
var ErrClosed = groupcommit.ErrClosed

// commitBatch records the runs of batch in one transaction and answers
// each request. A run that fails is rolled back alone and its caller gets
// its error; the others are committed. When the transaction as a whole
// fails (BEGIN, COMMIT, or an error after which SQLite rolled back
// everything), every caller gets an error and nothing of the batch is
// stored.
//
// A savepoint per run costs about a third of the CPU of a run: SQLite
// copies every page a run changes to its sub-journal first, in case of a
// ROLLBACK TO. Runs rarely fail, so the batch is first written without
// savepoints; only if one of its runs fails is that transaction rolled
// back and the batch written again, each run in a savepoint of its own.
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
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		failAll(batch, fmt.Errorf("begin: %w", err))
		return true
	}
	defer tx.Rollback() // after a COMMIT, a no-op

	ids := make([][]int64, len(batch))
	errs := make([]error, len(batch))
	recorded := 0
	for i, r := range batch {
		if !r.Claim() {
			continue // its caller has gone: not written
		}
		if savepoints {
			var lost error
			ids[i], errs[i], lost = recordInSavepoint(ctx, tx, r.Rec)
			if lost != nil {
				failLost(tx, batch, i, errs[i], lost)
				return true
			}
		} else {
			// A run that fails here leaves its writes in the
			// transaction. Alone in its batch (one run after another, as
			// the runner's write queue records them), the rollback below
			// undoes them; otherwise the batch is written again.
			ids[i], errs[i] = writeRunSafely(ctx, tx, r.Rec)
			if errs[i] != nil && len(batch) > 1 {
				return false
			}
		}
		if errs[i] == nil {
			recorded++
		}
	}
	if recorded > 0 {
		if err := tx.Commit(); err != nil {
			failAll(batch, fmt.Errorf("commit: %w", err))
			return true
		}
		s.gc.Commits.Add(1)
		s.gc.Runs.Add(int64(recorded))
	}
	for i, r := range batch {
		r.Finish(ids[i], errs[i])
	}
	return true
}

// failLost answers every request of batch after the transaction was lost
// while batch[failed] was being written, with err: SQLite rolled back
// more than its savepoint, or the savepoint could not be used. The failed
// run keeps its own error, whose classification (a refusal or a fault)
// still holds for it; the others are told that their batch was lost.
func failLost(tx *sql.Tx, batch []*groupcommit.Request, failed int, err, lost error) {
	_ = tx.Rollback() // SQLite may have rolled back already
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
// unusable: SQLite rolls back the whole transaction on some errors (a full
// disk, an I/O error, out of memory, RAISE(ROLLBACK)), and ROLLBACK TO then
// finds no savepoint.
func recordInSavepoint(ctx context.Context, tx *sql.Tx, rec *results.RunRecord) (ids []int64, err, lost error) {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT run"); err != nil {
		return nil, nil, fmt.Errorf("savepoint: %w", err)
	}
	ids, err = writeRunSafely(ctx, tx, rec)
	if err != nil {
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO run"); rerr != nil {
			return nil, err, fmt.Errorf("rollback to savepoint: %w", rerr)
		}
	}
	if _, rerr := tx.ExecContext(ctx, "RELEASE run"); rerr != nil {
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
func writeRunSafely(ctx context.Context, tx *sql.Tx, rec *results.RunRecord) (ids []int64, err error) {
	defer func() {
		if v := recover(); v != nil {
			ids, err = nil, refuse(fmt.Errorf("writing the run panicked: %v", v))
		}
	}()
	return writeRun(ctx, tx, rec)
}
