package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/internal/pgtest"
)

// TestRunPostgresSmoke runs the run mode small with --store postgres: the
// daemon writes into a fresh database on the server, the runs are counted
// there, the server's CPU is measured, and the database is dropped at the
// end. It asserts that the harness completes and that its numbers are
// consistent, never how fast anything was.
func TestRunPostgresSmoke(t *testing.T) {
	requireSQLiteShell(t)
	server := pgtest.Database(t)
	bin := testToolpulse(t)
	dir := t.TempDir()
	jsonPath, keepDir := filepath.Join(dir, "run.json"), filepath.Join(dir, "keep")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--store", "postgres", "--dsn", server,
		"--probes", "20", "--interval", "500ms", "--jitter", "400ms", "--warmup", "1s", "--duration", "5s",
		"--mix", "pass=70,contract_error=15,unavailable=15", "--alert-probes", "2", "--scrape-every", "1s",
		"--daemon-env", "GOMEMLIMIT=1GiB", "--toolpulse", bin, "--json", jsonPath, "--keep", keepDir,
	}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	for _, want := range []string{"runs completed", "Postgres CPU", "Postgres growth", "start lag"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the table does not mention %q:\n%s", want, stdout.String())
		}
	}
	rep := readReport[runReport](t, jsonPath)
	checkRunReport(t, &rep)
	if rep.Setup.Store != "postgres" {
		t.Errorf("setup.store = %q", rep.Setup.Store)
	}
	if rep.CPU.PostgresSeconds <= 0 || rep.CPU.PostgresMicrosPerOp <= 0 {
		t.Errorf("Postgres CPU %.3f s, %.0f µs per run: the server's processes were not measured", rep.CPU.PostgresSeconds, rep.CPU.PostgresMicrosPerOp)
	}

	cfg, err := os.ReadFile(filepath.Join(keepDir, "checks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "storage: {driver: postgres, dsn: ") {
		t.Errorf("the daemon's config does not name Postgres:\n%s", cfg)
	}
	if _, err := os.Stat(filepath.Join(keepDir, "toolpulse.db")); err == nil {
		t.Error("the daemon wrote a SQLite database")
	}
	if got := pgtest.Exec(t, server, "SELECT count(*) FROM pg_database WHERE datname LIKE 'toolpulse_bench_%'"); got != "0" {
		t.Errorf("%s databases of the run are left on the server", got)
	}
}
