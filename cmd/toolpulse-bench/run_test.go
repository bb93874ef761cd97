package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for the bench binary when run and
// soak re-execute themselves as the provider, and for Gatus in the peer
// mode's test.
func TestMain(m *testing.M) {
	if path := os.Getenv("GATUS_CONFIG_PATH"); path != "" {
		os.Exit(standInGatus(path))
	}
	if os.Getenv(providerEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	builtDir  string
	builtBin  string
	buildErr  error
)

// testToolpulse builds toolpulse once for every test that runs it.
func testToolpulse(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if builtDir, buildErr = os.MkdirTemp("", "toolpulse-bench-test-"); buildErr != nil {
			return
		}
		var flags []string
		if raceBuild {
			// Link toolpulse from the race-enabled packages this test was
			// built from, rather than compile SQLite once more without it.
			flags = []string{"-race"}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		builtBin, buildErr = toolpulseBinary(ctx, readOptions{buildFlags: flags}, builtDir, newProgress(io.Discard))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

const (
	smokeRunProbes = 20
	smokeAlerts    = 2
)

// TestRunSmoke runs the whole run mode, small: 20 probes every 500ms for
// 5s with every outcome in the mix and two alert probes, with --profile,
// --keep and --json. It asserts that the harness completes and that its
// numbers are consistent, never how fast anything was.
func TestRunSmoke(t *testing.T) {
	requireSQLiteShell(t)
	bin := testToolpulse(t)
	dir := t.TempDir()
	jsonPath, profDir, keepDir := filepath.Join(dir, "run.json"), filepath.Join(dir, "prof"), filepath.Join(dir, "keep")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run",
		"--probes", "20", "--interval", "500ms", "--jitter", "400ms", "--warmup", "1s", "--duration", "5s",
		"--mix", "pass=70,contract_error=15,unavailable=15", "--alert-probes", "2", "--scrape-every", "1s",
		"--daemon-env", "GOMEMLIMIT=1GiB",
		"--toolpulse", bin, "--json", jsonPath, "--profile", profDir, "--keep", keepDir,
	}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	for _, want := range []string{"runs completed", "daemon CPU", "start lag", "SQLite growth", "alert latency", "/metrics scrapes", "go tool pprof -top"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the table does not mention %q:\n%s", want, stdout.String())
		}
	}

	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("%s: %v", jsonPath, err)
	}
	requireKeys(t, "report", raw, "mode", "started_at", "machine", "go_version", "num_cpu", "toolpulse", "setup",
		"window", "operations", "cpu", "memory", "start_lag", "sqlite", "alerts", "scrapes", "daemon", "provider_answers", "provider_connections",
		"profiles", "kept_in")
	requireKeys(t, "operations", object(t, raw["operations"]), "expected", "completed", "completed_percent", "missed",
		"missed_percent", "per_second", "pass", "contract_error", "unavailable", "provider_requests",
		"results_dropped", "store_errors")
	requireKeys(t, "cpu", object(t, raw["cpu"]), "daemon_seconds", "daemon_us_per_op", "daemon_cores", "provider_seconds", "bench_seconds",
		"machine_busy_cores", "other_cores", "load_average")
	requireKeys(t, "start_lag", object(t, raw["start_lag"]), "runs", "skipped_ticks", "p50_ms", "p99_ms", "max_ms")
	requireKeys(t, "alerts", object(t, raw["alerts"]), "probes", "measured", "p50_ms", "max_ms", "latencies_ms", "slack_messages")
	requireKeys(t, "scrapes", object(t, raw["scrapes"]), "every_s", "count", "failed", "p50_ms", "max_ms", "bytes", "first_error")

	var rep runReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	checkRunReport(t, &rep)

	for _, f := range []string{rep.Profiles.CPU, rep.Profiles.Heap} {
		if !isGzip(t, f) {
			t.Errorf("%s is not a pprof profile (gzip)", f)
		}
	}
	for _, f := range []string{"checks.yaml", "toolpulse.db", "toolpulse.log", "provider.json"} {
		if _, err := os.Stat(filepath.Join(keepDir, f)); err != nil {
			t.Errorf("--keep: %v", err)
		}
	}
}

