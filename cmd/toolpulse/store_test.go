package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// sqliteOf is the SQLite store under a stack, for what tests read beyond
// the store interface.
func sqliteOf(t *testing.T, s *stack) *sqlite.Store {
	t.Helper()
	st, ok := s.store.(*sqlite.Store)
	if !ok {
		t.Fatalf("the stack's store is a %T, want *sqlite.Store", s.store)
	}
	return st
}

const postgresConfig = `version: 1
storage:
  driver: postgres
  dsn: ${TP_PG_DSN}
server:
  listen: ""
consumers:
  - {name: c, select: response.items}
probes:
  - name: p
    request: {url: "http://127.0.0.1:1/"}
    consumer: c
`

const pgPassword = "pg-pass-5e1d"

// TestPostgresNotBuiltYet: every command that opens the store, whether
// the config or --db names Postgres, stops with one clear answer (exit
// 78), creates no SQLite file, and never shows the DSN's password;
// validate accepts the config.
func TestPostgresNotBuiltYet(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "checks.yaml")
	if err := os.WriteFile(cfgPath, []byte(postgresConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	sqliteCfg := filepath.Join(dir, "sqlite.yaml")
	if err := os.WriteFile(sqliteCfg, []byte(strings.Replace(postgresConfig, "  driver: postgres\n  dsn: ${TP_PG_DSN}\n", "  path: results.db\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dsn := "postgres://toolpulse:" + pgPassword + "@127.0.0.1:5432/toolpulse?sslmode=disable"
	env := map[string]string{"TP_PG_DSN": dsn}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	commands := [][]string{
		{"run"}, {"check"}, {"history"}, {"stats"}, {"silence", "list"},
		{"silence", "add", "--probe", "p", "--for", "1h", "--reason", "r"}, {"silence", "expire", "1"},
		{"baseline", "reset", "--probe", "p"}, {"test", "--mutate", "--from-db"},
	}
	for _, args := range commands {
		for _, how := range []struct {
			name string
			pre  []string
		}{
			{"config", []string{"-c", cfgPath}},
			{"--db", []string{"-c", sqliteCfg, "--db", dsn}},
		} {
			t.Run(strings.Join(args, " ")+" by "+how.name, func(t *testing.T) {
				// run would go on until the context ends if it did start.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var out, errOut bytes.Buffer
				code := run(ctx, append(append([]string{}, how.pre...), args...), lookup, &out, &errOut)
				if code != exitConfig || !strings.Contains(errOut.String(), "storage.driver postgres: not built into this toolpulse yet") {
					t.Errorf("exit %d, stderr %q; want %d and the driver named", code, errOut.String(), exitConfig)
				}
				if strings.Contains(out.String()+errOut.String(), pgPassword) {
					t.Errorf("the output shows the DSN's password:\n%s%s", out.String(), errOut.String())
				}
			})
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*.db")); len(matches) > 0 {
		t.Errorf("a SQLite file was created: %v", matches)
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-c", cfgPath, "validate"}, lookup, &out, &errOut); code != exitOK {
		t.Errorf("validate: exit %d, stderr %q", code, errOut.String())
	}
}

// TestDBFlagStorage: --db is a SQLite file unless it is a postgres URL,
// and keeps the config's retention either way.
func TestDBFlagStorage(t *testing.T) {
	base := checks.Storage{Driver: checks.DriverSQLite, Path: "/var/lib/toolpulse/toolpulse.db", Retention: 48}
	tests := []struct {
		db   string
		want checks.Storage
	}{
		{"other.db", checks.Storage{Driver: checks.DriverSQLite, Path: "other.db", Retention: 48}},
		{"/data/postgres/toolpulse.db", checks.Storage{Driver: checks.DriverSQLite, Path: "/data/postgres/toolpulse.db", Retention: 48}},
		{"postgres://u:p@h/db", checks.Storage{Driver: checks.DriverPostgres, DSN: "postgres://u:p@h/db", Retention: 48}},
		{"PostgreSQL://h/db", checks.Storage{Driver: checks.DriverPostgres, DSN: "PostgreSQL://h/db", Retention: 48}},
	}
	for _, tt := range tests {
		if got := dbStorage(tt.db, base); got != tt.want {
			t.Errorf("dbStorage(%q) = %+v, want %+v", tt.db, got, tt.want)
		}
	}
}
