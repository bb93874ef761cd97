package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestUpgradeFrom0018AlertsGoAlone: an alert still pending from before
// migration 0019 reads back with no group, so the deliverer sends it
// alone as it would have, and no group's PendingGroup returns it.
func TestUpgradeFrom0018AlertsGoAlone(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	db := writerDB(t, path, writeParams)
	if err := migrate(ctx, db, migrationsBefore(t, "0019")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO alerts (kind, probe, created_at, operation_id, outcome, code,
		attempts, duration_ms, consumer, consumer_version, rule_hash, state, receiver, labels)
		VALUES ('firing', 'p', '2026-11-30T10:00:00.000Z', 'op-old', 'unavailable', 'timeout', 1, 10, 'c', '1', 'h', 'pending',
		'default/slack', '{"provider":"search"}')`); err != nil {
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
	due, err := s.DueAlerts(ctx, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 10)
	if err != nil || len(due) != 1 || due[0].GroupKey != "" {
		t.Fatalf("DueAlerts after the upgrade: %+v, %v; want the old alert, in no group", due, err)
	}
	g, err := s.PendingGroup(ctx, `default/slack{provider="search"}`)
	if err != nil || len(g.Alerts) != 0 {
		t.Errorf("PendingGroup after the upgrade: %d alerts, %v; want none: the old alert joined no group", len(g.Alerts), err)
	}
}
