package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results/sqlite"
)

const (
	smokeResults = 20_000
	smokeProbes  = 20
)

// TestReadSmoke runs the whole read mode on a tiny database: generation,
// every measurement and --explain, then checks the JSON report and the
// database. It times nothing: timings on a shared machine prove nothing.
func TestReadSmoke(t *testing.T) {
	requireSQLiteShell(t)
	dir := t.TempDir()
	db, report := filepath.Join(dir, "bench.db"), filepath.Join(dir, "read.json")
	opts, err := parseReadFlags([]string{
		"--db", db, "--results", strconv.Itoa(smokeResults), "--probes", strconv.Itoa(smokeProbes),
		"--repeat", "1", "--explain", "--json", report,
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if raceBuild {
		// Link toolpulse from the race-enabled packages this test was
		// built from, rather than compile SQLite once more without -race.
		opts.buildFlags = []string{"-race"}
	}
	var stdout, stderr bytes.Buffer
	if err := read(t.Context(), opts, &stdout, &stderr); err != nil {
		t.Fatalf("read: %v\nstderr:\n%s", err, stderr.String())
	}
	for _, want := range []string{"toolpulse stats --since 24h", "GET /api/v1/probes", "QUERY PLAN"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the table does not mention %q:\n%s", want, stdout.String())
		}
	}
	checkReport(t, report)
	if got := shellInt(t, db, "SELECT count(*) FROM results"); got != smokeResults {
		t.Errorf("results: %d rows, want %d", got, smokeResults)
	}
	checkData(t, db)
	checkReuse(t, opts)
}

// requireSQLiteShell skips the test without the sqlite3 shell, except in
// CI, which must have it.
func requireSQLiteShell(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("the sqlite3 shell is not installed")
		}
		t.Fatalf("CI is set, and the sqlite3 shell is missing: %v", err)
	}
}

// checkReport checks that the JSON report has every field, with values
// that fit the smoke run.
func checkReport(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	requireKeys(t, "report", rep, "mode", "started_at", "machine", "go_version", "num_cpu",
		"sqlite3_shell_version", "toolpulse_sqlite_driver", "database", "repeat", "warm_up",
		"history_probe", "timings", "plans")
	requireKeys(t, "machine", object(t, rep["machine"]), "hostname", "os", "arch", "cpu_model")
	dbInfo := object(t, rep["database"])
	requireKeys(t, "database", dbInfo, "path", "rows", "attempts", "size_bytes", "probes", "days",
		"first_started_at", "last_started_at", "reused", "generation_ms")
	for key, want := range map[string]float64{"rows": smokeResults, "probes": smokeProbes, "days": 7} {
		if got := dbInfo[key]; got != want {
			t.Errorf("database.%s = %v, want %v", key, got, want)
		}
	}
	for _, key := range []string{"size_bytes", "generation_ms", "attempts"} {
		if v, _ := dbInfo[key].(float64); v <= 0 {
			t.Errorf("database.%s = %v, want > 0", key, dbInfo[key])
		}
	}
	if rep["num_cpu"].(float64) < 1 {
		t.Errorf("num_cpu = %v", rep["num_cpu"])
	}

	timings, _ := rep["timings"].([]any)
	names := map[string]bool{}
	for _, v := range timings {
		tm := object(t, v)
		requireKeys(t, "timing", tm, "name", "kind", "runs", "min_ms", "median_ms", "max_ms", "note")
		name, _ := tm["name"].(string)
		names[name] = true
		if tm["runs"] == 0.0 {
			if !strings.HasPrefix(tm["note"].(string), "n/a") {
				t.Errorf("%s: no runs, and not n/a: %v", name, tm)
			}
			continue
		}
		lo, mid, hi := tm["min_ms"].(float64), tm["median_ms"].(float64), tm["max_ms"].(float64)
		if !(0 < lo && lo <= mid && mid <= hi) {
			t.Errorf("%s: min %v, median %v, max %v", name, lo, mid, hi)
		}
	}
	probe := rep["history_probe"].(string)
	for _, want := range []string{
		"toolpulse stats --since 24h --format json",
		"toolpulse history --probe " + probe + " --limit 100 --format json",
		"toolpulse stats on an empty database (start-up)",
		"Store.Stats, last 24h",
		"Store.History, " + probe + ", limit 100",
		"toolpulse run: start until /healthz answers 200",
		"GET /api/v1/probes",
		"GET /",
		"GET /probes/" + probe,
	} {
		if !names[want] {
			t.Errorf("no timing %q in %v", want, names)
		}
	}

	queries := sqlite.OperatorQueries()
	plans, _ := rep["plans"].([]any)
	if len(plans) != len(queries) {
		t.Errorf("%d plans, want one per query of the store's (%d)", len(plans), len(queries))
	}
	for _, v := range plans {
		p := object(t, v)
		requireKeys(t, "plan", p, "name", "sql", "plan")
		if text, _ := p["plan"].(string); !strings.Contains(text, "SEARCH") {
			t.Errorf("plan of %v searches no index:\n%s", p["name"], text)
		}
	}
}

func requireKeys(t *testing.T, what string, m map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("%s has no %q", what, k)
		}
	}
}

func object(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not an object", v)
	}
	return m
}

