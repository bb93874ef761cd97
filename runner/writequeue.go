package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner/prober"
)

// defaultWriteQueue is how many results the daemon holds in memory while
// the store cannot be written, when Deps.WriteQueue is zero. A
// queued result is typically 2 to 8 KB (its attempts, the canonical shape
// text, a response sample of at most 4 KB on a failure), so a full queue
// takes some 20 to 80 MB; the rare result that carries a shape sample (a
// passing run whose shape changed) adds up to 64 KB of its own.
const defaultWriteQueue = 10_000

// Back-off of the writes of queued results: writeRetryBase doubling up to
// writeRetryMax, jittered, see writeQueue.retryDelay.
const (
	writeRetryBase = 500 * time.Millisecond
	writeRetryMax  = 30 * time.Second
)

// maxRefusals is how many times the store may refuse a result for good
// (see permanent) before the result is dropped. One would do if the
// classification were never wrong; a few tries, seconds apart, cost little
// and spare a result that a passing condition refused.
const maxRefusals = 3

// writeTimeout bounds the write of one run. A run is over when it is
// written, and a shutdown that drains the runs in flight must not lose
// them, so writing ignores the run's cancellation; it needs a bound of its
// own.
const writeTimeout = 15 * time.Second

// errQueueClosed says a run finished after the write queue had stopped
// taking results, at the end of shutdown.
var errQueueClosed = errors.New("the daemon has stopped writing queued runs")

// writeFunc writes one finished run and returns what was decided; see
// Recorder.write.
type writeFunc func(ctx context.Context, r *results.Result) (Decision, error)

// writeQueue is where a finished run waits when the store cannot record it
// (read-only file, full disk, a lock held too long): a bounded FIFO in
// memory, written by one goroutine (run) with back-off until the store
// takes it again.
//
// The order promise: while anything waits, a new run joins the tail even
// when the store would take it, so that each probe's runs reach the alert
// policy in the order they ran, and the queue is written oldest first.
//
// The overflow rule: the queue holds at most capacity runs, and past that
// the oldest waiting run is dropped, logged and counted; the run being
// written is waiting too, and the oldest of all. Its write cannot be taken
// back once started, so while it is in flight an overflow waits for its
// end: a failed write makes it the first to go, a successful one has made
// room. The queue may therefore hold, for the length of one write (at most
// writeTimeout), the runs that finished meanwhile beyond its capacity.
// Either way, what is dropped is always the oldest part of what entered
// the queue, and drops are logged in that order.
//
// A result the store refuses for good (an error with a Permanent() bool
// method that says true: a constraint the record breaks, not a fault of
// the store) is dropped after maxRefusals tries, so that it cannot hold up
// the rest; so is one whose write panics, which would panic again.
type writeQueue struct {
	write    writeFunc
	logger   *slog.Logger
	observer Observer
	deliver  func()          // wakes the deliverer for a run written late; see finished
	clock    clockwork.Clock // the back-off waits; tests pass a fake one
	rand     func() float64
	redact   func(string) string
	capacity int
	// retryBase and retryMax bound the back-off between failed writes:
	// writeRetryBase and writeRetryMax, shorter in tests.
	retryBase, retryMax time.Duration
	wake                chan struct{} // the queue is no longer empty

	mu sync.Mutex // guards what follows; drops are logged under it, in order
	// items are the runs waiting, oldest first; items[0] is being written
	// while writing is set.
	items   []*queued
	writing bool
	lastErr error // of the last failed write
	// closed is set once the last drain at shutdown is over: nothing will
	// write the queue any more, so a run that cannot be written at once is
	// lost rather than queued.
	closed bool
}

// queued is a result waiting in the write queue.
type queued struct {
	r *results.Result
	// refused counts the writes of r the store refused for good; see
	// maxRefusals.
	refused int
}

// newWriteQueue returns an empty queue of capacity runs (0 or less:
// defaultWriteQueue) that writes with write.
func newWriteQueue(capacity int, write writeFunc, logger *slog.Logger, observer Observer, wake func(),
	clock clockwork.Clock, rand func() float64, redact func(string) string) *writeQueue {
	if capacity <= 0 {
		capacity = defaultWriteQueue
	}
	return &writeQueue{
		write: write, logger: logger, observer: observer, deliver: wake,
		clock: clock, rand: rand, redact: redact, capacity: capacity,
		retryBase: writeRetryBase, retryMax: writeRetryMax,
		wake: make(chan struct{}, 1),
	}
}

