package postgres_test

import (
	"context"
	"testing"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// TestConnectionsCutRecover cuts every connection of the store, as a
// server restart or a network cut does: what fails meanwhile is a fault
// (the daemon holds the run and retries), never a refusal, and the store
// works again without being reopened.
func TestConnectionsCutRecover(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	if err := s.Record(ctx, passRun("op-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History(ctx, results.HistoryQuery{}); err != nil {
		t.Fatal(err)
	}
	cut := `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`
	if n := count(t, dsn, cut); n == 0 {
		t.Fatal("the store had no connection to cut")
	}
	// The pool may hand out a cut connection once; after that it has
	// dropped it.
	for i, id := range []string{"op-2", "op-2"} {
		err := s.Record(ctx, passRun(id))
		if err == nil {
			break
		}
		t.Logf("recording right after the cut: %v", err)
		if postgres.Permanent(err) {
			t.Fatalf("recording over a cut connection: %v, a refusal; want a fault", err)
		}
		if i == 1 {
			t.Fatalf("recording after the cut, again: %v", err)
		}
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping after the cut: %v", err)
	}
	if n := count(t, dsn, `SELECT count(*) FROM results`); n != 2 {
		t.Errorf("results after the cut: %d, want 2", n)
	}
}
