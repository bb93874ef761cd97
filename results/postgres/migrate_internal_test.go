package postgres

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/results"
)

// migrateUpTo migrates the database dsn names to version, as a toolpulse
// that shipped the migrations up to it did.
func migrateUpTo(t *testing.T, dsn string, version int) {
	t.Helper()
	ms, err := loadMigrations(embedded)
	if err != nil {
		t.Fatal(err)
	}
	old := fstest.MapFS{}
	for _, m := range ms[:version] {
		b, err := fs.ReadFile(embedded, m.name)
		if err != nil {
			t.Fatal(err)
		}
		old[m.name] = &fstest.MapFile{Data: b}
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrate(context.Background(), pool, old); err != nil {
		t.Fatal(err)
	}
}

// TestProbeHoursBucketsMigrated: migration 0003 turns each hour's
// duration_buckets object into bucket_ms and bucket_runs, and a run
// recorded after it counts in the same hour's buckets, in place or
// appended.
func TestProbeHoursBucketsMigrated(t *testing.T) {
	dsn := pgtest.Database(t)
	migrateUpTo(t, dsn, 2)
	pgtest.Exec(t, dsn, `INSERT INTO probe_hours (probe, hour, runs, pass, contract_error, unavailable,
    passed_after_retries, retries, duration_buckets)
VALUES ('p', '2026-10-26T13:00Z', 4, 4, 0, 0, 0, 0, '{"130": 1, "20": 3}'),
       ('q', '2026-10-26T13:00Z', 1, 1, 0, 0, 0, 0, '{"7": 1}')`)

	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const buckets = `SELECT probe || ' ' || bucket_ms::text || ' ' || bucket_runs::text FROM probe_hours ORDER BY probe`
	if got, want := pgtest.Exec(t, dsn, buckets), "p {20,130} {3,1}\nq {7} {1}"; got != want {
		t.Errorf("migrated:\n got  %q\n want %q", got, want)
	}

	for i, ms := range []int{131, 25} { // 131 falls in bucket 130
		at, took := time.Date(2026, 10, 26, 13, 30+i, 0, 0, time.UTC), time.Duration(ms)*time.Millisecond
		r := results.Result{OperationID: "op-" + string(rune('a'+i)), Probe: "p", Outcome: results.Pass,
			StartedAt: at, Duration: took, Attempts: []results.Attempt{{Number: 1, StartedAt: at, Duration: took}}}
		if err := s.RecordRun(context.Background(), &results.RunRecord{Result: r}); err != nil {
			t.Fatalf("RecordRun: %v", err)
		}
	}
	if got, want := pgtest.Exec(t, dsn, buckets), "p {20,130,25} {3,2,1}\nq {7} {1}"; got != want {
		t.Errorf("after two runs:\n got  %q\n want %q", got, want)
	}
	// q has runs in probe_hours only: stats lists the probes that have results.
	st, err := s.Stats(context.Background(), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Runs != 6 || st[0].P50 != 20*time.Millisecond || st[0].P99 != 130*time.Millisecond {
		t.Errorf("stats: %+v", st)
	}
}
