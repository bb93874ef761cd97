// Package groupcommit is the queue both stores record runs through: a
// writer goroutine takes every run waiting, up to MaxBatch, and the store
// records them in one transaction (its Commit function), answering each
// caller only once the COMMIT has returned, so that a run reported
// recorded is durable. One COMMIT is then shared by the runs recorded at
// the same time, and the runs of one process reach the store in the order
// they were handed over. BENCHMARKS.md has what it saves.
package groupcommit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// MaxBatch is the most runs one transaction records. It bounds how long
// the runs at the end of a batch wait for those before them (some 0.1 ms
// each) and how much a failed COMMIT sends back to be retried.
const MaxBatch = 256

// CommitDelay is how long the writer waits, after taking the first runs of
// a batch, for more to arrive, when the previous batch had two or more
// runs, as PostgreSQL's commit_delay does when commit_siblings are busy.
// A caller that records one run after another never waits: its batches
// have one run.
//
// Waiting trades latency for fewer commits. BenchmarkRecordRunConcurrent
// tried 1, 2 and 5 ms. At 1,000 runs/s, 1 ms rarely finds a second run,
// so the next batch does not wait either (1.1 runs per commit, no CPU
// saved); 2 ms gathers 2.5 runs per commit and 5 ms 5.5, with the least
// CPU per run (some 40% below one transaction per run). The price is up to
// 5 ms more per run, and fewer runs per second for a few callers that each
// wait for their last run before recording the next (16 such callers:
// about 2,400 runs/s against 6,000 with 1 ms); the daemon's probes do not.
const CommitDelay = 5 * time.Millisecond

// ErrClosed is what Enqueue answers once Close has been called; the
// stores return it, wrapped, from RecordRun and Record.
var ErrClosed = errors.New("store is closed")

// The states of a request. A request is pending until the writer claims it,
// right before writing it, or its caller abandons it because its context
// is done; whichever comes first wins, with a compare-and-swap.
const (
	pending int32 = iota
	claimed
	abandoned
)

// Request is one RecordRun waiting for the writer.
type Request struct {
	Rec   *results.RunRecord
	state atomic.Int32
	// done is closed by the writer once ids and err are set.
	done chan struct{}
	ids  []int64
	err  error
}

// NewRequest returns the request to record rec.
func NewRequest(rec *results.RunRecord) *Request {
	return &Request{Rec: rec, done: make(chan struct{})}
}

// Claim reports whether the writer may write r: it claims r if r is
// pending, and it may write r again if it claimed r before, for a second
// attempt at its batch. It may not once the caller has abandoned r.
func (r *Request) Claim() bool {
	return r.state.CompareAndSwap(pending, claimed) || r.state.Load() == claimed
}

// Finish hands the outcome to the caller. The writer calls it exactly once
// per request, abandoned ones included: nobody reads those.
func (r *Request) Finish(ids []int64, err error) {
	r.ids, r.err = ids, err
	close(r.done)
}

// Wait returns the outcome of r: the writer's, or ctx's error if ctx ends
// before the writer claimed r, which is then never written. Once claimed,
// r is being written, so wait returns the outcome of its transaction
// whatever ctx does: it never reports a failure for a committed run.
func (r *Request) Wait(ctx context.Context) ([]int64, error) {
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

// Queue holds the requests between RecordRun and the writer goroutine
// (Run).
type Queue struct {
	mu     sync.Mutex
	queue  []*Request
	closed bool

	wake    chan struct{} // holds a token when the queue may have grown
	stop    chan struct{} // closed by Close
	stopped chan struct{} // closed when the writer has returned

	// HoldUntil, when above zero, makes the writer wait until that many
	// requests are queued and take them as one batch; tests set it.
	HoldUntil atomic.Int32
	// Commits and Runs count the committed batches and the runs they
	// recorded (the store's Commit adds to them), and Delays the batches
	// that waited for CommitDelay, for tests and benchmarks.
	Commits, Runs, Delays atomic.Int64
}

// New returns an empty queue; start its writer with Run.
func New() *Queue {
	return &Queue{
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
}

// Enqueue queues r for the writer, or fails with ErrClosed.
func (g *Queue) Enqueue(r *Request) error {
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
func (g *Queue) take(batch []*Request, limit int, stopping bool) (_ []*Request, held bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if hold := int(g.HoldUntil.Load()); hold > 0 && !stopping {
		if len(g.queue) < hold {
			return batch, true
		}
		g.HoldUntil.Store(0)
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
// only after one of two runs or more does next wait up to CommitDelay for
// more runs to join the first.
func (g *Queue) next(prev int) []*Request {
	var batch []*Request
	for len(batch) == 0 {
		stopping := false
		select {
		case <-g.wake:
		case <-g.stop:
			stopping = true
		}
		var held bool
		batch, held = g.take(batch, MaxBatch, stopping)
		if len(batch) == 0 && !held && stopping {
			return nil
		}
	}
	if prev < 2 {
		return batch
	}
	g.Delays.Add(1)
	delay := time.NewTimer(CommitDelay)
	defer delay.Stop()
	for len(batch) < MaxBatch {
		select {
		case <-g.wake:
			batch, _ = g.take(batch, MaxBatch-len(batch), false)
		case <-g.stop:
			batch, _ = g.take(batch, MaxBatch-len(batch), true)
			return batch
		case <-delay.C:
			return batch
		}
	}
	return batch
}

// Run is the writer goroutine: it hands each batch to commit, which must
// answer every request of it (Finish), until Close has been called and
// every queued request has been answered.
func (g *Queue) Run(commit func(batch []*Request)) {
	defer close(g.stopped)
	prev := 0
	for {
		batch := g.next(prev)
		if batch == nil {
			return
		}
		commit(batch)
		prev = len(batch)
	}
}

// Close refuses new requests, lets the writer record those queued and
// waits for Run to return. It may be called more than once.
func (g *Queue) Close() {
	g.mu.Lock()
	first := !g.closed
	g.closed = true
	g.mu.Unlock()
	if first {
		close(g.stop)
	}
	<-g.stopped
}

// Len is how many requests wait for the writer, for tests.
func (g *Queue) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}