// submit writes r, unless runs are already waiting: r then joins them
// without a write. A write that fails queues r too. err is nil when r was
// written, and says why it was not otherwise. Once the queue has closed at
// shutdown, r is written at once or not at all: err then wraps
// errQueueClosed.
func (q *writeQueue) submit(ctx context.Context, r *results.Result) (Decision, error) {
	q.mu.Lock()
	if n := len(q.items); n > 0 {
		err := fmt.Errorf("not tried: %d earlier results are waiting to be written; the last attempt failed: %w", n, q.lastErr)
		q.enqueueLocked(&queued{r: r})
		q.mu.Unlock()
		return Decision{}, err
	}
	q.mu.Unlock()

	d, err := q.writeOne(ctx, r)
	if err == nil {
		return d, nil
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return Decision{}, fmt.Errorf("%w; writing the run failed: %w", errQueueClosed, err)
	}
	q.lastErr = err
	item := &queued{r: r}
	if permanent(err) {
		item.refused = 1
	}
	q.enqueueLocked(item)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return Decision{}, err
}

// writeOne writes r under ctx's values but not its cancellation, within
// writeTimeout: the one place where recording detaches from the run (a
// run cancelled by shutdown is still recorded, as canceled) and from the
// writer's own end at shutdown, which must not cut a write short.
func (q *writeQueue) writeOne(ctx context.Context, r *results.Result) (Decision, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	return q.write(ctx, r)
}

// pending returns how many runs are waiting to be written, the one being
// written included.
func (q *writeQueue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// enqueueLocked appends item and enforces the capacity. q.mu must be held.
func (q *writeQueue) enqueueLocked(item *queued) {
	q.items = append(q.items, item)
	q.trimLocked()
}

// trimLocked drops the oldest runs past the capacity, unless the oldest is
// being written: its write decides, and calls trimLocked again when it
// ends. q.mu must be held.
func (q *writeQueue) trimLocked() {
	for len(q.items) > q.capacity && !q.writing {
		r := q.items[0].r
		q.popLocked()
		q.reportDropLocked("write queue full; dropped the oldest waiting run", "probe", r.Probe,
			"operation_id", r.OperationID, "capacity", q.capacity)
	}
}

// reportDropLocked logs and counts one dropped run. It runs under q.mu, so
// that drops are reported in the order they happen; a logger or observer
// that panics here must therefore not unwind through the caller, which
// would leave the lock held and stop every recording for good. Such a
// panic is contained: the run is gone either way, and the next drop is
// reported as usual. q.mu must be held.
func (q *writeQueue) reportDropLocked(msg string, args ...any) {
	contain(func() { q.logger.Error(msg, args...) })
	contain(func() { q.observer.ResultsDropped(1) })
}

// contain runs f and stops a panic in it from going further.
func contain(f func()) {
	defer func() { _ = recover() }()
	f()
}

// popLocked removes the oldest run. q.mu must be held.
func (q *writeQueue) popLocked() {
	q.items[0] = nil
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil // lets the backing array go
	}
}

// retryDelay is the wait before the write that follows n failed ones:
// between half and all of min(retryMax, retryBase * 2^n). Half of it is
// fixed so that a retry never spins, whatever the random source.
func (q *writeQueue) retryDelay(n int) time.Duration {
	c := prober.BackoffCeiling(q.retryBase, q.retryMax, n)
	return c/2 + time.Duration(q.rand()*float64(c/2))
}