// checkData checks that the generated tables agree with one another and
// that the mix of outcomes is the one asked for.
func checkData(t *testing.T, db string) {
	t.Helper()
	for _, c := range []struct {
		name  string
		query string
		want  int64
	}{
		{"attempts rows of every result", "SELECT (SELECT sum(attempts) FROM results) - (SELECT count(*) FROM attempts)", 0},
		{"results without an attempt 1", "SELECT count(*) FROM results r WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.operation_id = r.operation_id AND a.number = 1)", 0},
		{"shape_counts against results", "SELECT (SELECT count(*) FROM results WHERE shape_fingerprint IS NOT NULL) - (SELECT sum(runs) FROM shape_counts)", 0},
		{"shapes.seen_count against shape_counts", "SELECT (SELECT sum(seen_count) FROM shapes) - (SELECT sum(runs) FROM shape_counts)", 0},
		{"fingerprints without a shape", "SELECT count(*) FROM shape_counts WHERE fingerprint NOT IN (SELECT fingerprint FROM shapes)", 0},
		{"drifts", "SELECT count(*) FROM drifts", 3 * smokeProbes},
		{"drifts without their run", "SELECT count(*) FROM drifts d JOIN results r USING (operation_id) WHERE r.shape_fingerprint <> d.current OR r.probe <> d.probe", 0},
		{"shapes", "SELECT count(*) FROM shapes", 4},
		{"results per probe", "SELECT count(DISTINCT n) FROM (SELECT count(*) AS n FROM results GROUP BY probe)", 1},
		{"failures without a message", "SELECT count(*) FROM results WHERE outcome <> 'pass' AND message IS NULL", 0},
		{"foreign keys", "SELECT count(*) FROM pragma_foreign_key_check", 0},
		// fill.sql fills the rollups with the store's own statements
		// (sqlite.RollupStatements): these catch them not matching what
		// the results hold.
		{"probe_hours runs against results", "SELECT (SELECT count(*) FROM results) - (SELECT sum(runs) FROM probe_hours)", 0},
		{"probe_hours per hour against results", "SELECT count(*) FROM (SELECT probe, substr(started_at, 1, 13), count(*) FROM results GROUP BY 1, 2 EXCEPT SELECT probe, hour, runs FROM probe_hours)", 0},
		{"duration buckets against runs", "SELECT count(*) FROM probe_hours WHERE runs <> (SELECT sum(value) FROM json_each(duration_buckets))", 0},
	} {
		if got := shellInt(t, db, c.query); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if got := shellText(t, db, "PRAGMA integrity_check"); got != "ok" {
		t.Errorf("integrity_check: %s", got)
	}
	if got := shellText(t, db, "PRAGMA journal_mode"); got != "wal" {
		t.Errorf("journal_mode %s, want wal as toolpulse keeps it", got)
	}
	// Loose bounds: the mix is drawn from a hash of each row's position.
	for _, c := range []struct {
		query  string
		lo, hi float64
	}{
		{"SELECT 100.0 * sum(outcome = 'pass') / count(*) FROM results", 94, 98},
		{"SELECT 100.0 * sum(outcome = 'contract_error') / count(*) FROM results", 2, 4.5},
		{"SELECT 100.0 * sum(outcome = 'unavailable') / count(*) FROM results", 0.5, 1.5},
		{"SELECT 100.0 * sum(attempts = 2) / count(*) FROM results WHERE outcome = 'pass'", 4, 6},
	} {
		got, err := strconv.ParseFloat(shellText(t, db, c.query), 64)
		if err != nil || got < c.lo || got > c.hi {
			t.Errorf("%s: %v (%v), want %v to %v", c.query, got, err, c.lo, c.hi)
		}
	}
}

// checkReuse checks that an existing database is measured only with
// --reuse, and then as it is.
func checkReuse(t *testing.T, opts readOptions) {
	t.Helper()
	prog := newProgress(io.Discard)
	var ue *usageError
	if err := prepareDatabase(t.Context(), opts, &report{}, prog); !errors.As(err, &ue) {
		t.Errorf("an existing database without --reuse: %v, want a usage error", err)
	}
	opts.reuse = true
	var rep report
	if err := prepareDatabase(t.Context(), opts, &rep, prog); err != nil {
		t.Fatalf("--reuse: %v", err)
	}
	if !rep.Database.Reused || rep.Database.Rows != smokeResults || len(rep.Database.Probes) != smokeProbes {
		t.Errorf("--reuse: %+v", rep.Database)
	}
}

func shellText(t *testing.T, db, query string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := querySQLite(ctx, db, []string{"-list", "-noheader"}, query+";")
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return strings.TrimSpace(out)
}

func shellInt(t *testing.T, db, query string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(shellText(t, db, query), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestParseReadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--repeat", "0"},
		{"--probes", "0"},
		{"--results", "99", "--probes", "10"},
		{"--days", "0"},
		{"extra"},
		{"--no-such-flag"},
	} {
		_, err := parseReadFlags(args, io.Discard)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	o, err := parseReadFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.data != (dataSpec{Results: 10_000_000, Probes: 1000, Days: 7}) || o.repeat != 5 {
		t.Errorf("defaults: %+v", o)
	}
}

func TestRunUnknownMode(t *testing.T) {
	if code := run(t.Context(), []string{"write"}, io.Discard, io.Discard); code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	if code := run(t.Context(), nil, io.Discard, io.Discard); code != exitUsage {
		t.Errorf("no mode: exit %d, want %d", code, exitUsage)
	}
}

func TestNewTiming(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tm := newTiming("x", "process", []time.Duration{ms(5), ms(1), ms(3), ms(9)}, "")
	if *tm.MinMS != 1 || *tm.MedianMS != 4 || *tm.MaxMS != 9 || tm.Runs != 4 {
		t.Errorf("got %v %v %v over %d runs", *tm.MinMS, *tm.MedianMS, *tm.MaxMS, tm.Runs)
	}
	if na := newTiming("x", "http", nil, "n/a"); na.MinMS != nil || na.Runs != 0 {
		t.Errorf("n/a timing: %+v", na)
	}
}
