package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/internal/harness"
)

// readOptions are the flags of the read mode.
type readOptions struct {
	db        string
	data      dataSpec
	reuse     bool
	repeat    int
	toolpulse string
	explain   bool
	jsonPath  string
	store     string // "sqlite" or "postgres"
	dsn       string // the Postgres database, with --store postgres
	// buildFlags are extra `go build` flags for toolpulse. The smoke test
	// sets them to match its own build, so that toolpulse is linked from
	// packages already in the build cache.
	buildFlags []string
}

func parseReadFlags(args []string, stderr io.Writer) (readOptions, error) {
	var o readOptions
	fs := flag.NewFlagSet("read", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.db, "db", filepath.Join(os.TempDir(), "toolpulse-bench.db"), "database `path`; it must not exist unless --reuse is given")
	fs.IntVar(&o.data.Results, "results", 10_000_000, "results to generate")
	fs.IntVar(&o.data.Probes, "probes", 1000, "probes the results are spread over (probe-0001, ...)")
	fs.IntVar(&o.data.Days, "days", 7, "days, up to now, the results are spread over")
	fs.BoolVar(&o.reuse, "reuse", false, "measure the database at --db as it is when it exists (generation flags are then ignored)")
	fs.IntVar(&o.repeat, "repeat", 5, "timed runs of each measurement, after one warm-up run")
	fs.StringVar(&o.toolpulse, "toolpulse", "", "toolpulse `binary` to time (default: go build ./cmd/toolpulse into a temporary directory)")
	fs.BoolVar(&o.explain, "explain", false, "print the SQLite query plans of the stats and history queries")
	fs.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to `file`")
	fs.StringVar(&o.store, "store", "sqlite", "store to measure: sqlite, or postgres (then --dsn; --db is the SQLite file generated and copied into it)")
	fs.StringVar(&o.dsn, "dsn", "", "with --store postgres, the `URL` of the database to fill and measure (postgres://...); it must hold no results unless --reuse is given")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: toolpulse-bench read [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if o.repeat < 1 {
		return o, &usageError{fmt.Errorf("--repeat must be at least 1, got %d", o.repeat)}
	}
	switch {
	case o.store != "sqlite" && o.store != "postgres":
		return o, &usageError{fmt.Errorf("--store must be sqlite or postgres, got %q", o.store)}
	case o.store == "postgres" && o.dsn == "":
		return o, &usageError{errors.New("--store postgres needs --dsn")}
	case o.store == "sqlite" && o.dsn != "":
		return o, &usageError{errors.New("--dsn is for --store postgres")}
	}
	if err := o.data.validate(); err != nil {
		return o, &usageError{err}
	}
	return o, nil
}

func runRead(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseReadFlags(args, stderr)
	if err != nil {
		return err
	}
	return read(ctx, opts, stdout, stderr)
}

// read runs the read mode: the database, then every measurement, then the
// report on stdout (and in --json).
func read(ctx context.Context, opts readOptions, stdout, stderr io.Writer) error {
	if opts.store == "postgres" {
		return readPostgres(ctx, opts, stdout, stderr)
	}
	prog := newProgress(stderr)
	shell, err := sqliteVersion(ctx)
	if err != nil {
		return fmt.Errorf("the sqlite3 shell is required (Debian package sqlite3): %w", err)
	}
	tmp, err := os.MkdirTemp("", "toolpulse-bench-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	rep := newReport(opts, shell)
	if err := prepareDatabase(ctx, opts, rep, prog); err != nil {
		return err
	}
	bin, err := toolpulseBinary(ctx, opts, tmp, prog)
	if err != nil {
		return err
	}
	rep.ToolpulseSQLite = linkedSQLite(bin)
	probe := rep.Database.Probes[(len(rep.Database.Probes)-1)/2]
	rep.HistoryProbe = probe

	steps := []func() ([]timing, error){
		func() ([]timing, error) { return processTimings(ctx, bin, opts.db, tmp, probe, opts.repeat, prog) },
		func() ([]timing, error) { return inProcessTimings(ctx, opts.db, probe, opts.repeat, prog) },
		func() ([]timing, error) {
			return daemonTimings(ctx, bin, opts.db, tmp, rep.Database.Probes, probe, opts.repeat, prog)
		},
	}
	for _, step := range steps {
		ts, err := step()
		if err != nil {
			return err
		}
		rep.Timings = append(rep.Timings, ts...)
	}
	if opts.explain {
		prog.printf("explaining the query plans")
		if rep.Plans, err = explainPlans(ctx, opts.db); err != nil {
			return err
		}
	}
	prog.printf("done")
	if err := writeTable(stdout, rep); err != nil {
		return err
	}
	if opts.jsonPath != "" {
		if err := writeJSONFile(opts.jsonPath, rep); err != nil {
			return err
		}
	}
	return nil
}

// prepareDatabase generates the database, or takes it as it is with
// --reuse, and describes it in rep.
func prepareDatabase(ctx context.Context, opts readOptions, rep *report, prog *progress) error {
	_, err := os.Stat(opts.db)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("database: %w", err)
	case exists && !opts.reuse:
		// Never overwrite a file we did not create: it may be a real
		// toolpulse.db.
		return &usageError{fmt.Errorf("%s exists: pass --reuse to measure it as it is, or remove it", opts.db)}
	case exists:
		prog.printf("reusing %s", opts.db)
		rep.Database.Reused = true
	default:
		start := time.Now()
		if err := generate(ctx, opts.db, opts.data, start, prog); err != nil {
			return err
		}
		rep.Database.GenerationMS = ms(time.Since(start))
		rep.Database.Days = opts.data.Days
	}
	prog.printf("reading what %s holds", opts.db)
	if err := describeDatabase(ctx, opts.db, &rep.Database); err != nil {
		return err
	}
	if rep.Database.Rows == 0 || len(rep.Database.Probes) == 0 {
		return fmt.Errorf("%s holds no results", opts.db)
	}
	return nil
}

// describeDatabase fills in what the database holds, through the sqlite3
// shell: results, attempts, probes, the time covered and the file size.
func describeDatabase(ctx context.Context, path string, d *databaseInfo) error {
	// The probes are walked through the index, as toolpulse does; SELECT
	// DISTINCT would read every row. Each single min() or max() is one
	// index search.
	out, err := querySQLite(ctx, path, []string{"-list", "-noheader"}, `
SELECT count(*) FROM results;
SELECT count(*) FROM attempts;
SELECT coalesce(min(started_at), '') FROM results;
SELECT coalesce(max(started_at), '') FROM results;
SELECT coalesce((SELECT consumer FROM results ORDER BY id DESC LIMIT 1), '');
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
		return fmt.Errorf("describe %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 5 {
		return fmt.Errorf("describe %s: unexpected answer %q", path, out)
	}
	if d.Rows, err = strconv.ParseInt(lines[0], 10, 64); err != nil {
		return fmt.Errorf("describe %s: results: %w", path, err)
	}
	if d.Attempts, err = strconv.ParseInt(lines[1], 10, 64); err != nil {
		return fmt.Errorf("describe %s: attempts: %w", path, err)
	}
	d.FirstStartedAt, d.LastStartedAt = lines[2], lines[3]
	if consumer := lines[4]; consumer != "" && consumer != consumerName {
		// The daemon step would act on it (alert delivery, say): only a
		// database this tool generated is safe to measure.
		return fmt.Errorf("%s was not generated by toolpulse-bench: its results are judged by %q, not %q",
			path, consumer, consumerName)
	}
	d.Probes = lines[5:]
	d.ProbeCount = len(d.Probes)
	d.Path = path
	if d.SizeBytes, err = databaseSize(path); err != nil {
		return fmt.Errorf("describe %s: %w", path, err)
	}
	return nil
}

// databaseSize is the size of the database file and its WAL.
func databaseSize(path string) (int64, error) {
	var total int64
	for _, suffix := range []string{"", "-wal"} {
		fi, err := os.Stat(path + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			return 0, err
		}
		total += fi.Size()
	}
	return total, nil
}

// toolpulseBinary returns --toolpulse, or builds toolpulse into dir.
func toolpulseBinary(ctx context.Context, opts readOptions, dir string, prog *progress) (string, error) {
	if opts.toolpulse != "" {
		return opts.toolpulse, nil
	}
	prog.printf("building toolpulse")
	bin, err := harness.Build(ctx, dir, opts.buildFlags...)
	if err != nil {
		return "", fmt.Errorf("%w (or pass --toolpulse)", err)
	}
	return bin, nil
}
