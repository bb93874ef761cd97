package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/internal/pgtest"
)

// TestCopyRows: rows come in as SQLite's text and read back in Postgres's
// types; rows already there are skipped, by key (results) or by what they
// say (silences); an alert finds its drift by the drift's content.
func TestCopyRows(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	cols := []string{"operation_id", "probe", "started_at", "duration_ms", "outcome", "code", "message", "retryable", "attempts", "consumer", "consumer_version", "rule_hash"}
	rows := [][]any{
		{"op-1", "p", "2026-10-26T13:07:00.123Z", "41", "pass", nil, nil, "0", "1", "c", "1", "h"},
		{"op-2", "p", "2026-10-26T13:08:00.456Z", "5000", "unavailable", "timeout", "no response", "1", "3", "c", "1", "h"},
	}
	copyRows := func(table string, cols []string, rows [][]any, want int64) {
		t.Helper()
		n, err := s.CopyRows(ctx, table, cols, rows)
		if err != nil || n != want {
			t.Fatalf("CopyRows(%s): %d copied, %v; want %d", table, n, err, want)
		}
	}
	copyRows("results", cols, rows, 2)
	copyRows("results", cols, append(rows, []any{"op-3", "p", "2026-10-26T13:09:00Z", "7", "pass", nil, nil, "0", "1", "c", "1", "h"}), 1)
	if got := strings.TrimSpace(pgtest.Exec(t, dsn, "SELECT string_agg(operation_id || ' ' || retryable || ' ' || to_char(started_at AT TIME ZONE 'UTC', 'HH24:MI:SS.MS'), ', ' ORDER BY id) FROM results")); got != "op-1 false 13:07:00.123, op-2 true 13:08:00.456, op-3 false 13:09:00.000" {
		t.Errorf("results: %s", got)
	}

	sil := []string{"matchers", "starts_at", "ends_at", "reason", "created_at", "expired_at"}
	one := []any{`{"probes":["p"]}`, "2026-10-26T13:00:00.000Z", "2026-10-26T14:00:00.000Z", "maintenance", "2026-10-26T12:59:00.000Z", nil}
	copyRows("silences", sil, [][]any{one}, 1)
	copyRows("silences", sil, [][]any{one}, 0)
	other := append([]any(nil), one...)
	other[3] = "another window"
	copyRows("silences", sil, [][]any{other}, 1)

	drift := []string{"probe", "operation_id", "detected_at", "baseline", "current", "diff", "kind", "description_before", "description_after", "step"}
	copyRows("drifts", drift, [][]any{{"p", "op-1", "2026-10-26T13:07:00.200Z", "aaaa", "bbbb", "x: removed", "response", nil, nil, nil}}, 1)
	copyRows("drifts", drift, [][]any{{"p", "op-1", "2026-10-26T13:07:00.200Z", "aaaa", "bbbb", "x: removed", "response", nil, nil, nil}}, 0)
	alert := []string{"kind", "probe", "created_at", "operation_id", "outcome", "attempts", "duration_ms", "consumer", "consumer_version", "rule_hash", "state", "resolving", "receiver",
		"drift_operation_id", "drift_kind", "drift_step", "drift_baseline", "drift_current"}
	a := []any{"shape_drift", "p", "2026-10-26T13:07:00.300Z", "op-1", "pass", "1", "41", "c", "1", "h", "pending", "0", "default/slack", "op-1", "response", nil, "aaaa", "bbbb"}
	copyRows("alerts", alert, [][]any{a}, 1)
	copyRows("alerts", alert, [][]any{a}, 0)
	if got := strings.TrimSpace(pgtest.Exec(t, dsn, "SELECT count(*) FROM alerts a JOIN drifts d ON d.id = a.drift_id")); got != "1" {
		t.Errorf("alerts naming the copied drift: %s, want 1", got)
	}

	if _, err := s.CopyRows(ctx, "probe_hours", []string{"probe"}, [][]any{{"p"}}); err == nil {
		t.Error("CopyRows(probe_hours): no error; the rollups are rebuilt, not copied")
	}
}
