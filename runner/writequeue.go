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

// defaultWriteQueue is how many runs wait in memory while the store cannot
// be written, when Deps.WriteQueue is zero (its memory: BENCHMARKS.md).
const defaultWriteQueue = 10_000

// Back-off of the writes of queued results: writeRetryBase doubling up to
// writeRetryMax, jittered, see writeQueue.retryDelay.
const (
	writeRetryBase = 500 * time.Millisecond
	writeRetryMax  = 30 * time.Second
)

// maxRefusals is how many times the store may refuse a run for good (see
// permanent) before it is dropped: a few tries spare a misclassified one.
const maxRefusals = 3

// writeTimeout bounds the write of one run, which ignores the run's
// cancellation so that a shutdown does not lose it.
const writeTimeout = 15 * time.Second

// errQueueClosed says a run finished after the queue closed at shutdown.
var errQueueClosed = errors.New("the daemon has stopped writing queued runs")

// writeFunc writes one finished run and returns what was decided; see
// Recorder.write.
type writeFunc func(ctx context.Context, r *results.Result) (Decision, error)

// writeQueue is where a finished run waits when the store cannot take it
// (read-only file, full disk, a lock held too long): a bounded FIFO in
// memory, written oldest first by one goroutine (run) with back-off.
//
// Order: while anything waits, a new run joins the tail even when the
// store would take it, so each probe's runs reach the alert policy in the
// order they ran.
//
// Overflow: past capacity the oldest waiting run is dropped, logged and
// counted, in order. The run being written is the oldest, but its write
// cannot be taken back, so an overflow waits for its end: the queue may
// hold, for one write (at most writeTimeout), runs beyond its capacity.
//
// A run the store refuses for good (see permanent) is dropped after
// maxRefusals tries, and one whose write panics at once.
type writeQueue struct {
	write    writeFunc
	logger   *slog.Logger
	observer Observer
	deliver  func()          // wakes the deliverer for a run written late; see finished
	clock    clockwork.Clock // the back-off waits; tests pass a fake one
	rand     func() float64
	redact   func(string) string
	capacity int
	wake     chan struct{} // the queue is no longer empty

	retryBase, retryMax time.Duration // shorter in tests

	mu      sync.Mutex // guards what follows; drops are logged under it, in order
	items   []*queued  // oldest first; items[0] is being written while writing
	writing bool
	lastErr error // of the last failed write
	closed  bool  // after the last drain: a run not written at once is lost
}

// queued is a run waiting in the write queue.
type queued struct {
	r       *results.Result
	refused int // writes of r the store refused for good
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

// submit writes r and returns what was decided, unless runs are already
// waiting: r then joins them unwritten, as it does when its write fails,
// and err says why. Once the queue has closed, r is written at once or
// not at all (err wraps errQueueClosed).
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
// writeTimeout: a run cancelled by shutdown is still written, as canceled.
func (q *writeQueue) writeOne(ctx context.Context, r *results.Result) (Decision, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	return q.write(ctx, r)
}

// pending returns how many runs wait, the one being written included.
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
// being written (writeHead trims when it ends). q.mu must be held.
func (q *writeQueue) trimLocked() {
	for len(q.items) > q.capacity && !q.writing {
		r := q.items[0].r
		q.popLocked()
		q.reportDropLocked("write queue full; dropped the oldest waiting run", "probe", r.Probe,
			"operation_id", r.OperationID, "capacity", q.capacity)
	}
}

// reportDropLocked logs and counts one dropped run, under q.mu so that
// drops are reported in order; a panic there is contained, or it would
// leave the lock held. q.mu must be held.
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

// retryDelay is the wait after n failed writes: between half and all of
// min(retryMax, retryBase * 2^n), so a retry never spins.
func (q *writeQueue) retryDelay(n int) time.Duration {
	c := prober.BackoffCeiling(q.retryBase, q.retryMax, n)
	return c/2 + time.Duration(q.rand()*float64(c/2))
}

// run writes the queued runs until ctx ends: the first after a back-off
// (a run is queued after a failed write), the next at once after a
// success. The waits are on q.clock.
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

// writeHead writes the oldest queued run; on a failure it stays at the
// head and the error is returned. A dropped run (panic, refusals) returns
// nil: the next may be written at once.
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
		// Before it leaves the queue: once pending falls, it is counted.
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

// drain tries once more, for at most grace on real time, to write what is
// queued, then logs and counts the rest as lost and closes the queue (see
// submit). run must have returned.
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

// permanent reports whether err says the store will never take the run (a
// constraint it breaks), not a fault that may clear (busy, full, I/O): the
// store marks such errors with a Permanent() bool method.
func permanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}
