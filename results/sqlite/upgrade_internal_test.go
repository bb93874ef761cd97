package sqlite

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// TestUpgradeFrom0001BackfillsShapeCounts fills a database the way the
// release that shipped only 0001 did, opens it with this release, and
// checks that migration 0002 counted every shaped run into shape_counts,
// so that drift detection keeps its baseline across the upgrade.
func TestUpgradeFrom0001BackfillsShapeCounts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	initSQL, err := fs.ReadFile(embedded, "0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	old := writerDB(t, path, writeParams)
	if err := migrate(ctx, old, fstest.MapFS{"0001_init.sql": {Data: initSQL}}); err != nil {
		t.Fatal(err)
	}

	type bucket struct{ probe, hour, fingerprint string }
	type counted struct {
		runs     int64
		lastSeen string
	}
	want := map[bucket]counted{}
	base := time.Date(2026, 10, 26, 10, 0, 0, 0, time.UTC)
	tx, err := old.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, fp := range []string{"f1", "f2", "f3"} {
		if _, err := tx.Exec(`INSERT INTO shapes VALUES (?, ?, ?, ?, 1)`, fp, "shape "+fp, "2026-10-26T10:00:00.000Z", "2026-10-26T10:00:00.000Z"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 90 {
		at := base.Add(time.Duration(i) * 3 * time.Minute) // 4.5 hours
		probe, fp := "p1", "f1"
		switch {
		case i%3 == 0:
			probe, fp = "p2", "f3"
		case i%5 == 0:
			fp = "f2"
		}
		var shape any = fp
		if i%7 == 0 {
			shape = nil // no JSON body
		}
		_, err := tx.Exec(`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome,
			attempts, consumer, consumer_version, rule_hash, shape_fingerprint)
			VALUES (?, ?, ?, 10, 'pass', 1, 'c', '1', 'h', ?)`,
			fmt.Sprint("op-", i), probe, results.FormatTime(at), shape)
		if err != nil {
			t.Fatal(err)
		}
		if shape != nil {
			b := bucket{probe, at.Format("2006-01-02T15"), fp}
			c := want[b]
			c.runs++
			c.lastSeen = results.FormatTime(at)
			want[b] = c
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, err := loadMigrations(embedded)
	if err != nil {
		t.Fatal(err)
	}
	var version int
	if err := s.reader.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil || version != len(ms) {
		t.Fatalf("schema version after upgrade: got %d, %v, want %d", version, err, len(ms))
	}
	// The views and the reads behind them work on the upgraded rows.
	latest, err := s.Latest(ctx)
	if err != nil || len(latest) != 2 || latest[0].Probe != "p1" || latest[1].Probe != "p2" {
		t.Errorf("Latest after upgrade: %d results, %v, want one each of p1 and p2", len(latest), err)
	}
	if st, err := s.Stats(ctx, time.Time{}, time.Time{}); err != nil || len(st) != 2 || st[0].Runs+st[1].Runs != 90 {
		t.Errorf("Stats after upgrade: %+v, %v, want 90 runs of p1 and p2", st, err)
	}

	rows, err := s.reader.Query(`SELECT probe, hour, fingerprint, runs, last_seen FROM shape_counts`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[bucket]counted{}
	for rows.Next() {
		var b bucket
		var c counted
		if err := rows.Scan(&b.probe, &b.hour, &b.fingerprint, &c.runs, &c.lastSeen); err != nil {
			t.Fatal(err)
		}
		got[b] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if !maps.Equal(got, want) {
		t.Errorf("shape_counts after upgrade:\n got  %v\n want %v", got, want)
	}

	// New runs add to the same buckets.
	r := results.Result{OperationID: "op-new", Probe: "p2", StartedAt: base.Add(time.Hour), Outcome: results.Pass,
		Shape: &results.Shape{Fingerprint: "f3", Canonical: "shape f3"}, Consumer: results.ConsumerRef{Name: "c"}}
	if err := s.Record(ctx, r); err != nil {
		t.Fatal(err)
	}
	hour := r.StartedAt.Format("2006-01-02T15")
	var runs int64
	if err := s.reader.QueryRow(`SELECT runs FROM shape_counts WHERE probe = 'p2' AND hour = ? AND fingerprint = 'f3'`, hour).Scan(&runs); err != nil || runs != want[bucket{"p2", hour, "f3"}].runs+1 {
		t.Errorf("shape_counts of p2 at %s after a new run: got %d runs, %v, want %d", hour, runs, err, want[bucket{"p2", hour, "f3"}].runs+1)
	}
}

// TestDaemonQueriesUseIndexes checks that the queries the daemon runs on
// every operation or delivery read an index, never the results table or a
// full scan of a table that grows with history.
func TestDaemonQueriesUseIndexes(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		name, query string
		args        []any
		want        []string // each must appear in the plan
	}{
		{"DueAlerts", dueAlerts, []any{"2026-10-26T13:00:00.000Z", 10},
			[]string{"USING INDEX alerts_pending", "SEARCH d USING INTEGER PRIMARY KEY"}},
		{"NextAlertDue", nextAlertDue, nil, []string{"USING INDEX alerts_pending"}},
		// Prune, per hour its batch deleted runs of.
		{"probe hour, read", selectProbeHour, []any{"p", "2026-10-26T13", "default"},
			[]string{"SEARCH probe_hours USING PRIMARY KEY (probe=? AND hour=? AND location=?)"}},
		{"probe hour, update", updateProbeHour, []any{1, 1, 0, 0, 0, 0, "{}", "p", "2026-10-26T13", "default"},
			[]string{"SEARCH probe_hours USING PRIMARY KEY (probe=? AND hour=? AND location=?)"}},
		{"probe hour, delete", deleteProbeHour, []any{"p", "2026-10-26T13", "default"},
			[]string{"SEARCH probe_hours USING PRIMARY KEY (probe=? AND hour=? AND location=?)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := s.reader.Query("EXPLAIN QUERY PLAN "+tt.query, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, notused int
				var detail string
				if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			text := strings.Join(plan, "; ")
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("plan %q, want it to contain %q", text, w)
				}
			}
			for _, step := range plan {
				if strings.Contains(step, "results") || (strings.HasPrefix(step, "SCAN") && !strings.Contains(step, "USING")) {
					t.Errorf("plan %q: step %q reads results or scans a table", text, step)
				}
			}
		})
	}
}
