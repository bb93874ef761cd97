package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// runOptions are the flags of the run mode.
type runOptions struct {
	loadOptions
	alertProbes int
	scrapeEvery time.Duration
	store       string // "sqlite" or "postgres"
	dsn         string // with --store postgres, the server to create the run's database on
}

func parseRunFlags(args []string, stderr io.Writer) (runOptions, error) {
	var o runOptions
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.register(fs, loadOptions{
		probes: 1000, interval: time.Second, jitter: time.Second, warmup: -1, duration: time.Minute,
		mix: benchMix{Pass: 100}, items: 20, responseBytes: 2048, maxAttempts: 1, maxConcurrency: 64,
		timeout: 5 * time.Second,
	})
	fs.DurationVar(&o.warmup, "warmup", -1, "how long the daemon runs before the measurement starts (default: jitter + interval)")
	fs.IntVar(&o.alertProbes, "alert-probes", -1, "probes that pass, then fail for good at staggered times, to time alerts from the provider to Slack (default 5, or --probes when fewer)")
	fs.DurationVar(&o.scrapeEvery, "scrape-every", 15*time.Second, "scrape the daemon's /metrics this often, as Prometheus would, from start-up to the window's end (0: never)")
	fs.StringVar(&o.store, "store", "sqlite", "the daemon's store: sqlite, or postgres (then --dsn)")
	fs.StringVar(&o.dsn, "dsn", "", "with --store postgres, the `URL` of a database on a Postgres server on this machine; the run creates a fresh database there, and drops it at the end, and reports the server's CPU")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: toolpulse-bench run [flags]

Runs the real `+"`toolpulse run`"+` on generated probes against a loopback provider
and measures, over --duration after a warm-up: runs completed against
expected, daemon CPU per run, memory, start lag, SQLite growth per run and
alert latency.

`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if err := o.validate(); err != nil {
		return o, &usageError{err}
	}
	switch {
	case o.store != "sqlite" && o.store != "postgres":
		return o, &usageError{fmt.Errorf("--store must be sqlite or postgres, got %q", o.store)}
	case (o.store == "postgres") != (o.dsn != ""):
		return o, &usageError{fmt.Errorf("--dsn goes with --store postgres, and only with it")}
	}
	if o.alertProbes == -1 {
		o.alertProbes = min(5, o.probes)
	}
	if o.scrapeEvery < 0 {
		return o, &usageError{fmt.Errorf("--scrape-every must not be negative, got %s", o.scrapeEvery)}
	}
	if o.alertProbes < 0 || o.alertProbes > o.probes {
		return o, &usageError{fmt.Errorf("--alert-probes must be between 0 and --probes (%d), got %d", o.probes, o.alertProbes)}
	}
	return o, nil
}

func runRunMode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	rep, err := benchRun(ctx, opts, stderr)
	if rep != nil {
		if werr := writeRunOutput(stdout, opts.jsonPath, rep); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// arrivalCapacity is how many arrivals the provider preallocates per
// probe: the runs of the whole bench plus some, bounded so that a tiny
// interval does not reserve gigabytes.
func arrivalCapacity(o loadOptions) int {
	n := int((o.warmup+o.duration+30*time.Second)/o.interval) + 4
	return min(n, 4096)
}

// alertPlan places the alert probes evenly among the probes, and their
// flips evenly over the window, early enough that the flipped probe still
// runs, and its alert arrives, before the window ends.
func alertPlan(o runOptions) []specialProbe {
	margin := min(5*time.Second, o.duration/10)
	span := max(o.duration-o.interval-margin, 0)
	plan := make([]specialProbe, o.alertProbes)
	for j := range plan {
		plan[j] = specialProbe{
			Probe: (2*j + 1) * o.probes / (2 * o.alertProbes),
			Kind:  specialAlert,
			At:    span * time.Duration(j+1) / time.Duration(o.alertProbes+1),
		}
	}
	return plan
}

// alertWait bounds how long after the window the bench waits for alert
// messages still on their way.
const alertWait = 10 * time.Second

// windowEdge is what the bench reads at each end of the window.
type windowEdge struct {
	at                      time.Time
	daemon, provider, bench procStat
	machine                 machineCPU
	postgres                time.Duration // the server's CPU so far, with --store postgres
}

func readEdge(s *session) (windowEdge, error) {
	e := windowEdge{at: time.Now()}
	var err error
	if e.machine, err = readMachineCPU(); err != nil {
		return e, err
	}
	if e.daemon, err = readProcStat(s.daemon.proc.Pid()); err != nil {
		return e, fmt.Errorf("the daemon's /proc: %w", err)
	}
	if e.provider, err = readProcStat(s.provider.pid()); err != nil {
		return e, fmt.Errorf("the provider's /proc: %w", err)
	}
	if e.bench, err = readProcStat(0); err != nil {
		return e, fmt.Errorf("the bench's /proc: %w", err)
	}
	if s.pg != nil {
		if e.postgres, err = s.pg.cpu(); err != nil {
			return e, err
		}
	}
	return e, nil
}

// benchRun runs the run mode. It returns the report whenever the
// measurement completed, also with an error when the daemon misbehaved,
// so that the numbers are printed next to the failure.
func benchRun(ctx context.Context, o runOptions, stderr io.Writer) (*runReport, error) {
	prog := newProgress(stderr)
	if _, err := sqliteVersion(ctx); err != nil {
		return nil, fmt.Errorf("the sqlite3 shell is required (Debian package sqlite3): %w", err)
	}
	alerts := alertPlan(o)
	spec := providerSpec{
		Probes: o.probes, Items: o.items, ResponseBytes: o.responseBytes, Mix: o.mix,
		Capacity: arrivalCapacity(o.loadOptions), Special: alerts,
	}
	s, err := newSession(ctx, o.loadOptions, spec, prog)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if o.store == "postgres" {
		if s.pg, err = newPGRun(ctx, o.dsn, prog); err != nil {
			return nil, err
		}
		defer s.pg.drop()
	}

	all := make([]int, o.probes)
	for i := range all {
		all[i] = i
	}
	if err := s.writeConfig(all); err != nil {
		return nil, err
	}
	rep := newRunReport(o, s)
	prog.printf("starting toolpulse run: %s probes every %s, jitter %s", commas(int64(o.probes)), o.interval, o.jitter)
	healthy, err := s.startDaemon(ctx)
	if err != nil {
		return nil, err
	}
	stopScrapes := s.scrapeLoop(ctx, o.scrapeEvery)
	defer stopScrapes()
	w0 := healthy.Add(o.warmup)
	w1 := w0.Add(o.duration)
	if err := s.provider.setEpoch(ctx, w0); err != nil {
		return nil, err
	}
	prog.printf("warming up for %s", o.warmup)
	if err := s.waitUntil(ctx, w0); err != nil {
		return nil, err
	}
	start, err := readEdge(s)
	if err != nil {
		return nil, err
	}
	var startSize int64
	var method string
	if s.pg != nil {
		if startSize, err = s.pg.size(ctx); err != nil {
			return nil, err
		}
		method = "pg_database_size() at the window's start and after the daemon stopped"
	} else {
		startSize, method = sqliteStartSize(ctx, s.dbPath)
	}
	prog.printf("measuring for %s", o.duration)
	if err := s.waitUntil(ctx, w1); err != nil {
		return nil, err
	}
	rep.Scrapes = stopScrapes()
	end, err := readEdge(s)
	if err != nil {
		return nil, err
	}
	m, err := s.metrics(ctx)
	if err != nil {
		return nil, err
	}
	waitForAlerts(ctx, s, alerts, w0)
	pr, err := s.provider.collect(ctx)
	if err != nil {
		return nil, err
	}

	if rep.Daemon, err = s.stopAll(prog); err != nil {
		return nil, err
	}
	var endDB, endWAL int64
	var st runCounts
	prog.printf("counting the runs in the database")
	if s.pg != nil {
		if endDB, err = s.pg.size(ctx); err != nil {
			return nil, err
		}
		st, err = s.pg.windowStats(ctx, w0, w1)
	} else {
		if endDB, endWAL, err = dbFiles(s.dbPath); err != nil {
			return nil, err
		}
		st, err = windowStats(ctx, s.dbPath, w0, w1)
	}
	if err != nil {
		return nil, err
	}

	rep.Window = benchWindow{Start: w0.UTC(), End: w1.UTC(), Seconds: o.duration.Seconds(),
		Warmup: fmt.Sprintf("%s from /healthz answering 200 (%s)", o.warmup, warmupSource(o.loadOptions))}
	ops := &rep.Operations
	ops.Expected = int(float64(o.probes) * o.duration.Seconds() / o.interval.Seconds())
	ops.Completed, ops.Pass, ops.ContractError, ops.Unavailable = st.runs, st.pass, st.contractError, st.unavailable
	ops.Missed = max(ops.Expected-ops.Completed, 0)
	if ops.Expected > 0 {
		ops.CompletedPercent = 100 * float64(ops.Completed) / float64(ops.Expected)
		ops.MissedPercent = 100 * float64(ops.Missed) / float64(ops.Expected)
	}
	ops.PerSecond = float64(ops.Completed) / o.duration.Seconds()
	ops.ProviderRequests = countArrivals(pr.Arrivals, w0.UnixNano(), w1.UnixNano())
	ops.ResultsDropped = int(m["toolpulse_results_dropped_total"])
	ops.StoreErrors = int(m["toolpulse_store_errors_total"])

	rep.CPU = cpuUse{
		DaemonSeconds:   (end.daemon.CPU - start.daemon.CPU).Seconds(),
		ProviderSeconds: (end.provider.CPU - start.provider.CPU).Seconds(),
		BenchSeconds:    (end.bench.CPU - start.bench.CPU).Seconds(),
	}
	elapsed := end.at.Sub(start.at).Seconds()
	rep.CPU.DaemonCores = rep.CPU.DaemonSeconds / elapsed
	rep.CPU.MachineBusyCores = (end.machine.Busy - start.machine.Busy).Seconds() / elapsed
	rep.CPU.PostgresSeconds = (end.postgres - start.postgres).Seconds()
	rep.CPU.OtherCores = max(rep.CPU.MachineBusyCores-
		(rep.CPU.DaemonSeconds+rep.CPU.ProviderSeconds+rep.CPU.BenchSeconds+rep.CPU.PostgresSeconds)/elapsed, 0)
	rep.CPU.LoadAverage = loadAverage()
	if ops.Completed > 0 {
		rep.CPU.DaemonMicrosPerOp = rep.CPU.DaemonSeconds * 1e6 / float64(ops.Completed)
		rep.CPU.DaemonMicrosPerExchange = rep.CPU.DaemonMicrosPerOp / float64(rep.Setup.ExchangesPerRun)
		rep.CPU.PostgresMicrosPerOp = rep.CPU.PostgresSeconds * 1e6 / float64(ops.Completed)
	}
	rep.Memory = memUse{PeakRSSBytes: end.daemon.HWM, EndRSSBytes: end.daemon.RSS, Threads: end.daemon.Threads}
	rep.StartLag = startLags(pr.Arrivals, o.interval, w0.UnixNano(), w1.UnixNano())

	sq := &rep.SQLite
	sq.StartBytes, sq.EndBytes = startSize, endDB+endWAL
	sq.GrowthBytes = sq.EndBytes - sq.StartBytes
	sq.Operations = st.runsSinceStart
	if sq.Operations > 0 {
		sq.BytesPerOp = float64(sq.GrowthBytes) / float64(sq.Operations)
	}
	sq.Method = method
	if s.pg == nil {
		sq.Method += "; the end is the database file after the daemon's clean shutdown, which checkpoints the WAL into it"
	}
	if endWAL > 0 {
		sq.Method += fmt.Sprintf(" (a %s WAL was left and is counted)", humanBytes(endWAL))
	}
	sq.Method += "; divided by the results started since the window began, those of the drain included"

	rep.Alerts = alertLatencies(alerts, pr.FirstFail, s, w0)
	rep.Alerts.SlackMessages = s.slackMessages()
	rep.ProviderAnswers = pr.Served
	rep.ProviderConnections = pr.Connections

	if n := rep.Daemon.ErrorLines; n > 0 {
		return rep, fmt.Errorf("toolpulse run logged %d error lines; the first: %s", n, rep.Daemon.FirstErrors[0])
	}
	if n := ops.ResultsDropped; n > 0 {
		return rep, fmt.Errorf("toolpulse run dropped %d results (toolpulse_results_dropped_total)", n)
	}
	if sc := rep.Scrapes; sc.Failed > 0 {
		return rep, fmt.Errorf("%d of %d scrapes of /metrics failed; the first: %s", sc.Failed, sc.Count, sc.FirstError)
	}
	return rep, nil
}

func warmupSource(o loadOptions) string {
	if o.warmup == o.jitter+o.interval {
		return "jitter + interval"
	}
	return "--warmup"
}

// sqliteStartSize is the size of the database at the start of the window,
// and how it was taken. The WAL file is not the data it holds: it is reused
// from its start after a checkpoint, so its size is that of its largest
// batch, not of the frames not yet checkpointed. The sqlite3 shell reads
// the logical size (page_count × page_size) while the daemon writes; the
// file sizes are the fallback should that fail.
func sqliteStartSize(ctx context.Context, db string) (int64, string) {
	// The daemon is writing: wait out a lock rather than fail on it.
	out, err := querySQLite(ctx, db, []string{"-list", "-noheader"}, ".timeout 5000\nPRAGMA page_count; PRAGMA page_size;")
	if err == nil {
		var count, size int64
		if _, err = fmt.Sscan(out, &count, &size); err == nil && count > 0 {
			return count * size, "the start is the database's logical size at the window's start (page_count × page_size, read with the sqlite3 shell)"
		}
	}
	dbSize, wal, ferr := dbFiles(db)
	if ferr != nil {
		return 0, "the start could not be read: " + ferr.Error()
	}
	return dbSize + wal, fmt.Sprintf("the start is the size of the database file plus its WAL at the window's start (the sqlite3 shell could not read the page count: %v; the WAL may hold frames already checkpointed, which makes the growth look smaller)", err)
}

// waitForAlerts waits, for at most alertWait, until every alert probe's
// firing message arrived.
func waitForAlerts(ctx context.Context, s *session, alerts []specialProbe, epoch time.Time) {
	deadline := time.Now().Add(alertWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		done := true
		for _, a := range alerts {
			if s.firstFiringSince(a.Probe, epoch.Add(a.At).UnixNano()) == 0 {
				done = false
				break
			}
		}
		if done {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// alertLatencies measures, for each alert probe, the time from the
// provider serving its first failing answer to the Slack sink receiving
// the firing alert.
func alertLatencies(alerts []specialProbe, firstFail []int64, s *session, epoch time.Time) alertLatency {
	out := alertLatency{Probes: len(alerts), LatenciesMS: []float64{}}
	var ns []int64
	for _, a := range alerts {
		served := firstFail[a.Probe]
		if served == 0 {
			continue
		}
		got := s.firstFiringSince(a.Probe, max(served, epoch.Add(a.At).UnixNano()))
		if got == 0 {
			continue
		}
		ns = append(ns, got-served)
		out.LatenciesMS = append(out.LatenciesMS, nsMS(got-served))
	}
	out.Measured = len(ns)
	if len(ns) > 0 {
		slices.Sort(ns)
		p50, mx := nsMS(nearestRank(ns, 50)), nsMS(ns[len(ns)-1])
		out.P50MS, out.MaxMS = &p50, &mx
	}
	return out
}

func countArrivals(arrivals [][]int64, from, to int64) int {
	n := 0
	for _, a := range arrivals {
		for _, t := range a {
			if t >= from && t < to {
				n++
			}
		}
	}
	return n
}

// runCounts are the results the database holds for the window.
type runCounts struct {
	runs, pass, contractError, unavailable int
	// runsSinceStart counts every result started since the window began,
	// those of the drain included: what the database grew by.
	runsSinceStart int
}

// windowStats counts the runs of [from, to) in the database after the
// daemon stopped. It reads the results table, which SPEC §7 makes the
// operator's interface, with the sqlite3 shell: the store's own API would
// refuse, or migrate, a database of a toolpulse newer or older than the
// bench (--toolpulse).
func windowStats(ctx context.Context, db string, from, to time.Time) (runCounts, error) {
	var c runCounts
	lo, hi := quoteSQL(storedBound(from)), quoteSQL(storedBound(to))
	out, err := querySQLite(ctx, db, []string{"-list", "-noheader", "-separator", " "}, fmt.Sprintf(`
SELECT count(*), coalesce(sum(outcome = 'pass'), 0), coalesce(sum(outcome = 'contract_error'), 0),
       coalesce(sum(outcome = 'unavailable'), 0)
FROM results WHERE started_at >= %s AND started_at < %s;
SELECT count(*) FROM results WHERE started_at >= %s;
`, lo, hi, lo))
	if err != nil {
		return c, fmt.Errorf("count the runs: %w", err)
	}
	if _, err := fmt.Sscan(out, &c.runs, &c.pass, &c.contractError, &c.unavailable, &c.runsSinceStart); err != nil {
		return c, fmt.Errorf("count the runs: %q: %w", out, err)
	}
	return c, nil
}

// storedBound is t as results.started_at stores it (RFC 3339 UTC to the
// millisecond), rounded up, so that a text comparison with it is a time
// comparison with t.
func storedBound(t time.Time) string {
	ms := t.Truncate(time.Millisecond)
	if ms.Before(t) {
		ms = ms.Add(time.Millisecond)
	}
	return results.FormatTime(ms)
}

func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// writeRunOutput prints the table, and the JSON where --json asks.
func writeRunOutput(stdout io.Writer, jsonPath string, rep any) error {
	if jsonPath != "-" {
		if err := writeBenchTable(stdout, rep); err != nil {
			return err
		}
	}
	if jsonPath == "" {
		return nil
	}
	b, err := marshalReport(rep)
	if err != nil {
		return err
	}
	if jsonPath == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(jsonPath, b, 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}