// TestRunSmokeMCP is the run mode with MCP probes, small, in each era: every
// run is a whole session with the provider's MCP server, judged by the
// same rules, and the numbers stay consistent.
func TestRunSmokeMCP(t *testing.T) {
	requireSQLiteShell(t)
	bin := testToolpulse(t)
	for _, era := range []string{mcpLegacy, mcpStateless} {
		t.Run(era, func(t *testing.T) {
			jsonPath := filepath.Join(t.TempDir(), "run.json")
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), []string{"run", "--kind", "mcp", "--mcp-era", era,
				"--probes", "20", "--interval", "500ms", "--jitter", "400ms", "--warmup", "1s", "--duration", "5s",
				"--mix", "pass=70,contract_error=15,unavailable=15", "--alert-probes", "2", "--scrape-every", "1s",
				"--daemon-env", "GOMEMLIMIT=1GiB", "--toolpulse", bin, "--json", jsonPath,
			}, &stdout, &stderr)
			if code != exitOK {
				t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
			}
			rep := readReport[runReport](t, jsonPath)
			checkRunReport(t, &rep)
			if rep.Setup.Kind != kindMCP || rep.Setup.MCPEra != era {
				t.Errorf("setup kind %q era %q, want mcp %s", rep.Setup.Kind, rep.Setup.MCPEra, era)
			}
			if !strings.Contains(stdout.String(), "MCP tool, "+era+" era") {
				t.Errorf("the table does not say the probes are MCP tools:\n%s", stdout.String())
			}
		})
	}
}

// TestRunSmokeSteps is the run mode with three-step probes, small. With
// every answer passing, every run passes, and does so by all three steps,
// each answered by the provider only for the job id the run captured at
// create; the report says three exchanges a run. With the mix and alert
// probes, the numbers stay consistent and every failing run fails at
// verify, the step they decide.
func TestRunSmokeSteps(t *testing.T) {
	requireSQLiteShell(t)
	bin := testToolpulse(t)
	smoke := func(t *testing.T, args ...string) (*runReport, string, string) {
		t.Helper()
		dir := t.TempDir()
		jsonPath, keepDir := filepath.Join(dir, "run.json"), filepath.Join(dir, "keep")
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), append([]string{"run", "--kind", "steps",
			"--interval", "500ms", "--jitter", "400ms", "--warmup", "1s", "--daemon-env", "GOMEMLIMIT=1GiB",
			"--toolpulse", bin, "--json", jsonPath, "--keep", keepDir}, args...), &stdout, &stderr)
		if code != exitOK {
			t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
		}
		rep := readReport[runReport](t, jsonPath)
		if rep.Setup.Kind != kindSteps || rep.Setup.ExchangesPerRun != 3 {
			t.Errorf("setup kind %q, %d exchanges a run; want steps, 3", rep.Setup.Kind, rep.Setup.ExchangesPerRun)
		}
		if c := rep.CPU; c.DaemonMicrosPerExchange <= 0 || c.DaemonMicrosPerExchange*3 < c.DaemonMicrosPerOp*0.999 || c.DaemonMicrosPerExchange*3 > c.DaemonMicrosPerOp*1.001 {
			t.Errorf("CPU per exchange %v µs, per run %v µs: want a third", c.DaemonMicrosPerExchange, c.DaemonMicrosPerOp)
		}
		for _, want := range []string{"three-step HTTP JSON API", "daemon CPU per exchange", "3 exchanges a run"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("the table does not mention %q:\n%s", want, stdout.String())
			}
		}
		return &rep, filepath.Join(keepDir, "toolpulse.db"), stdout.String()
	}
	count := func(t *testing.T, db, sql string) int {
		t.Helper()
		out, err := querySQLite(t.Context(), db, []string{"-list", "-noheader"}, sql)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("%s: %q", sql, out)
		}
		return n
	}

	t.Run("pass", func(t *testing.T) {
		rep, db, _ := smoke(t, "--probes", "10", "--duration", "3s", "--alert-probes", "0", "--scrape-every", "0")
		ops := rep.Operations
		// 10 probes × 3s ÷ 500ms, give or take a run per probe and edge.
		if ops.Expected != 60 || ops.Completed < ops.Expected-20 || ops.Completed > ops.Expected+20 {
			t.Errorf("completed %d of %d expected", ops.Completed, ops.Expected)
		}
		if ops.Pass != ops.Completed || ops.ContractError != 0 || ops.Unavailable != 0 {
			t.Errorf("outcomes: pass %d, contract_error %d, unavailable %d of %d; want every run to pass", ops.Pass, ops.ContractError, ops.Unavailable, ops.Completed)
		}
		runs := count(t, db, "SELECT count(*) FROM results WHERE kind = 'steps' AND outcome = 'pass';")
		if all := count(t, db, "SELECT count(*) FROM results;"); runs != all || runs < ops.Completed {
			t.Errorf("%d passing steps runs of %d in the database, %d in the window", runs, all, ops.Completed)
		}
		// Each run passed create, confirm and verify, its claim holding at
		// the first poll.
		steps := count(t, db, "SELECT count(*) FROM run_steps WHERE outcome = 'pass' AND (step IN ('create', 'confirm') OR (step = 'verify' AND polls = 1));")
		if steps != 3*runs {
			t.Errorf("%d passing steps for %d runs, want three each", steps, runs)
		}
	})

	t.Run("mix and alert probes", func(t *testing.T) {
		rep, db, _ := smoke(t, "--probes", "20", "--duration", "5s",
			"--mix", "pass=70,contract_error=15,unavailable=15", "--alert-probes", "2", "--scrape-every", "1s")
		checkRunReport(t, rep)
		if n := count(t, db, "SELECT count(*) FROM results WHERE outcome != 'pass' AND coalesce(step, '') != 'verify';"); n != 0 {
			t.Errorf("%d runs failed before verify; the mix and alert probes decide verify alone", n)
		}
	})
}

