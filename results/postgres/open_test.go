package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// TestMigrationsAppliedOnceByConcurrentOpens opens one new database from
// several stores at once, as a fleet starting together does: every Open
// succeeds, each migration is applied once, and reopening changes
// nothing.
func TestMigrationsAppliedOnceByConcurrentOpens(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			s, err := postgres.Open(ctx, dsn)
			if err != nil {
				t.Errorf("concurrent Open: %v", err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	before := pgtest.Exec(t, dsn, `SELECT string_agg(version || ' ' || applied_at, ',' ORDER BY version) FROM schema_migrations`)
	if !strings.HasPrefix(before, "1 ") {
		t.Fatalf("schema_migrations: %q, want version 1 first", before)
	}
	if n := count(t, dsn, `SELECT count(*) - count(DISTINCT version) FROM schema_migrations`); n != 0 {
		t.Errorf("schema_migrations has %d repeated versions", n)
	}
	s := openStore(t, dsn)
	if err := s.Record(ctx, passRun("op-1")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	openStore(t, dsn)
	if after := pgtest.Exec(t, dsn, `SELECT string_agg(version || ' ' || applied_at, ',' ORDER BY version) FROM schema_migrations`); after != before {
		t.Errorf("schema_migrations changed on reopen: got %q, want %q", after, before)
	}
	if n := count(t, dsn, `SELECT count(*) FROM results`); n != 1 {
		t.Errorf("results after reopening: %d, want 1", n)
	}
}

// TestOpenRefusesNewerSchema: a database a newer toolpulse migrated
// further is refused with ErrSchemaTooNew, and left as it was.
func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	if err := s.Record(ctx, passRun("op-1")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	pgtest.Exec(t, dsn, `INSERT INTO schema_migrations (version) SELECT max(version) + 1 FROM schema_migrations UNION ALL SELECT 9999`)
	dump := func() string {
		return pgtest.Exec(t, dsn, `SELECT (SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations)
			|| ' ' || (SELECT count(*) FROM results) || ' ' || (SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace)`)
	}
	before := dump()

	s, err := postgres.Open(ctx, dsn)
	if err == nil {
		s.Close()
		t.Fatal("Open of a database at schema version 9999: got nil error")
	}
	if !errors.Is(err, postgres.ErrSchemaTooNew) {
		t.Errorf("got %v, want ErrSchemaTooNew", err)
	}
	for _, want := range []string{"newer", "9999", "not changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if after := dump(); after != before {
		t.Errorf("refused database changed: got %q, want %q", after, before)
	}
}

// TestOpenRefusesForeignDatabase: a database with tables of its own but
// no schema_migrations is another program's, and is left alone.
func TestOpenRefusesForeignDatabase(t *testing.T) {
	dsn := pgtest.Database(t)
	pgtest.Exec(t, dsn, `CREATE TABLE results (x integer); INSERT INTO results VALUES (42)`)
	s, err := postgres.Open(context.Background(), dsn)
	if err == nil {
		s.Close()
		t.Fatal("Open of another program's database: got nil error")
	}
	if !strings.Contains(err.Error(), "not a toolpulse database") {
		t.Errorf("got %v, want it to say not a toolpulse database", err)
	}
	if got := pgtest.Exec(t, dsn, `SELECT to_regclass('schema_migrations') IS NULL AND (SELECT x FROM results) = 42`); got != "t" {
		t.Errorf("foreign database changed (schema_migrations created or data changed)")
	}
}

// TestOpenErrorsHideThePassword: a DSN's password shows in no error.
func TestOpenErrorsHideThePassword(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{
		"postgres://toolpulse:s3cret-pw@127.0.0.1:1/toolpulse?sslmode=disable&connect_timeout=1",
		"postgres://toolpulse:s3cret-pw@127.0.0.1:1/toolpulse?sslmode=bogus",
		"host=127.0.0.1 port=1 user=toolpulse password=s3cret-pw dbname=toolpulse sslmode=disable connect_timeout=1",
	} {
		s, err := postgres.Open(ctx, dsn)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%q): got nil error", dsn)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("Open error shows the password: %v", err)
		}
	}
	if _, err := postgres.Open(ctx, ""); err == nil || !strings.Contains(err.Error(), "empty DSN") {
		t.Errorf("Open(\"\"): got %v, want an empty DSN error", err)
	}
}
