package sqlite

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"
)

// TestUpgradeFrom0013: results, attempts and drifts written before
// migration 0014 read back with no step and no steps, and a row that
// names a step on a pass is refused by the schema itself.
func TestUpgradeFrom0013(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	old := migrationsBefore(t, "0014")
	db := writerDB(t, path, writeParams)
	if err := migrate(ctx, db, old); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO drifts (probe, operation_id, detected_at, baseline, current, diff)
		VALUES ('p', 'op-1', '2026-11-30T10:00:00.000Z', 'aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb', 'results: list<string> -> string')`,
		`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome, code, message, retryable,
			attempts, consumer, consumer_version, rule_hash, kind)
		VALUES ('op-1', 'p', '2026-11-30T10:00:00.000Z', 30, 'unavailable', 'timeout', 'slow', 1, 1, 'c', '1', 'h', 'steps')`,
		`INSERT INTO attempts (operation_id, number, started_at, duration_ms, code, message, wait_ms)
		VALUES ('op-1', 1, '2026-11-30T10:00:00.000Z', 10, 'timeout', 'slow', 0)`,
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
	r, err := s.Result(ctx, "op-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Step != "" || r.Steps != nil || len(r.Attempts) != 1 || r.Attempts[0].Step != "" {
		t.Errorf("old run after the upgrade: step %q, steps %+v, attempts %+v; want no step anywhere", r.Step, r.Steps, r.Attempts)
	}
	ds, err := s.Drifts(ctx, "", time.Time{}, 0)
	if err != nil || len(ds) != 1 || ds[0].Step != "" {
		t.Errorf("old drift after the upgrade: %+v, %v; want one without a step", ds, err)
	}

	w := writerDB(t, path, writeParams)
	if _, err := w.Exec(`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome,
		attempts, consumer, consumer_version, rule_hash, kind, step)
		VALUES ('op-2', 'p', '2026-11-30T10:01:00.000Z', 30, 'pass', 1, 'c', '1', 'h', 'steps', 'verify')`); err == nil {
		t.Error("a pass with a deciding step was stored; want the CHECK to refuse it")
	}
	if _, err := w.Exec(`INSERT INTO run_steps (operation_id, position, step, outcome, started_at, duration_ms, skipped)
		VALUES ('op-1', 1, 'cleanup', 'unavailable', '2026-11-30T10:00:00.000Z', 0, 1)`); err == nil {
		t.Error("a skipped step that failed was stored; want the CHECK to refuse it")
	}
}

// migrationsBefore is the embedded migrations numbered below version: the
// schema a database had before that migration, for an upgrade test.
func migrationsBefore(t *testing.T, version string) fstest.MapFS {
	t.Helper()
	old := fstest.MapFS{}
	names, err := fs.Glob(embedded, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if name >= version {
			continue
		}
		data, err := fs.ReadFile(embedded, name)
		if err != nil {
			t.Fatal(err)
		}
		old[name] = &fstest.MapFile{Data: data}
	}
	return old
}
