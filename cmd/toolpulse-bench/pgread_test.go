package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/internal/pgtest"
)

// TestReadPostgresSmoke runs the read mode with --store postgres on a tiny
// database: the SQLite fill, its copy into Postgres with the rollups, and
// every timing, then checks that Postgres holds the same results, attempts
// and drifts as the SQLite file, and rollups that count every result.
func TestReadPostgresSmoke(t *testing.T) {
	requireSQLiteShell(t)
	dsn := pgtest.Database(t)
	dir := t.TempDir()
	db, reportPath := filepath.Join(dir, "bench.db"), filepath.Join(dir, "read.json")
	opts, err := parseReadFlags([]string{
		"--store", "postgres", "--dsn", dsn, "--db", db,
		"--results", strconv.Itoa(smokeResults), "--probes", strconv.Itoa(smokeProbes),
		"--repeat", "1", "--json", reportPath,
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if raceBuild {
		opts.buildFlags = []string{"-race"}
	}
	var stdout, stderr bytes.Buffer
	if err := read(t.Context(), opts, &stdout, &stderr); err != nil {
		t.Fatalf("read: %v\nstderr:\n%s", err, stderr.String())
	}
	for _, want := range []string{"toolpulse stats --since 24h --format json (postgres)", "Store.History"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the table does not mention %q:\n%s", want, stdout.String())
		}
	}

	for _, q := range []string{
		"SELECT count(*) FROM results",
		"SELECT count(*) FROM attempts",
		"SELECT count(*) FROM drifts",
		"SELECT count(*) FROM shapes",
		"SELECT count(*) FROM results WHERE outcome = 'pass'",
	} {
		want := shellInt(t, db, q)
		if got := pgtest.Exec(t, dsn, q); got != strconv.FormatInt(want, 10) {
			t.Errorf("%s: postgres %s, sqlite %d", q, got, want)
		}
	}
	if got := pgtest.Exec(t, dsn, "SELECT sum(runs) FROM probe_hours"); got != strconv.Itoa(smokeResults) {
		t.Errorf("probe_hours counts %s runs, want %d", got, smokeResults)
	}
	if got := pgtest.Exec(t, dsn, "SELECT sum(runs) FROM shape_counts"); got != pgtest.Exec(t, dsn,
		"SELECT count(*) FROM results WHERE shape_fingerprint IS NOT NULL") {
		t.Errorf("shape_counts counts %s runs", got)
	}
	// The indexes dropped for the copy are all back.
	if got := pgtest.Exec(t, dsn, "SELECT string_agg(indexname, ' ' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'results'"); got !=
		"results_operation_id_key results_pkey results_probe_location_started results_probe_outcome_started results_probe_started_covering results_shape results_started results_tool" {
		t.Errorf("the indexes of results: %s", got)
	}

	rep := readReport[report](t, reportPath)
	if rep.Database.Rows != smokeResults || rep.Database.ProbeCount != smokeProbes || len(rep.Timings) != 4 {
		t.Errorf("report: %d rows, %d probes, %d timings", rep.Database.Rows, rep.Database.ProbeCount, len(rep.Timings))
	}
	// A database with results is measured only with --reuse.
	if err := read(t.Context(), opts, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--reuse") {
		t.Errorf("a second fill: %v, want a refusal naming --reuse", err)
	}
}