// run writes the queued runs, oldest first, until ctx ends. A run joins
// the queue only after a failed write, so the first write waits too; after
// a success the next one follows at once. The waits are on q.clock.
func (q *writeQueue) run(ctx context.Context) {
	failures := 0
	for {
		if q.pending() == 0 {
			failures = 0
			select {
			case <-q.wake:
			case <-ctx.Done():
				return
			}
			continue
		}
		t := q.clock.NewTimer(q.retryDelay(failures))
		select {
		case <-t.Chan():
		case <-ctx.Done():
			t.Stop()
			return
		}
		for q.pending() > 0 {
			if err := q.writeHead(ctx); err != nil {
				failures++
				q.logger.Warn("writing a queued run failed; retrying", "pending", q.pending(),
					"failures", failures, "error", err)
				break
			}
			failures = 0
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// writeHead writes the oldest queued run. On a failure it stays at the
// head and the error is returned. A run whose write panics, or that the
// store has refused for good maxRefusals times, is dropped, logged and
// counted, and writeHead returns nil: the next run may be written at once.
func (q *writeQueue) writeHead(ctx context.Context) (err error) {
	q.mu.Lock()
	if len(q.items) == 0 {
		q.mu.Unlock()
		return nil
	}
	item := q.items[0]
	q.writing = true
	q.mu.Unlock()
	r := item.r

	var d Decision
	panicked := false
	func() {
		defer func() {
			if v := recover(); v != nil {
				panicked = true
				q.logger.Error("panic while writing a queued run; the run is lost", "probe", r.Probe,
					"operation_id", r.OperationID, "panic", q.redact(fmt.Sprint(v)), "stack", string(debug.Stack()))
			}
		}()
		d, err = q.writeOne(ctx, r)
	}()

	refused := false
	if err != nil && !panicked && permanent(err) {
		item.refused++
		refused = item.refused >= maxRefusals
	}
	failed := err != nil && !panicked && !refused
	if err == nil && !panicked {
		// Reported before it leaves the queue: once pending falls, every
		// run that left it has been logged and handed on.
		q.reportWritten(r, d)
	}
	q.mu.Lock()
	// Nothing else removes items[0] while writing is set.
	q.writing = false
	if failed {
		q.lastErr = err
	} else {
		q.popLocked()
	}
	switch {
	case refused:
		q.reportDropLocked("the store refuses the run for good; dropped", "probe", r.Probe,
			"operation_id", r.OperationID, "refusals", item.refused, "error", err)
	case panicked:
		contain(func() { q.observer.ResultsDropped(1) }) // logged when the panic was caught
	}
	q.trimLocked()
	q.mu.Unlock()
	if failed {
		return err
	}
	return nil
}

// reportWritten logs and counts a queued run that was written. A panic
// there (the logger, the observer) is logged and goes no further: the run
// is written.
func (q *writeQueue) reportWritten(r *results.Result, d Decision) {
	defer func() {
		if v := recover(); v != nil {
			q.logger.Error("panic after a queued run was recorded", "probe", r.Probe,
				"operation_id", r.OperationID, "panic", q.redact(fmt.Sprint(v)))
		}
	}()
	q.logger.Info("probe run recorded late", runAttrs(r, d)...)
	finished(q.observer, q.deliver, r, d)
}

// drain tries once more, for at most grace on real time (q.clock may be a
// test's, standing still), to write what is queued; a write that has
// started may take up to writeTimeout. What is left is logged and counted
// as lost. The queue is closed then: a run that returns later still gets
// one write, and is lost if that fails (see submit). run must have
// returned.
func (q *writeQueue) drain(ctx context.Context, grace time.Duration) {
	q.mu.Lock()
	n := len(q.items)
	q.closed = n == 0 // else once what is left is counted, below
	q.mu.Unlock()
	if n == 0 {
		return
	}
	q.logger.Info("writing the queued runs before stopping", "pending", n, "grace", grace)
	deadline := time.Now().Add(grace)
	failures := 0
	for first := true; q.pending() > 0 && (first || time.Now().Before(deadline)); first = false {
		if err := q.writeHead(ctx); err == nil {
			failures = 0
			continue
		}
		wait := q.retryDelay(failures)
		failures++
		if time.Until(deadline) < wait {
			break
		}
		time.Sleep(wait)
	}

	q.mu.Lock()
	lost, cause := len(q.items), q.lastErr
	q.items = nil
	q.closed = true
	q.mu.Unlock()
	if lost > 0 {
		q.logger.Error("stopping with runs that could not be written; they are lost", "runs", lost, "error", cause)
		q.observer.ResultsDropped(lost)
	}
}

// permanent reports whether err says the store will never take the record
// it was given: a refusal of that record (a constraint it breaks, say), not
// a fault of the store (busy, full, read-only, an I/O error) that may
// clear. The store marks such errors with a Permanent() bool method
// (results/sqlite does); an error without one is a fault.
func permanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}
