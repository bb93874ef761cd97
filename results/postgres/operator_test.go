package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// rollups dumps shape_counts and probe_hours, one sorted line per row.
func rollups(t *testing.T, dsn string) []string {
	t.Helper()
	out := pgtest.Exec(t, dsn, `SELECT line FROM (
    SELECT 'shape_counts ' || (to_jsonb(c))::text AS line FROM shape_counts c
    UNION ALL SELECT 'probe_hours ' || (to_jsonb(h))::text FROM probe_hours h
) x ORDER BY line`)
	return strings.Split(out, "\n")
}

// TestRollupStatementsMatchRecordRun records runs of many durations,
// outcomes, attempts, hours and locations, then empties the rollup tables and fills
// them again with RollupStatements: they must hold what RecordRun wrote.
func TestRollupStatementsMatchRecordRun(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	durations := []int{0, 1, 127, 128, 129, 255, 256, 1000, 1023, 1024, 65_535, 1 << 20, 3_600_000}
	n := 0
	for h := range 3 {
		for i, ms := range durations {
			for _, fail := range []bool{false, true} {
				n++
				rec := runWithID(fmt.Sprintf("op-%d", n), !fail)
				r := &rec.Result
				r.Probe = []string{"a", "b"}[i%2]
				r.Location = []string{"", "eu-west", "us-east"}[n%3]
				rec.AlertState, rec.Alerts = nil, nil
				r.StartedAt = t0.Add(time.Duration(h)*time.Hour + time.Duration(i)*time.Minute)
				r.Duration = time.Duration(ms) * time.Millisecond
				if i%3 == 0 {
					r.Attempts = append(r.Attempts, results.Attempt{Number: 2, StartedAt: r.StartedAt, Duration: time.Millisecond})
				}
				if err := s.RecordRun(ctx, rec); err != nil {
					t.Fatalf("RecordRun: %v", err)
				}
			}
		}
	}
	want := rollups(t, dsn)
	pgtest.Exec(t, dsn, `DELETE FROM shape_counts; DELETE FROM probe_hours`)
	for _, stmt := range postgres.RollupStatements() {
		pgtest.Exec(t, dsn, stmt)
	}
	if got := rollups(t, dsn); !slices.Equal(got, want) {
		t.Errorf("rollups filled by RollupStatements:\n got  %q\n want %q", got, want)
	}
}

// TestRollupStatementsWriteHourByHour: RollupStatements write
// probe_hours an hour at a time, as RecordRun leaves it, so that the rows
// of a window of hours lie together in the table.
func TestRollupStatementsWriteHourByHour(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	n := 0
	for _, probe := range []string{"c", "a", "b"} {
		for h := range 4 {
			n++
			rec := runWithID(fmt.Sprintf("op-%d", n), true)
			rec.Result.Probe = probe
			rec.Result.StartedAt = t0.Add(time.Duration(h) * time.Hour)
			rec.AlertState, rec.Alerts = nil, nil
			if err := s.RecordRun(ctx, rec); err != nil {
				t.Fatalf("RecordRun: %v", err)
			}
		}
	}
	pgtest.Exec(t, dsn, `DELETE FROM shape_counts; DELETE FROM probe_hours`)
	for _, stmt := range postgres.RollupStatements() {
		pgtest.Exec(t, dsn, stmt)
	}
	// Deleted rows leave their space until a vacuum: the new rows follow
	// them in the order they were written.
	got := strings.Split(pgtest.Exec(t, dsn, `SELECT to_char(hour AT TIME ZONE 'UTC', 'HH24') || ' ' || probe
FROM probe_hours ORDER BY ctid`), "\n")
	want := slices.Clone(got)
	slices.Sort(want)
	if len(got) != 12 || !slices.Equal(got, want) {
		t.Errorf("probe_hours in the order written: %q, want by hour then probe", got)
	}
}

// TestOperatorQueriesPlan: every operator query is valid SQL on the
// schema, so that toolpulse-bench can EXPLAIN it.
func TestOperatorQueriesPlan(t *testing.T) {
	_, dsn := newStore(t)
	for _, q := range postgres.OperatorQueries() {
		pgtest.Exec(t, dsn, "PREPARE q AS "+q.SQL+"; DEALLOCATE q")
	}
}