func checkRunReport(t *testing.T, rep *runReport) {
	t.Helper()
	ops := rep.Operations
	// 20 probes × 5s ÷ 500ms.
	if ops.Expected != 200 {
		t.Errorf("expected %d runs, want 200", ops.Expected)
	}
	// A run on either edge of the window may be counted on one side by the
	// database (the daemon's start time) and on the other by the provider
	// (its arrival): one per probe and edge.
	slack := 2 * smokeRunProbes
	if ops.Completed <= 0 || ops.Completed > ops.Expected+slack {
		t.Errorf("completed %d of %d expected", ops.Completed, ops.Expected)
	}
	if ops.Missed != max(ops.Expected-ops.Completed, 0) {
		t.Errorf("missed %d, expected %d, completed %d", ops.Missed, ops.Expected, ops.Completed)
	}
	if ops.Pass <= 0 || ops.ContractError <= 0 || ops.Unavailable <= 0 {
		t.Errorf("outcomes: pass %d, contract_error %d, unavailable %d; the mix asks for all three", ops.Pass, ops.ContractError, ops.Unavailable)
	}
	if sum := ops.Pass + ops.ContractError + ops.Unavailable; sum != ops.Completed {
		t.Errorf("outcomes add up to %d, completed %d", sum, ops.Completed)
	}
	if d := ops.ProviderRequests - ops.Completed; d < -slack || d > slack {
		t.Errorf("the provider saw %d requests in the window, the database holds %d runs", ops.ProviderRequests, ops.Completed)
	}
	if ops.ResultsDropped != 0 || ops.StoreErrors != 0 {
		t.Errorf("dropped %d, store errors %d", ops.ResultsDropped, ops.StoreErrors)
	}
	if rep.CPU.DaemonSeconds <= 0 || rep.CPU.DaemonMicrosPerOp <= 0 {
		t.Errorf("daemon CPU %v s, %v µs per run", rep.CPU.DaemonSeconds, rep.CPU.DaemonMicrosPerOp)
	}
	if m := rep.Memory; m.EndRSSBytes <= 0 || m.PeakRSSBytes < m.EndRSSBytes || m.Threads <= 0 {
		t.Errorf("memory %+v", m)
	}
	if l := rep.StartLag; l.Runs <= 0 || l.P50MS < 0 || l.P50MS > l.P99MS || l.P99MS > l.MaxMS {
		t.Errorf("start lag %+v", l)
	}
	method := "page_count"
	if rep.Setup.Store == "postgres" {
		method = "pg_database_size"
	}
	if sq := rep.SQLite; sq.Operations < ops.Completed || sq.GrowthBytes <= 0 || sq.BytesPerOp <= 0 || !strings.Contains(sq.Method, method) {
		t.Errorf("sqlite %+v", sq)
	}
	a := rep.Alerts
	if a.Probes != smokeAlerts || a.Measured != smokeAlerts || len(a.LatenciesMS) != smokeAlerts {
		t.Errorf("alerts: %d probes, %d measured (%v); want every alert probe's firing message", a.Probes, a.Measured, a.LatenciesMS)
	}
	for _, l := range a.LatenciesMS {
		if l < 0 {
			t.Errorf("alert latency %v ms", l)
		}
	}
	if a.SlackMessages[slackFiring] < smokeAlerts || a.SlackMessages[slackInvalid] != 0 {
		t.Errorf("Slack messages %v", a.SlackMessages)
	}
	// Scraped every second from start-up through the 6 s of warm-up and
	// window; the exposition holds every probe's series.
	if sc := rep.Scrapes; sc.EverySeconds != 1 || sc.Count < 4 || sc.Failed != 0 || sc.P50MS <= 0 || sc.MaxMS < sc.P50MS || sc.Bytes < 20*1000 {
		t.Errorf("scrapes %+v", sc)
	}
	if d := rep.Daemon; d.ExitCode != 0 || d.ErrorLines != 0 {
		t.Errorf("daemon %+v", d)
	}
	if rep.ProviderAnswers["connection_closed"] <= 0 || rep.ProviderAnswers["status_503"] <= 0 || rep.ProviderAnswers["results_map"] <= 0 {
		t.Errorf("provider answers %v", rep.ProviderAnswers)
	}
	// Closed answers cost a connection each; the rest are kept alive.
	if c := rep.ProviderConnections; c < rep.ProviderAnswers["connection_closed"] || c > int64(ops.ProviderRequests) {
		t.Errorf("%d connections for %d closed answers and %d requests", c, rep.ProviderAnswers["connection_closed"], ops.ProviderRequests)
	}
	if rep.Setup.JitterMS != 400 || rep.Setup.WarmupMS != 1000 || rep.Setup.MaxAttempts != 1 ||
		!slices.Equal(rep.Setup.DaemonEnv, []string{"GOMEMLIMIT=1GiB"}) {
		t.Errorf("setup %+v", rep.Setup)
	}
}

