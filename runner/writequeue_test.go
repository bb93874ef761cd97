package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/results"
)

// The write queue's order and overflow rules under concurrency: many
// producers (probes, each running one run at a time) feed one queue while
// the store fails, and every run must end exactly once, written or
// dropped, in a way the FIFO rule allows. Run it with -race and a high
// -count: a broken rule shows up as an interleaving, not on every run.

// wqTimeline is what happened to each run, in one order: the store's
// writes (recorded inside the write, before the queue learns of them) and
// the queue's drops (logged under the queue's lock, in drop order).
type wqTimeline struct {
	mu     sync.Mutex
	events []wqEvent
}

type wqEvent struct {
	id      string
	written bool // else dropped
}

func (tl *wqTimeline) add(id string, written bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.events = append(tl.events, wqEvent{id, written})
}

func (tl *wqTimeline) snapshot() []wqEvent {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.events)
}

// Write takes the queue's JSON log and turns its drop lines into events.
func (tl *wqTimeline) Write(p []byte) (int, error) {
	var rec map[string]any
	if json.Unmarshal(p, &rec) == nil {
		switch rec["msg"] {
		case "write queue full; dropped the oldest waiting run", "the store refuses the run for good; dropped",
			"panic while writing a queued run; the run is lost":
			tl.add(rec["operation_id"].(string), false)
		}
	}
	return len(p), nil
}

// wqStore is the store behind the queue: it fails while failing says so,
// and takes a little time over each write so that producers overlap the
// writer's writes.
type wqStore struct {
	tl      *wqTimeline
	failing func() bool
	writes  atomic.Int64
}

func (s *wqStore) write(_ context.Context, r *results.Result) (Decision, error) {
	s.writes.Add(1)
	time.Sleep(50 * time.Microsecond)
	if s.failing() {
		return Decision{}, errors.New("attempt to write a readonly database")
	}
	s.tl.add(r.OperationID, true)
	return Decision{}, nil
}

// wqQueue is a queue of capacity over store, with back-off short enough
// for a stress test, its writer running until the test ends.
func wqQueue(t *testing.T, capacity int, store *wqStore) (q *writeQueue, obs *countingObserver) {
	t.Helper()
	obs = &countingObserver{}
	logger := slog.New(slog.NewJSONHandler(store.tl, nil))
	q = newWriteQueue(capacity, store.write, logger, obs, func() {},
		clockwork.NewRealClock(), rand.Float64, func(s string) string { return s })
	q.retryBase, q.retryMax = 100*time.Microsecond, time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return q, obs
}

// wqProduce runs producers goroutines, each recording runs runs one after
// the other, as a probe does, and returns the ids of each producer's runs
// in the order they were made.
func wqProduce(t *testing.T, q *writeQueue, producers, runs int) [][]string {
	t.Helper()
	ids := make([][]string, producers)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range runs {
				id := fmt.Sprintf("p%02d-%03d", p, i)
				ids[p] = append(ids[p], id)
				q.submit(t.Context(), &results.Result{Probe: fmt.Sprintf("p%02d", p), OperationID: id})
				if i%7 == 0 {
					time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
				}
			}
		})
	}
	wg.Wait()
	return ids
}

// wqCheckFIFO checks the timeline against the rules: every run ends once,
// and each producer's runs end in the order they were made, whether
// written or dropped. The second holds only if the queue writes oldest
// first, lets no run pass one that waits, and drops only the oldest: a
// newer run dropped while an older one still waits (to be written or
// dropped later) breaks it.
func wqCheckFIFO(t *testing.T, ids [][]string, events []wqEvent) (written, dropped int) {
	t.Helper()
	seen := map[string]int{}
	order := map[string][]string{} // producer -> its runs in the order they ended
	for _, e := range events {
		seen[e.id]++
		p, _, _ := strings.Cut(e.id, "-")
		order[p] = append(order[p], e.id)
		if e.written {
			written++
		} else {
			dropped++
		}
	}
	for _, runs := range ids {
		for _, id := range runs {
			if seen[id] != 1 {
				t.Errorf("run %s ended %d times, want once: written or dropped", id, seen[id])
			}
		}
		p, _, _ := strings.Cut(runs[0], "-")
		if got := order[p]; !slices.Equal(got, runs) {
			t.Errorf("producer %s's runs ended in the order\n%v\nwant the order they were made\n%v", p, got, runs)
		}
	}
	return written, dropped
}

