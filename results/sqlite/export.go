package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// ExportTable is a table ExportRows reads, in the order a copy must write
// them: a row's references (shapes, results, drifts) come before it.
type ExportTable struct {
	Name    string
	Columns []string // the values of each row, in this order
}

// exportTables lists what a copy of the history moves: everything but the
// rollups (shape_counts, probe_hours), which the target rebuilds from the
// results. The key is what ExportRows pages by; alerts carry the drift
// they name by its content (drift_*), since ids do not survive a copy.
var exportTables = []struct {
	ExportTable
	key  []string
	from string
}{
	{ExportTable{"shapes", []string{"fingerprint", "canonical", "first_seen", "last_seen", "seen_count", "sample"}}, []string{"rowid"}, "shapes"},
	{ExportTable{"results", []string{"operation_id", "probe", "started_at", "duration_ms", "outcome", "code", "message", "retryable", "attempts", "http_status", "selected_count", "validated_count", "shape_fingerprint", "consumer", "consumer_version", "rule_hash", "response_sample", "shape_baseline", "shape_drift", "kind", "mcp_tool", "mcp_server", "tool_fingerprint", "step", "node", "location", "trace_id"}}, []string{"rowid"}, "results"},
	{ExportTable{"attempts", []string{"operation_id", "number", "started_at", "duration_ms", "http_status", "code", "message", "wait_ms", "method", "try", "step", "poll"}}, []string{"rowid"}, "attempts"},
	{ExportTable{"run_steps", []string{"operation_id", "position", "step", "outcome", "code", "message", "started_at", "duration_ms", "polls", "always", "skipped", "shape_fingerprint", "shape_baseline", "shape_drift"}}, []string{"operation_id", "position"}, "run_steps"},
	{ExportTable{"drifts", []string{"probe", "operation_id", "detected_at", "baseline", "current", "diff", "kind", "description_before", "description_after", "step"}}, []string{"rowid"}, "drifts"},
	{ExportTable{"alerts", []string{"kind", "probe", "created_at", "operation_id", "outcome", "code", "message", "attempts", "duration_ms", "http_status", "consumer", "consumer_version", "rule_hash", "failing_since", "state", "delivery_tries", "next_attempt_at", "last_error", "delivered_at", "previous_mode", "modes", "receiver", "labels", "target", "response_excerpt", "resolving", "trace_id",
		"drift_operation_id", "drift_kind", "drift_step", "drift_baseline", "drift_current"}}, []string{"alerts.rowid"},
		"alerts LEFT JOIN (SELECT id, operation_id AS drift_operation_id, kind AS drift_kind, step AS drift_step, baseline AS drift_baseline, current AS drift_current FROM drifts) d ON d.id = alerts.drift_id"},
	{ExportTable{"alert_state", []string{"probe", "consecutive_failures", "failing_since", "firing", "last_notified_at", "updated_at", "notified", "modes", "announced", "receivers", "silenced_at"}}, []string{"rowid"}, "alert_state"},
	{ExportTable{"silences", []string{"matchers", "starts_at", "ends_at", "reason", "created_at", "expired_at"}}, []string{"rowid"}, "silences"},
	{ExportTable{"shape_profiles", []string{"probe", "profile", "answers", "updated_at", "reset_at"}}, []string{"rowid"}, "shape_profiles"},
	{ExportTable{"tool_definitions", []string{"probe", "fingerprint", "definition", "first_seen_at", "last_seen_at"}}, []string{"probe", "fingerprint"}, "tool_definitions"},
}

// ExportTables returns the tables a copy of the history reads, in the
// order it must write them.
func ExportTables() []ExportTable {
	out := make([]ExportTable, len(exportTables))
	for i, t := range exportTables {
		out[i] = ExportTable{t.Name, append([]string(nil), t.Columns...)}
	}
	return out
}

// ExportCount returns how many rows table holds, for a progress bar.
func (s *Store) ExportCount(ctx context.Context, table string) (int64, error) {
	t, err := exportTable(table)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := s.reader.QueryRowContext(ctx, "SELECT count(*) FROM "+t.Name).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count %s: %w", table, err)
	}
	return n, nil
}

// ExportCursor is where ExportRows stopped; the zero value starts at the
// beginning.
type ExportCursor struct{ key []any }

// ExportRows reads up to limit rows of table after cursor, in the order of
// its key, each as its ExportTable's Columns: a string or nil (NULL), as
// SQLite holds them. Reading every batch until one comes back empty reads
// the table once; rows written meanwhile after the cursor are read too.
func (s *Store) ExportRows(ctx context.Context, table string, cursor ExportCursor, limit int) ([][]any, ExportCursor, error) {
	t, err := exportTable(table)
	if err != nil {
		return nil, cursor, err
	}
	keys := strings.Join(t.key, ", ")
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = c
		if t.Name != "alerts" || !strings.HasPrefix(c, "drift_") {
			cols[i] = t.Name + "." + c
		}
	}
	q := "SELECT " + keys + ", " + strings.Join(cols, ", ") + " FROM " + t.from
	args := append([]any(nil), cursor.key...)
	if len(args) > 0 {
		q += " WHERE (" + keys + ") > (" + strings.TrimSuffix(strings.Repeat("?, ", len(t.key)), ", ") + ")"
	}
	q += " ORDER BY " + keys + " LIMIT ?"
	args = append(args, limit)
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, cursor, fmt.Errorf("sqlite: export %s: %w", table, err)
	}
	defer rows.Close()
	var out [][]any
	nk := len(t.key)
	for rows.Next() {
		key := make([]any, nk)
		vals := make([]sql.NullString, len(t.Columns))
		dest := make([]any, 0, nk+len(vals))
		for i := range key {
			dest = append(dest, &key[i])
		}
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, cursor, fmt.Errorf("sqlite: export %s: %w", table, err)
		}
		for i, k := range key {
			if b, ok := k.([]byte); ok {
				key[i] = string(b) // text, compared as text
			}
		}
		row := make([]any, len(vals))
		for i, v := range vals {
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
		cursor = ExportCursor{key: key}
	}
	if err := rows.Err(); err != nil {
		return nil, cursor, fmt.Errorf("sqlite: export %s: %w", table, err)
	}
	return out, cursor, nil
}

func exportTable(name string) (*struct {
	ExportTable
	key  []string
	from string
}, error) {
	for i := range exportTables {
		if exportTables[i].Name == name {
			return &exportTables[i], nil
		}
	}
	return nil, fmt.Errorf("sqlite: export: no table %q", name)
}
