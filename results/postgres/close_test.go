package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// waitQueued waits until n runs wait for s's writer.
func waitQueued(t *testing.T, s *postgres.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for postgres.Queued(s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs queued after 5s, want %d", postgres.Queued(s), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRecordRunContextDoneWhileQueued holds the writer while a run waits
// in its queue and cancels the run's context: RecordRun returns the
// context's error at once, and the run is never written, while the runs
// queued with it are.
func TestRecordRunContextDoneWhileQueued(t *testing.T) {
	s, dsn := newStore(t)
	postgres.HoldWriter(s, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.RecordRun(ctx, runWithID("op-gone", false)) }()
	waitQueued(t, s, 1)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "postgres: record op-gone: ") {
			t.Errorf("RecordRun: got %v, want context.Canceled, wrapped", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RecordRun still waiting 5s after its context ended")
	}

	// Two more runs release the writer, which skips the first.
	errs := make(chan error, 2)
	go func() { errs <- s.RecordRun(context.Background(), runWithID("op-1", false)) }()
	waitQueued(t, s, 2)
	go func() { errs <- s.RecordRun(context.Background(), runWithID("op-2", true)) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("run queued after the abandoned one: %v", err)
		}
	}
	if n := count(t, dsn, "SELECT count(*) FROM results WHERE operation_id = 'op-gone'"); n != 0 {
		t.Errorf("the run whose context ended was stored")
	}
	if n := count(t, dsn, "SELECT count(*) FROM results"); n != 2 {
		t.Errorf("results: got %d, want 2", n)
	}
}

// TestCloseCommitsQueuedRuns closes the store while runs wait for the
// writer: Close commits them before it returns, every caller is told they
// are recorded, and a RecordRun after Close fails with ErrClosed, a fault
// rather than a refusal.
func TestCloseCommitsQueuedRuns(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	postgres.HoldWriter(s, postgres.MaxBatch) // more than will come: only Close releases the writer
	const queued = 5
	errs := make(chan error, queued)
	recs := make([]*results.RunRecord, queued)
	for i := range queued {
		recs[i] = runWithID(fmt.Sprintf("op-%d", i), false)
		go func() { errs <- s.RecordRun(ctx, recs[i]) }()
	}
	waitQueued(t, s, queued)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range queued {
		if err := <-errs; err != nil {
			t.Errorf("RecordRun queued before Close: %v", err)
		}
	}
	for _, rec := range recs {
		if rec.Alerts[0].ID == 0 {
			t.Errorf("%s: alert ID not set", rec.Result.OperationID)
		}
	}
	if n := count(t, dsn, "SELECT count(*) FROM results"); n != queued {
		t.Errorf("results after Close: got %d, want %d", n, queued)
	}
	if err := s.RecordRun(ctx, runWithID("op-late", false)); !errors.Is(err, postgres.ErrClosed) || postgres.Permanent(err) {
		t.Errorf("recording after Close: got %v, want ErrClosed, not permanent", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
