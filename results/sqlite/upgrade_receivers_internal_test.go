package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpgradeFrom0007NamesTheSlackReceiver: alerts written before routes
// were all for notify.slack, unless skipped, so that an alert still
// pending at the upgrade is delivered to Slack and not refused as having
// no receiver.
func TestUpgradeFrom0007NamesTheSlackReceiver(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	old := migrationsBefore(t, "0008")
	db := writerDB(t, path, writeParams)
	if err := migrate(ctx, db, old); err != nil {
		t.Fatal(err)
	}
	for _, state := range []string{"pending", "skipped", "failed"} {
		_, err := db.Exec(`INSERT INTO alerts (kind, probe, created_at, operation_id, outcome, code,
			attempts, duration_ms, consumer, consumer_version, rule_hash, state)
			VALUES ('firing', 'p', '2026-11-30T10:00:00.000Z', ?, 'unavailable', 'timeout', 1, 10, 'c', '1', 'h', ?)`,
			"op-"+state, state)
		if err != nil {
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
	alerts, err := s.Alerts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range alerts {
		got = append(got, string(a.State)+"="+a.Receiver)
		if a.Labels != nil {
			t.Errorf("%s alert read back with labels %v, want none", a.State, a.Labels)
		}
	}
	if want := "pending=default/slack skipped= failed=default/slack"; strings.Join(got, " ") != want {
		t.Errorf("receivers after upgrade: %q, want %q", strings.Join(got, " "), want)
	}
}
