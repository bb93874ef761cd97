package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/hourly"
)

// TestRollupStatementsRebuildTheRollups: runs recorded one by one, from
// three locations, keep shape_counts and probe_hours as they go; emptied, the two tables come
// back the same from RollupStatements, so a bulk fill that runs them has
// the rollups RecordRun would have kept.
func TestRollupStatementsRebuildTheRollups(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := time.Date(2026, 10, 26, 10, 0, 0, 0, time.UTC)
	shapes := []*results.Shape{
		{Fingerprint: "1111111111111111", Canonical: "object(1 keys){results: list<string>}"},
		{Fingerprint: "2222222222222222", Canonical: "object(1 keys){items: list<string>}"},
	}
	outcomes := []results.Outcome{results.Pass, results.ContractError, results.Unavailable}
	for i := range 120 {
		r := results.Result{OperationID: fmt.Sprint("op-", i), Probe: fmt.Sprint("p", i%3),
			StartedAt: base.Add(time.Duration(i) * 7 * time.Minute), Duration: time.Duration(i*37%900) * time.Millisecond,
			Outcome: outcomes[i%3], Consumer: results.ConsumerRef{Name: "c"}, Shape: shapes[i/7%2],
			Location: []string{"", "eu-west", "us-east"}[i/2%3]}
		if r.Outcome != results.Pass {
			r.Error = &results.Error{Code: results.CodeTimeout, Message: "timeout"}
		}
		for a := range i % 3 {
			r.Attempts = append(r.Attempts, results.Attempt{Number: a + 1, StartedAt: r.StartedAt})
		}
		if err := s.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	shapeCounts := func() []string {
		t.Helper()
		rows, err := s.writer.Query(`SELECT probe, hour, fingerprint, runs, last_seen FROM shape_counts ORDER BY 1, 2, 3`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var probe, hour, fp, last string
			var runs int
			if err := rows.Scan(&probe, &hour, &fp, &runs, &last); err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.Join([]string{probe, hour, fp, fmt.Sprint(runs), last}, " "))
		}
		return out
	}
	wantCounts, wantHours := shapeCounts(), readProbeHours(t, s.writer)
	if len(wantCounts) == 0 || len(wantHours) == 0 {
		t.Fatal("the runs left no rollups to compare")
	}

	stmts, err := RollupStatements()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.writer.Exec(`DELETE FROM shape_counts; DELETE FROM probe_hours`); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range stmts {
		if _, err := s.writer.Exec(stmt); err != nil {
			t.Fatalf("%v\n%s", err, stmt)
		}
	}
	if got := shapeCounts(); !slices.Equal(got, wantCounts) {
		t.Errorf("shape_counts rebuilt:\n%v\nwant as recorded:\n%v", got, wantCounts)
	}
	if got := readProbeHours(t, s.writer); !equalHours(got, wantHours) {
		t.Errorf("probe_hours rebuilt:\n%v\nwant as recorded:\n%v", got, wantHours)
	}
}

// TestOperatorQueriesPrepare: every query OperatorQueries names is the
// store's own and prepares on a migrated database.
func TestOperatorQueriesPrepare(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	qs := OperatorQueries()
	if len(qs) < 9 {
		t.Fatalf("%d queries, want the 9 behind stats, history and the probes API", len(qs))
	}
	for _, q := range qs {
		stmt, err := s.reader.Prepare(q.SQL)
		if err != nil {
			t.Errorf("%s: %v", q.Name, err)
			continue
		}
		stmt.Close()
	}
}

// TestBucketSQLMatchesBucket: probeHoursRollup's bucket of a duration is
// hourly.Bucket's, around every power of two.
func TestBucketSQLMatchesBucket(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	query := "SELECT " + bucketSQL("?1")
	for k := range 63 {
		for _, d := range []int64{1<<k - 1, 1 << k, 1<<k + 1, 1<<k + 1<<k/3} {
			if d < 0 {
				continue
			}
			var got int64
			if err := s.reader.QueryRow(query, d).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want := hourly.Bucket(d); got != want {
				t.Errorf("bucket of %d ms: SQL %d, hourly.Bucket %d", d, got, want)
			}
		}
	}
}
