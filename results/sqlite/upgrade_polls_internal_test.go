package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestUpgradeFrom0014RecountsPolls: steps runs recorded before migration
// 0015 numbered their tries on through a verification's polls, and their
// attempts counted every step and poll, so every one read as retried. The
// upgrade recounts them, retries only, and moves the hourly sums along.
func TestUpgradeFrom0014RecountsPolls(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	db := writerDB(t, path, writeParams)
	if err := migrate(ctx, db, migrationsBefore(t, "0015")); err != nil {
		t.Fatal(err)
	}
	attempt := func(op string, number int, step string, try int, code string) string {
		c := "NULL"
		if code != "" {
			c = "'" + code + "'"
		}
		return `INSERT INTO attempts (operation_id, number, started_at, duration_ms, code, message, wait_ms, try, step)
		VALUES ('` + op + `', ` + itoa(number) + `, '2026-11-30T10:00:00.000Z', 10, ` + c + `, ` + c + `, 0, ` + itoa(try) + `, '` + step + `')`
	}
	stmts := []string{
		// op-clean: a refund, four polls, a revert: 6 "attempts" then.
		`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome, attempts, consumer, consumer_version, rule_hash, kind)
		VALUES ('op-clean', 'refund', '2026-11-30T10:00:00.000Z', 30, 'pass', 6, 'c', '1', 'h', 'steps')`,
		attempt("op-clean", 1, "refund", 1, ""),
		attempt("op-clean", 2, "verify", 1, ""), attempt("op-clean", 3, "verify", 2, ""),
		attempt("op-clean", 4, "verify", 3, ""), attempt("op-clean", 5, "verify", 4, ""),
		attempt("op-clean", 6, "revert", 1, ""),
		// op-retried: the first poll timed out and was retried, then a
		// second poll: 3 then, one retry really.
		`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome, attempts, consumer, consumer_version, rule_hash, kind)
		VALUES ('op-retried', 'refund', '2026-11-30T10:05:00.000Z', 30, 'pass', 3, 'c', '1', 'h', 'steps')`,
		attempt("op-retried", 1, "verify", 1, "timeout"), attempt("op-retried", 2, "verify", 2, ""),
		attempt("op-retried", 3, "verify", 3, ""),
		`INSERT INTO probe_hours (probe, hour, runs, pass, contract_error, unavailable, passed_after_retries, retries, duration_buckets)
		VALUES ('refund', '2026-11-30T10', 2, 2, 0, 0, 2, 7, '{"30":2}')`,
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
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
	for op, want := range map[string]int{"op-clean": 1, "op-retried": 2} {
		var got int
		if err := s.reader.QueryRowContext(ctx, `SELECT attempts FROM results WHERE operation_id = ?`, op).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: attempts %d after the upgrade, want %d", op, got, want)
		}
		r, err := s.Result(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		if r.Attempts[0].Poll != 0 {
			t.Errorf("%s: an old row reads poll %d, want 0", op, r.Attempts[0].Poll)
		}
	}
	var passedAfterRetries, retries int
	if err := s.reader.QueryRowContext(ctx, `SELECT passed_after_retries, retries FROM probe_hours WHERE probe = 'refund'`).
		Scan(&passedAfterRetries, &retries); err != nil {
		t.Fatal(err)
	}
	if passedAfterRetries != 1 || retries != 1 {
		t.Errorf("probe_hours after the upgrade: %d passed after retries, %d retries; want 1 and 1", passedAfterRetries, retries)
	}
	// Pruning takes each result's recounted attempts away from its hour:
	// the sums must not go below zero and refuse it.
	if _, err := s.Prune(ctx, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 100); err != nil {
		t.Errorf("prune after the upgrade: %v", err)
	}
}

func itoa(n int) string { return fmt.Sprint(n) }