// TestWriteQueueOutage: the store fails throughout while 8 producers make
// 40 runs each into a queue of 16; then it recovers. Exactly 16 runs
// survive to be written and 320-16 are dropped, each producer's dropped
// runs all older than its written ones.
func TestWriteQueueOutage(t *testing.T) {
	const producers, runs, capacity = 8, 40, 16
	tl := &wqTimeline{}
	var failing atomic.Bool
	failing.Store(true)
	store := &wqStore{tl: tl, failing: failing.Load}
	q, obs := wqQueue(t, capacity, store)

	ids := wqProduce(t, q, producers, runs)
	waitUntil(t, "the queue at its capacity, no write in flight", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.items) == capacity && !q.writing
	}, func() string { return fmt.Sprintf("%d pending", q.pending()) })
	if got := obs.count("dropped"); got != producers*runs-capacity {
		t.Errorf("ResultsDropped counted %d, want %d", got, producers*runs-capacity)
	}

	failing.Store(false)
	waitUntil(t, "the queue written", func() bool { return q.pending() == 0 },
		func() string { return fmt.Sprintf("%d pending", q.pending()) })
	written, dropped := wqCheckFIFO(t, ids, tl.snapshot())
	if written != capacity || dropped != producers*runs-capacity {
		t.Errorf("%d written and %d dropped, want the %d newest written and %d dropped", written, dropped, capacity, producers*runs-capacity)
	}
}

// TestWriteQueueFlappingStore: the store fails one write in two, at
// random, while 8 producers make 60 runs each into a queue of 8, then
// recovers. Every run ends once, in its producer's order, and the queue
// empties.
func TestWriteQueueFlappingStore(t *testing.T) {
	const producers, runs, capacity = 8, 60, 8
	tl := &wqTimeline{}
	var healthy atomic.Bool
	store := &wqStore{tl: tl, failing: func() bool { return !healthy.Load() && rand.IntN(2) == 0 }}
	q, obs := wqQueue(t, capacity, store)

	ids := wqProduce(t, q, producers, runs)
	healthy.Store(true)
	waitUntil(t, "the queue written", func() bool { return q.pending() == 0 },
		func() string { return fmt.Sprintf("%d pending", q.pending()) })
	written, dropped := wqCheckFIFO(t, ids, tl.snapshot())
	if written+dropped != producers*runs {
		t.Errorf("%d written and %d dropped of %d runs", written, dropped, producers*runs)
	}
	if got := obs.count("dropped"); got != dropped {
		t.Errorf("ResultsDropped counted %d, the log names %d drops", got, dropped)
	}
	if dropped == 0 {
		t.Logf("no run was dropped: this run of the test did not overflow the queue")
	}
}

// panickyWriter panics on every log line that reports a drop, as a broken
// log sink might.
type panickyWriter struct{ panics atomic.Int64 }

func (w *panickyWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "dropped") {
		w.panics.Add(1)
		panic("log sink broke")
	}
	return len(p), nil
}

// TestWriteQueueDropReportPanics: drops are reported under the queue's
// lock, so a logger that panics there must not leave the lock held. With
// such a logger the queue overflows during an outage; every drop is still
// counted, and after the store recovers the queue writes what it holds and
// takes new runs.
func TestWriteQueueDropReportPanics(t *testing.T) {
	const capacity, runs = 4, 12
	var failing atomic.Bool
	failing.Store(true)
	store := &wqStore{tl: &wqTimeline{}, failing: failing.Load}
	logs := &panickyWriter{}
	obs := &countingObserver{}
	q := newWriteQueue(capacity, store.write, slog.New(slog.NewJSONHandler(logs, nil)), obs, func() {},
		clockwork.NewRealClock(), rand.Float64, func(s string) string { return s })
	q.retryBase, q.retryMax = 100*time.Microsecond, time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	for i := range runs {
		recorded := make(chan struct{})
		go func() {
			defer close(recorded)
			q.submit(t.Context(), &results.Result{Probe: "p", OperationID: fmt.Sprintf("run-%02d", i)})
		}()
		waitFor(t, fmt.Sprintf("run %d recorded while the logger panics", i), func() bool {
			select {
			case <-recorded:
				return true
			default:
				return false
			}
		})
	}
	if got := obs.count("dropped"); got != runs-capacity {
		t.Errorf("ResultsDropped counted %d, want %d", got, runs-capacity)
	}
	if logs.panics.Load() == 0 {
		t.Fatal("the logger never panicked: the test did not test its subject")
	}
	failing.Store(false)
	waitUntil(t, "the queue written after the store recovered", func() bool { return q.pending() == 0 },
		func() string { return fmt.Sprintf("%d pending", q.pending()) })
	if _, err := q.submit(t.Context(), &results.Result{Probe: "p", OperationID: "after"}); err != nil {
		t.Errorf("a run after the recovery: %v", err)
	}
}
