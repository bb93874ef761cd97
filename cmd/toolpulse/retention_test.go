package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

func TestPruneLoop(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	record := func(id string, age time.Duration) {
		t.Helper()
		r := results.Result{OperationID: id, Probe: "p", StartedAt: time.Now().Add(-age), Outcome: results.Pass,
			Attempts:   []results.Attempt{{Number: 1, StartedAt: time.Now().Add(-age), HTTPStatus: 200}},
			HTTPStatus: 200, Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"}}
		if err := store.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	record("old", 48*time.Hour)
	record("new", time.Minute)

	loopCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pruneLoop(loopCtx, store, 24*time.Hour, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := store.Result(ctx, "old"); errors.Is(err, sqlite.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the result older than retention was not pruned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if _, err := store.Result(ctx, "new"); err != nil {
		t.Errorf("the result within retention is gone: %v", err)
	}
}
