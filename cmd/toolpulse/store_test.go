package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/pgtest"
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
    request: {url: "${TP_PROVIDER}"}
    consumer: c
    interval: 1s
`

const pgPassword = "pg-pass-5e1d"

// TestCommandsOnPostgres: with storage.driver postgres every command that
// opens the store works on a real Postgres, whether the config or --db
// names it: check and run record, history, stats, silences, baseline reset
// and test --from-db read and write what they do on SQLite. No SQLite
// file is created, and the DSN's password never shows.
func TestCommandsOnPostgres(t *testing.T) {
	db := pgtest.Database(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), pgPassword) // the server trusts loopback; the password must still never show
	dsn := u.String()
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"items":[{"id":1}]}`)
	}))
	t.Cleanup(provider.Close)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "checks.yaml")
	if err := os.WriteFile(cfgPath, []byte(postgresConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	sqliteCfg := filepath.Join(dir, "sqlite.yaml")
	if err := os.WriteFile(sqliteCfg, []byte(strings.Replace(postgresConfig, "  driver: postgres\n  dsn: ${TP_PG_DSN}\n", "  path: results.db\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TP_PG_DSN": dsn, "TP_PROVIDER": provider.URL + "/items"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	toolpulse := func(timeout time.Duration, args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var out, errOut bytes.Buffer
		code := run(ctx, args, lookup, &out, &errOut)
		if strings.Contains(out.String()+errOut.String(), pgPassword) {
			t.Errorf("toolpulse %s shows the DSN's password:\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
		}
		return code, out.String() + errOut.String()
	}
	must := func(args ...string) string {
		t.Helper()
		code, out := toolpulse(time.Minute, args...)
		if code != exitOK {
			t.Fatalf("toolpulse %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		return out
	}
	runs := func() int {
		n, _ := strconv.Atoi(pgtest.Exec(t, db, "SELECT count(*) FROM results WHERE probe = 'p'"))
		return n
	}

	must("-c", cfgPath, "check")
	if n := runs(); n != 1 {
		t.Fatalf("check recorded %d runs in Postgres, want 1", n)
	}
	// The daemon runs until its context ends, then drains and exits 0.
	if code, out := toolpulse(3500*time.Millisecond, "-c", cfgPath, "run"); code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if n := runs(); n < 3 {
		t.Fatalf("run recorded %d runs in all, want at least 3 in 3.5 s at 1 s", n)
	}
	if n := pgtest.Exec(t, db, "SELECT count(*) FROM results WHERE probe = 'p' AND node IS NOT NULL"); n == "0" {
		t.Errorf("the daemon's runs name no node")
	}
	for _, pre := range [][]string{{"-c", cfgPath}, {"-c", sqliteCfg, "--db", dsn}} {
		if out := must(append(pre, "history", "--format", "json")...); strings.Count(out, `"probe":"p"`) != runs() {
			t.Errorf("history by %v lists %d runs, want %d:\n%s", pre, strings.Count(out, `"probe":"p"`), runs(), out)
		}
		if out := must(append(pre, "stats")...); !strings.Contains(out, "p ") {
			t.Errorf("stats by %v does not list p:\n%s", pre, out)
		}
	}
	must("-c", cfgPath, "silence", "add", "--probe", "p", "--for", "1h", "--reason", "maintenance")
	if out := must("-c", cfgPath, "silence", "list"); !strings.Contains(out, "maintenance") {
		t.Errorf("silence list does not show the silence:\n%s", out)
	}
	must("-c", cfgPath, "silence", "expire", "1")
	if code, out := toolpulse(time.Minute, "-c", cfgPath, "silence", "expire", "99"); code != exitUsage {
		t.Errorf("silence expire of an unknown id: exit %d, want %d (usage)\n%s", code, exitUsage, out)
	}
	must("-c", cfgPath, "baseline", "reset", "--probe", "p")
	// The consumer checks nothing of an item: mutating the answer recorded
	// in Postgres finds blind spots, which is what says it was read.
	if code, out := toolpulse(time.Minute, "-c", cfgPath, "test", "--mutate", "--from-db"); code != exitContractError || !strings.Contains(out, "[db: p]") {
		t.Errorf("test --mutate --from-db: exit %d, want %d with the recorded answer mutated:\n%s", code, exitContractError, out)
	}

	if matches, _ := filepath.Glob(filepath.Join(dir, "*.db")); len(matches) > 0 {
		t.Errorf("a SQLite file was created: %v", matches)
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
