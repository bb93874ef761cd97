package groupcommit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// recorder is a commit function that answers every request and keeps the
// size of each batch.
type recorder struct {
	mu      sync.Mutex
	batches []int
}

func (r *recorder) commit(batch []*Request) {
	r.mu.Lock()
	r.batches = append(r.batches, len(batch))
	r.mu.Unlock()
	for _, req := range batch {
		req.Claim()
		req.Finish(nil, nil)
	}
}

func (r *recorder) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.batches...)
}

func startQueue(t *testing.T, window time.Duration) (*Queue, *recorder) {
	t.Helper()
	q, rec := New(), &recorder{}
	q.SetWindow(window)
	go q.Run(rec.commit)
	t.Cleanup(q.Close)
	return q, rec
}

func record(t *testing.T, q *Queue, id string) {
	t.Helper()
	req := NewRequest(&results.RunRecord{Result: results.Result{OperationID: id}})
	if err := q.Enqueue(req); err != nil {
		t.Error(err)
		return
	}
	if _, err := req.Wait(context.Background()); err != nil {
		t.Error(err)
	}
}

// Runs that finish apart, each from its own caller, share one commit when
// the second arrives within the window of the first.
func TestWindowSharesACommit(t *testing.T) {
	q, rec := startQueue(t, 200*time.Millisecond)
	var wg sync.WaitGroup
	wg.Go(func() { record(t, q, "op-1") })
	time.Sleep(20 * time.Millisecond)
	wg.Go(func() { record(t, q, "op-2") })
	wg.Wait()
	if got := rec.sizes(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("batches %v, want one of 2 runs", got)
	}
}

// A caller that records one run after another, waiting for each, is not
// made to wait for company after its first run, with a window or without.
func TestWindowSequentialCallerDoesNotWait(t *testing.T) {
	for _, window := range []time.Duration{0, 200 * time.Millisecond} {
		q, rec := startQueue(t, window)
		for i := range 10 {
			record(t, q, "op-"+string(rune('a'+i)))
		}
		if n := q.Delays.Load(); n > 1 {
			t.Errorf("window %v: %d of 10 sequential batches waited, want at most the first", window, n)
		}
		if got := rec.sizes(); len(got) != 10 {
			t.Errorf("window %v: batches %v, want 10 of one run", window, got)
		}
	}
}

// Close does not wait out a window: the runs queued are committed at once.
func TestWindowEndsAtClose(t *testing.T) {
	q, rec := New(), &recorder{}
	q.SetWindow(time.Hour)
	done := make(chan struct{})
	go func() { q.Run(rec.commit); close(done) }()
	req := NewRequest(&results.RunRecord{Result: results.Result{OperationID: "op-1"}})
	if err := q.Enqueue(req); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); q.Delays.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the writer never waited for company with a window of an hour")
		}
		time.Sleep(time.Millisecond) // the writer is about to be in the window
	}
	q.Close()
	<-done
	if _, err := req.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rec.sizes(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("batches %v, want one of 1 run", got)
	}
}
