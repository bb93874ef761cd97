package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

// TestUpgradeFrom0017AddsNode: a result stored before migration 0018
// reads back without a node, and an empty node is refused by the column,
// so that "no node" has one spelling, NULL.
func TestUpgradeFrom0017AddsNode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	db := writerDB(t, path, writeParams)
	if err := migrate(ctx, db, migrationsBefore(t, "0018")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome, attempts, consumer, consumer_version, rule_hash, kind)
		VALUES ('op-old', 'search', '2026-12-01T10:00:00.000Z', 30, 'pass', 1, 'c', '1', 'h', 'http')`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Result(ctx, "op-old")
	if err != nil || r.Node != "" {
		t.Errorf("Result(op-old): node %q, %v; want none", r.Node, err)
	}
	if _, err := s.writer.ExecContext(ctx, `UPDATE results SET node = '' WHERE operation_id = 'op-old'`); err == nil {
		t.Errorf("an empty node was stored; want the CHECK to refuse it")
	}
}
