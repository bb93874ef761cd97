package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results/postgres"
)

// The read mode on Postgres generates the SQLite database as it always
// does (--db), then copies its rows into the Postgres database --dsn names,
// whose schema toolpulse's own migrations created, and fills the rollups
// with postgres.RollupStatements: both stores then hold the same results,
// and their timings compare. psql does the copying (\copy FROM PROGRAM
// sqlite3), so that the Postgres driver keeps one owner, the store.

// copiedTables are the tables the fill writes besides the rollups, in the
// order their references need, each with the columns fill.sql sets.
var copiedTables = []struct{ name, columns string }{
	{"shapes", "fingerprint, canonical, first_seen, last_seen, seen_count"},
	{"results", "id, operation_id, probe, started_at, duration_ms, outcome, code, message, " +
		"retryable, attempts, http_status, selected_count, validated_count, shape_fingerprint, " +
		"consumer, consumer_version, rule_hash, response_sample"},
	{"attempts", "operation_id, number, started_at, duration_ms, http_status, code, message, wait_ms"},
	{"drifts", "probe, operation_id, detected_at, baseline, current, diff"},
}

// readPostgres is the read mode with --store postgres.
func readPostgres(ctx context.Context, opts readOptions, stdout, stderr io.Writer) error {
	if opts.explain {
		return &usageError{errors.New("--explain explains the SQLite plans only; use EXPLAIN in psql on postgres.OperatorQueries")}
	}
	prog := newProgress(stderr)
	shell, err := sqliteVersion(ctx)
	if err != nil {
		return fmt.Errorf("the sqlite3 shell is required (Debian package sqlite3): %w", err)
	}
	if _, err := exec.LookPath("psql"); err != nil {
		return fmt.Errorf("psql is required (Debian package postgresql-client): %w", err)
	}
	tmp, err := os.MkdirTemp("", "toolpulse-bench-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	rep := newReport(opts, shell)
	if err := preparePostgres(ctx, opts, rep, prog); err != nil {
		return err
	}
	bin, err := toolpulseBinary(ctx, opts, tmp, prog)
	if err != nil {
		return err
	}
	rep.ToolpulseSQLite = linkedSQLite(bin)
	probe := rep.Database.Probes[(len(rep.Database.Probes)-1)/2]
	rep.HistoryProbe = probe

	ts, err := postgresProcessTimings(ctx, bin, opts.dsn, probe, opts.repeat, prog)
	if err != nil {
		return err
	}
	rep.Timings = append(rep.Timings, ts...)

	store, err := postgres.Open(ctx, opts.dsn)
	if err != nil {
		return fmt.Errorf("open the store in process: %w", err)
	}
	ts, err = storeTimings(ctx, store, probe, opts.repeat, prog)
	if cerr := store.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	rep.Timings = append(rep.Timings, ts...)

	prog.printf("done")
	if err := writeTable(stdout, rep); err != nil {
		return err
	}
	if opts.jsonPath != "" {
		return writeJSONFile(opts.jsonPath, rep)
	}
	return nil
}

// preparePostgres migrates the database, fills it from the SQLite database
// at --db (generated unless it exists and --reuse is given) unless it
// already holds results and --reuse is given, and describes it in rep.
func preparePostgres(ctx context.Context, opts readOptions, rep *report, prog *progress) error {
	store, err := postgres.Open(ctx, opts.dsn)
	if err != nil {
		return fmt.Errorf("create the schema: %w", err)
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("create the schema: %w", err)
	}
	out, err := psql(ctx, opts.dsn, "SELECT EXISTS (SELECT 1 FROM results);")
	if err != nil {
		return err
	}
	switch {
	case out == "t" && !opts.reuse:
		return &usageError{fmt.Errorf("%s holds results: pass --reuse to measure it as it is, or give an empty database", redactDSN(opts.dsn))}
	case out == "t":
		prog.printf("reusing %s", redactDSN(opts.dsn))
		rep.Database.Reused = true
	default:
		start := time.Now()
		source := readOptions{db: opts.db, data: opts.data, reuse: opts.reuse}
		srcRep := &report{}
		if err := prepareDatabase(ctx, source, srcRep, prog); err != nil {
			return err
		}
		if err := copyToPostgres(ctx, opts.db, opts.dsn, prog); err != nil {
			return err
		}
		rep.Database.GenerationMS = ms(time.Since(start))
		rep.Database.Days = opts.data.Days
	}
	prog.printf("reading what %s holds", redactDSN(opts.dsn))
	if err := describePostgres(ctx, opts.dsn, &rep.Database); err != nil {
		return err
	}
	if rep.Database.Rows == 0 || len(rep.Database.Probes) == 0 {
		return fmt.Errorf("%s holds no results", redactDSN(opts.dsn))
	}
	return nil
}

// copyToPostgres copies the generated rows of the SQLite database at db
// into the empty Postgres database at dsn in one transaction: the secondary
// indexes of results and attempts are dropped first and built again after
// (from the definitions the migrations made), as fill.sql does, then the
// rollups are filled and the tables analyzed.
func copyToPostgres(ctx context.Context, db, dsn string, prog *progress) error {
	if strings.ContainsAny(db, `'"\`) {
		return fmt.Errorf("%s: the SQLite path may not hold quotes or backslashes", db)
	}
	var b strings.Builder
	b.WriteString(`\set ON_ERROR_STOP on
BEGIN;
-- Every parent row is copied before its children; checking some 20 million
-- references row by row would only cost time (the role must be allowed to
-- set this, as the owner of a throwaway server is).
SET LOCAL session_replication_role = replica;
CREATE TEMP TABLE bench_indexes ON COMMIT DROP AS
SELECT i.indexname, i.indexdef FROM pg_indexes AS i
WHERE i.schemaname = current_schema() AND i.tablename IN ('results', 'attempts')
  AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conname = i.indexname);
DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT indexname FROM bench_indexes LOOP EXECUTE format('DROP INDEX %I', r.indexname); END LOOP;
END $$;
`)
	for _, t := range copiedTables {
		fmt.Fprintf(&b, "\\echo progress copying %s\n", t.name)
		fmt.Fprintf(&b, "\\copy %s (%s) FROM PROGRAM 'sqlite3 -bail -csv %s \"SELECT %s FROM %s\"' WITH (FORMAT csv)\n",
			t.name, t.columns, db, t.columns, t.name)
	}
	b.WriteString(`\echo progress building the indexes
DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT indexdef FROM bench_indexes LOOP EXECUTE r.indexdef; END LOOP;
END $$;
SELECT setval(pg_get_serial_sequence('results', 'id'), max(id)) FROM results;
SELECT setval(pg_get_serial_sequence('drifts', 'id'), max(id)) FROM drifts;
\echo progress rollups
`)
	for _, s := range postgres.RollupStatements() {
		b.WriteString(s + ";\n")
	}
	b.WriteString("COMMIT;\n\\echo progress analyzing\nVACUUM (ANALYZE);\n")

	prog.printf("copying %s into %s", db, redactDSN(dsn))
	cmd := psqlCommand(ctx, dsn)
	cmd.Stdin = strings.NewReader(b.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("psql: %w", err)
	}
	buf := make([]byte, 4096)
	var line []byte
	for {
		n, rerr := pipe.Read(buf)
		line = append(line, buf[:n]...)
		for {
			i := bytes.IndexByte(line, '\n')
			if i < 0 {
				break
			}
			if msg, ok := strings.CutPrefix(string(line[:i]), "progress "); ok {
				prog.printf("  %s", msg)
			}
			line = line[i+1:]
		}
		if rerr != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("copy into %s: %w: %s", redactDSN(dsn), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// describePostgres fills in what the Postgres database holds, as
// describeDatabase does for SQLite.
func describePostgres(ctx context.Context, dsn string, d *databaseInfo) error {
	out, err := psql(ctx, dsn, `
SELECT count(*) FROM results;
SELECT count(*) FROM attempts;
SELECT coalesce(to_char(min(started_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '') FROM results;
SELECT coalesce(to_char(max(started_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '') FROM results;
SELECT coalesce((SELECT consumer FROM results ORDER BY id DESC LIMIT 1), '');
SELECT pg_database_size(current_database());
WITH RECURSIVE probes (probe) AS (
    SELECT min(probe) FROM results
    UNION ALL
    SELECT (SELECT min(probe) FROM results WHERE probe > probes.probe)
    FROM probes
    WHERE probes.probe IS NOT NULL
)
SELECT probe FROM probes WHERE probe IS NOT NULL;
`)
	if err != nil {
		return err
	}
	name := redactDSN(dsn)
	lines := strings.Split(out, "\n")
	if len(lines) < 6 {
		return fmt.Errorf("describe %s: unexpected answer %q", name, out)
	}
	if d.Rows, err = strconv.ParseInt(lines[0], 10, 64); err != nil {
		return fmt.Errorf("describe %s: results: %w", name, err)
	}
	if d.Attempts, err = strconv.ParseInt(lines[1], 10, 64); err != nil {
		return fmt.Errorf("describe %s: attempts: %w", name, err)
	}
	d.FirstStartedAt, d.LastStartedAt = lines[2], lines[3]
	if consumer := lines[4]; consumer != "" && consumer != consumerName {
		return fmt.Errorf("%s was not generated by toolpulse-bench: its results are judged by %q, not %q",
			name, consumer, consumerName)
	}
	if d.SizeBytes, err = strconv.ParseInt(lines[5], 10, 64); err != nil {
		return fmt.Errorf("describe %s: size: %w", name, err)
	}
	d.Probes = lines[6:]
	d.ProbeCount = len(d.Probes)
	d.Path = name
	return nil
}

// postgresProcessTimings times toolpulse stats and history as processes
// on the Postgres database (--db takes its URL).
func postgresProcessTimings(ctx context.Context, bin, dsn, probe string, repeat int, prog *progress) ([]timing, error) {
	cases := []struct {
		name string
		args []string
	}{
		{"toolpulse stats --since 24h --format json (postgres)", []string{"--db", dsn, "stats", "--since", "24h", "--format", "json"}},
		{"toolpulse history --probe " + probe + " --limit 100 --format json (postgres)",
			[]string{"--db", dsn, "history", "--probe", probe, "--limit", "100", "--format", "json"}},
	}
	var out []timing
	for _, c := range cases {
		prog.printf("timing %s", c.name)
		var lines int
		ds, err := sample(ctx, repeat, func(ctx context.Context) error {
			stdout, err := runToolpulse(ctx, bin, c.args...)
			lines = bytes.Count(stdout, []byte("\n"))
			return err
		})
		if err != nil {
			return nil, errors.New(strings.ReplaceAll(err.Error(), dsn, redactDSN(dsn)))
		}
		out = append(out, newTiming(c.name, "process", ds, fmt.Sprintf("%s lines out", commas(int64(lines)))))
	}
	return out, nil
}

// psqlCommand is psql on dsn, reading its script from stdin, stopping at
// the first error, printing bare values one a line.
func psqlCommand(ctx context.Context, dsn string) *exec.Cmd {
	return exec.CommandContext(ctx, "psql", "--no-psqlrc", "--quiet", "--tuples-only", "--no-align",
		"-v", "ON_ERROR_STOP=1", "--dbname", dsn, "--file", "-")
}

// psql runs sql on dsn and returns what it printed, trimmed.
func psql(ctx context.Context, dsn, sql string) (string, error) {
	cmd := psqlCommand(ctx, dsn)
	cmd.Stdin = strings.NewReader(sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql on %s: %w: %s", redactDSN(dsn), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// redactDSN is the DSN without its password, for reports and errors.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "the Postgres database"
	}
	return u.Redacted()
}