func isGzip(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b
}

func TestParseRunFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--probes", "0"},
		{"--interval", "1ms"},
		{"--duration", "0s"},
		{"--mix", "pass=1,flaky=2"},
		{"--mix", "pass=0"},
		{"--max-attempts", "11"},
		{"--alert-probes", "2", "--probes", "1"},
		{"--scrape-every", "-1s"},
		{"--daemon-env", "GOMEMLIMIT"},
		{"--daemon-env", "=1"},
		{"--kind", "grpc"},
		{"--kind", "mcp", "--mcp-era", "modern"},
		{"extra"},
	} {
		_, err := parseRunFlags(args, io.Discard)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	o, err := parseRunFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// toolpulse wants jitter < interval; the warm-up is jitter + interval.
	if o.probes != 1000 || o.interval != time.Second || o.jitter != 999*time.Millisecond ||
		o.warmup != 1999*time.Millisecond || o.duration != time.Minute || o.maxAttempts != 1 ||
		o.mix != (benchMix{Pass: 100}) || o.alertProbes != 5 || o.scrapeEvery != 15*time.Second ||
		o.kind != kindHTTP || o.mcpEra != mcpLegacy {
		t.Errorf("defaults: %+v", o)
	}
}

func TestAlertPlan(t *testing.T) {
	o := runOptions{loadOptions: loadOptions{probes: 100, interval: time.Second, duration: time.Minute}, alertProbes: 4}
	plan := alertPlan(o)
	seen := map[int]bool{}
	var last time.Duration
	for _, a := range plan {
		if seen[a.Probe] || a.Probe < 0 || a.Probe >= o.probes {
			t.Errorf("alert probe %d: repeated or out of range", a.Probe)
		}
		seen[a.Probe] = true
		// The flipped probe must still run, and alert, inside the window.
		if a.At <= last || a.At > o.duration-o.interval-5*time.Second {
			t.Errorf("flip at %s after %s", a.At, last)
		}
		last = a.At
	}
	if len(plan) != 4 {
		t.Errorf("%d alert probes, want 4", len(plan))
	}
}

// readReport reads the JSON report of a bench mode at path.
func readReport[R any](t *testing.T, path string) R {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep R
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rep
}
