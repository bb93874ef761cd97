package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
)

// Group commit, as in results/sqlite. The store's writer goroutine
// records every run waiting in one transaction, rolls back alone a run
// that fails (see commitBatch), and tells each caller the outcome only
// once the COMMIT has returned: a run reported recorded is durable. One
// COMMIT (one WAL flush on the server, one round trip) is then shared by
// the runs recorded at the same time, and the runs of one instance reach
// the database in the order they were handed over.

// maxBatch is the most runs one transaction records. It bounds how long
// the runs at the end of a batch wait for those before them (some 0.1 ms
// each) and how much a failed COMMIT sends back to be retried.
const maxBatch = 256

// commitDelay is how long the writer waits, after taking the first runs of
// a batch, for more to arrive, when the previous batch had two or more
// runs, as PostgreSQL's commit_delay does when commit_siblings are busy.
// A caller that records one run after another never waits: its batches
// have one run.
//
// The value is results/sqlite's (measured there: 5 ms gathers some 5 runs
// per commit at 1,000 runs/s); a commit on Postgres costs a round trip and
// a WAL flush, more than SQLite's, so waiting pays at least as well.
const commitDelay = 5 * time.Millisecond

// ErrClosed is returned, wrapped, by RecordRun and Record once Close has
// been called.
var ErrClosed = errors.New("store is closed")

// The states of a request. A request is pending until the writer claims it,
// right before writing it, or its caller abandons it because its context
// is done; whichever comes first wins, with a compare-and-swap.
const (
	pending int32 = iota
	claimed
	abandoned
)

// request is one RecordRun waiting for the writer.
type request struct {
	rec   *results.RunRecord
	state atomic.Int32
	// done is closed by the writer once ids and err are set.
	done chan struct{}
	ids  []int64
	err  error
}

// claim reports whether the writer may write r: it claims r if r is
// pending, and it may write r again if it claimed r before, for a second
// attempt at its batch. It may not once the caller has abandoned r.
func (r *request) claim() bool {
	return r.state.CompareAndSwap(pending, claimed) || r.state.Load() == claimed
}

// finish hands the outcome to the caller. The writer calls it exactly once
// per request, abandoned ones included: nobody reads those.
func (r *request) finish(ids []int64, err error) {
	r.ids, r.err = ids, err
	close(r.done)
}

// wait returns the outcome of r: the writer's, or ctx's error if ctx ends
// before the writer claimed r, which is then never written. Once claimed,
// r is being written, so wait returns the outcome of its transaction
// whatever ctx does: it never reports a failure for a committed run.
func (r *request) wait(ctx context.Context) ([]int64, error) {
	select {
	case <-r.done:
		return r.ids, r.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(pending, abandoned) {
			return nil, ctx.Err()
		}
		<-r.done
		return r.ids, r.err
	}
}

// groupCommit is the queue of requests between RecordRun and the writer
// goroutine.
type groupCommit struct {
	mu     sync.Mutex
	queue  []*request
	closed bool

	wake    chan struct{} // holds a token when the queue may have grown
	stop    chan struct{} // closed by Close
	stopped chan struct{} // closed when the writer has returned

	// holdUntil, when above zero, makes the writer wait until that many
	// requests are queued and take them as one batch; tests set it (see
	// export_test.go).
	holdUntil atomic.Int32
	// commits and runs count the committed batches and the runs they
	// recorded, and delays the batches that waited for commitDelay, for
	// tests and benchmarks.
	commits, runs, delays atomic.Int64
}

func newGroupCommit() *groupCommit {
	return &groupCommit{
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
}

// enqueue queues r for the writer, or fails with ErrClosed.
func (g *groupCommit) enqueue(r *request) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	g.queue = append(g.queue, r)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
	return nil
}

// take moves up to limit requests from the queue to batch. held reports
// that the test hook (holdUntil) holds them back.
func (g *groupCommit) take(batch []*request, limit int, stopping bool) (_ []*request, held bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if hold := int(g.holdUntil.Load()); hold > 0 && !stopping {
		if len(g.queue) < hold {
			return batch, true
		}
		g.holdUntil.Store(0)
	}
	n := min(len(g.queue), limit)
	batch = append(batch, g.queue[:n]...)
	rest := copy(g.queue, g.queue[n:])
	clear(g.queue[rest:])
	g.queue = g.queue[:rest]
	return batch, false
}

