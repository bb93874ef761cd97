package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// copyTables says, for each table a copy of a history fills (toolpulse
// store copy), how a row already there is recognised, so that copying the
// same history twice writes each row once. Tables with a key of their own
// rely on it (ON CONFLICT DO NOTHING); ids are the target's own, so drifts,
// alerts and silences, whose only key is an id, are recognised by what
// they say instead (skip).
var copyTables = map[string]struct {
	skip string // a condition on the staged row s: it is there already
}{
	"shapes":           {}, // fingerprint
	"results":          {}, // operation_id
	"attempts":         {}, // operation_id, number
	"run_steps":        {}, // operation_id, position
	"drifts":           {"EXISTS (SELECT 1 FROM drifts t WHERE t.operation_id = s.operation_id AND t.kind = s.kind AND t.step IS NOT DISTINCT FROM s.step AND t.baseline = s.baseline AND t.current = s.current)"},
	"alerts":           {"EXISTS (SELECT 1 FROM alerts t WHERE t.operation_id = s.operation_id AND t.kind = s.kind AND t.receiver IS NOT DISTINCT FROM s.receiver AND t.resolving = s.resolving::boolean AND t.created_at = s.created_at::timestamptz)"},
	"alert_state":      {}, // probe: the target's state, if any, stands
	"silences":         {"EXISTS (SELECT 1 FROM silences t WHERE t.matchers::text = s.matchers AND t.reason = s.reason AND t.starts_at = s.starts_at::timestamptz AND t.ends_at = s.ends_at::timestamptz AND t.created_at = s.created_at::timestamptz)"},
	"shape_profiles":   {}, // probe
	"tool_definitions": {}, // probe, fingerprint
}

// alertDrift finds the drift a copied alert names, by what the drift says
// (the staged drift_* columns): ids are not copied.
const alertDrift = `(SELECT t.id FROM drifts t WHERE t.operation_id = s.drift_operation_id AND t.kind = s.drift_kind
    AND t.step IS NOT DISTINCT FROM s.drift_step AND t.baseline = s.drift_baseline AND t.current = s.drift_current
    ORDER BY t.id LIMIT 1)`

// CopyRows writes the rows of table that the database does not hold yet,
// in one transaction, and returns how many it wrote; the others were there
// already. Each row holds the values of columns as text (or nil for NULL),
// as results/sqlite's ExportRows reads them: times in RFC 3339, flags 0 or
// 1, JSON as its text. Rows are bulk-loaded (COPY) into a temporary table,
// then inserted from it, converted to the table's types.
//
// Rollups are not copied: once a copy has written results, RebuildRollups
// fills them from the results.
func (s *Store) CopyRows(ctx context.Context, table string, columns []string, rows [][]any) (int64, error) {
	spec, ok := copyTables[table]
	if !ok {
		return 0, fmt.Errorf("postgres: copy: no table %q", table)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("postgres: copy %s: %w", table, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	types, err := columnTypes(ctx, tx, table)
	if err != nil {
		return 0, fmt.Errorf("postgres: copy %s: %w", table, err)
	}
	staged := make([]string, len(columns))
	for i, c := range columns {
		staged[i] = pgx.Identifier{c}.Sanitize() + " text"
	}
	if _, err := tx.Exec(ctx, "CREATE TEMPORARY TABLE copy_stage ("+strings.Join(staged, ", ")+") ON COMMIT DROP"); err != nil {
		return 0, fmt.Errorf("postgres: copy %s: staging table: %w", table, err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"copy_stage"}, columns, pgx.CopyFromRows(rows)); err != nil {
		return 0, fmt.Errorf("postgres: copy %s: %w", table, err)
	}
	var into, from []string
	for _, c := range columns {
		typ, ok := types[c]
		if !ok || c == "id" || c == "drift_id" {
			continue // the target's ids are its own; alerts name their drift below
		}
		id := pgx.Identifier{c}.Sanitize()
		into = append(into, id)
		from = append(from, "s."+id+"::"+typ)
	}
	if table == "alerts" && slices.Contains(columns, "drift_operation_id") {
		into = append(into, "drift_id")
		from = append(from, alertDrift)
	}
	q := "INSERT INTO " + table + " (" + strings.Join(into, ", ") + ")\nSELECT " + strings.Join(from, ", ") + "\nFROM copy_stage s"
	if spec.skip != "" {
		q += "\nWHERE NOT " + spec.skip
	}
	q += "\nON CONFLICT DO NOTHING"
	tag, err := tx.Exec(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("postgres: copy %s: %w", table, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("postgres: copy %s: %w", table, err)
	}
	return tag.RowsAffected(), nil
}

// columnTypes returns the columns of table and their SQL types.
func columnTypes(ctx context.Context, tx pgx.Tx, table string) (map[string]string, error) {
	rows, err := tx.Query(ctx, `SELECT attname::text, format_type(atttypid, atttypmod)
FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, table)
	if err != nil {
		return nil, err
	}
	types := map[string]string{}
	var name, typ string
	_, err = pgx.ForEachRow(rows, []any{&name, &typ}, func() error {
		types[name] = typ
		return nil
	})
	return types, err
}

// RebuildRollups empties the rollup tables (shape_counts, probe_hours) and
// fills them again from the results with RollupStatements, in one
// transaction that holds off writers of results meanwhile: afterwards they
// hold what RecordRun would have written for every stored result.
func (s *Store) RebuildRollups(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: rebuild rollups: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	stmts := append([]string{
		"LOCK TABLE results IN SHARE MODE",
		"DELETE FROM shape_counts",
		"DELETE FROM probe_hours",
	}, RollupStatements()...)
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("postgres: rebuild rollups: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: rebuild rollups: %w", err)
	}
	return nil
}
