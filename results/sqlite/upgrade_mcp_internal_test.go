package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// TestUpgradeFrom0012: drifts written before migration 0013 read back as
// response drifts, and attempts rows as their own tries without a method,
// so the try count of an old run is still its number of rows.
func TestUpgradeFrom0012(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	old := migrationsBefore(t, "0013")
	db := writerDB(t, path, writeParams)
	if err := migrate(ctx, db, old); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO drifts (probe, operation_id, detected_at, baseline, current, diff)
		VALUES ('p', 'op-1', '2026-11-30T10:00:00.000Z', 'aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb', 'results: list<string> -> string')`,
		`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome, code, message, retryable,
			attempts, consumer, consumer_version, rule_hash)
		VALUES ('op-1', 'p', '2026-11-30T10:00:00.000Z', 30, 'unavailable', 'timeout', 'slow', 1, 2, 'c', '1', 'h')`,
		`INSERT INTO attempts (operation_id, number, started_at, duration_ms, code, message, wait_ms)
		VALUES ('op-1', 1, '2026-11-30T10:00:00.000Z', 10, 'timeout', 'slow', 5),
		       ('op-1', 2, '2026-11-30T10:00:00.015Z', 10, 'timeout', 'slow', 0)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds, err := s.Drifts(ctx, "", time.Time{}, 0)
	if err != nil || len(ds) != 1 || ds[0].Kind != results.DriftResponse || ds[0].Before != "" {
		t.Errorf("old drift after the upgrade: %+v, %v; want one of kind response", ds, err)
	}
	r, err := s.Result(ctx, "op-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.AttemptCount() != 2 || r.Tool != nil {
		t.Errorf("old run after the upgrade: %d tries, tool %+v; want 2 tries, no tool", r.AttemptCount(), r.Tool)
	}
	for _, a := range r.Attempts {
		if a.Method != "" || a.TryNumber() != a.Number {
			t.Errorf("old attempt %d: method %q, try %d; want none, its own", a.Number, a.Method, a.TryNumber())
		}
	}
}