// next waits for the next batch and returns it, or nil once Close has been
// called and the queue is empty. prev is the size of the previous batch:
// only after one of two runs or more does next wait up to commitDelay for
// more runs to join the first.
func (g *groupCommit) next(prev int) []*request {
	var batch []*request
	for len(batch) == 0 {
		stopping := false
		select {
		case <-g.wake:
		case <-g.stop:
			stopping = true
		}
		var held bool
		batch, held = g.take(batch, maxBatch, stopping)
		if len(batch) == 0 && !held && stopping {
			return nil
		}
	}
	if prev < 2 {
		return batch
	}
	g.delays.Add(1)
	delay := time.NewTimer(commitDelay)
	defer delay.Stop()
	for len(batch) < maxBatch {
		select {
		case <-g.wake:
			batch, _ = g.take(batch, maxBatch-len(batch), false)
		case <-g.stop:
			batch, _ = g.take(batch, maxBatch-len(batch), true)
			return batch
		case <-delay.C:
			return batch
		}
	}
	return batch
}

// writeBatches is the writer goroutine: it records batches until Close
// has been called and every queued request has been answered.
func (s *Store) writeBatches(ctx context.Context) {
	defer close(s.gc.stopped)
	prev := 0
	for {
		batch := s.gc.next(prev)
		if batch == nil {
			return
		}
		s.commitBatch(ctx, batch)
		prev = len(batch)
	}
}

// stopWriting refuses new requests, lets the writer record those queued
// and waits for it to return. It may be called more than once.
func (s *Store) stopWriting() {
	if s.gc == nil {
		return
	}
	s.gc.mu.Lock()
	first := !s.gc.closed
	s.gc.closed = true
	s.gc.mu.Unlock()
	if first {
		close(s.gc.stop)
	}
	<-s.gc.stopped
}

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
func (s *Store) commitBatch(ctx context.Context, batch []*request) {
	if !s.writeBatch(ctx, batch, false) {
		s.writeBatch(ctx, batch, true)
	}
}

// writeBatch writes the runs of batch in one transaction, each in a
// savepoint of its own if savepoints is set, commits them and answers
// every request. Without savepoints, when a run fails and others share the
// transaction, it rolls back instead, answers nobody and returns false:
// the batch is to be written again with savepoints.
func (s *Store) writeBatch(ctx context.Context, batch []*request, savepoints bool) bool {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		failAll(batch, fmt.Errorf("begin: %w", err))
		return true
	}
	defer tx.Rollback(ctx) // after a COMMIT, a no-op

	ids := make([][]int64, len(batch))
	errs := make([]error, len(batch))
	recorded := 0
	for i, r := range batch {
		if !r.claim() {
			continue // its caller has gone: not written
		}
		if savepoints {
			var lost error
			ids[i], errs[i], lost = recordInSavepoint(ctx, tx, r.rec)
			if lost != nil {
				failLost(ctx, tx, batch, i, errs[i], lost)
				return true
			}
		} else {
			// A run that fails here leaves its writes in the
			// transaction. Alone in its batch (one run after another, as
			// the runner's write queue records them), the rollback below
			// undoes them; otherwise the batch is written again.
			ids[i], errs[i] = writeRunSafely(ctx, tx, r.rec)
			if errs[i] != nil && len(batch) > 1 {
				return false
			}
		}
		if errs[i] == nil {
			recorded++
		}
	}
	if recorded > 0 {
		if err := tx.Commit(ctx); err != nil {
			failAll(batch, fmt.Errorf("commit: %w", err))
			return true
		}
		s.gc.commits.Add(1)
		s.gc.runs.Add(int64(recorded))
	}
	for i, r := range batch {
		r.finish(ids[i], errs[i])
	}
	return true
}

// failLost answers every request of batch after the transaction was lost
// while batch[failed] was being written, with err: the savepoint could
// not be used, as when the connection was lost. The failed
// run keeps its own error, whose classification (a refusal or a fault)
// still holds for it; the others are told that their batch was lost.
func failLost(ctx context.Context, tx pgx.Tx, batch []*request, failed int, err, lost error) {
	_ = tx.Rollback(ctx) // the connection may be gone already
	id := batch[failed].rec.Result.OperationID
	mates := fmt.Errorf("the transaction of a batch of %d runs was lost at run %s: %w", len(batch), id, lost)
	if err != nil {
		mates = fmt.Errorf("the transaction of a batch of %d runs was lost when run %s failed (%v): %w", len(batch), id, err, lost)
	}
	for i, r := range batch {
		if i == failed && err != nil {
			r.finish(nil, fmt.Errorf("%w; its batch's transaction was lost: %v", err, lost))
			continue
		}
		r.finish(nil, mates)
	}
}

// failAll answers every request of batch with err.
func failAll(batch []*request, err error) {
	for _, r := range batch {
		r.finish(nil, err)
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
