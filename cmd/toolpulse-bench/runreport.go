package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// runReport is everything the run mode measured; --json writes it as is,
// and its field names are a contract.
type runReport struct {
	benchHeader             // mode "run"
	Toolpulse   string      `json:"toolpulse"`
	Setup       loadSetup   `json:"setup"`
	Window      benchWindow `json:"window"`
	// Operations are runs: completed is counted in the database.
	Operations opsCounts    `json:"operations"`
	CPU        cpuUse       `json:"cpu"`
	Memory     memUse       `json:"memory"`
	StartLag   startLag     `json:"start_lag"`
	SQLite     sqliteGrowth `json:"sqlite"`
	Alerts     alertLatency `json:"alerts"`
	Scrapes    scrapeStats  `json:"scrapes"`
	Daemon     daemonHealth `json:"daemon"`
	// ProviderAnswers counts what the provider answered, by kind, over
	// the whole bench.
	ProviderAnswers map[string]int64 `json:"provider_answers"`
	// ProviderConnections counts the connections the daemon opened to
	// the provider over the whole bench.
	ProviderConnections int64         `json:"provider_connections"`
	Profiles            *profilePaths `json:"profiles"` // null without --profile
	KeptIn              string        `json:"kept_in"`  // "" without --keep
}

// loadSetup is the load the daemon was given.
type loadSetup struct {
	Probes         int      `json:"probes"`
	IntervalMS     float64  `json:"interval_ms"`
	JitterMS       float64  `json:"jitter_ms"`
	WarmupMS       float64  `json:"warmup_ms"`
	DurationMS     float64  `json:"duration_ms"`
	TimeoutMS      float64  `json:"timeout_ms"`
	MaxAttempts    int      `json:"max_attempts"`
	MaxConcurrency int      `json:"max_concurrency"`
	Items          int      `json:"items"`
	ResponseBytes  int      `json:"response_bytes"` // of the passing answer, as served
	Mix            benchMix `json:"mix"`            // weights
	MixPercent     string   `json:"mix_percent"`
	AlertProbes    int      `json:"alert_probes"`
	Consumer       string   `json:"consumer"`
	// Kind is what the probes call: http, mcp (MCPEra says which era) or
	// steps.
	Kind   string `json:"kind"`
	MCPEra string `json:"mcp_era,omitempty"`
	// ExchangesPerRun is how many HTTP requests a passing run makes: 1
	// for http, 3 for steps, 6 or 3 for an MCP session by era.
	ExchangesPerRun int `json:"exchanges_per_run"`
	// Store is the daemon's store: sqlite, or postgres (run mode only).
	Store string `json:"store,omitempty"`
	// DaemonEnv is what --daemon-env added to the daemon's environment.
	DaemonEnv []string `json:"daemon_env"`
}

type benchWindow struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	Warmup  string    `json:"warmup"`
}

type opsCounts struct {
	// Expected is probes × window ÷ interval: every probe runs once per
	// interval on a phase of its own.
	Expected         int     `json:"expected"`
	Completed        int     `json:"completed"`
	CompletedPercent float64 `json:"completed_percent"`
	Missed           int     `json:"missed"`
	MissedPercent    float64 `json:"missed_percent"`
	PerSecond        float64 `json:"per_second"`
	Pass             int     `json:"pass"`
	ContractError    int     `json:"contract_error"`
	Unavailable      int     `json:"unavailable"`
	// ProviderRequests are the requests the provider received in the
	// window: the cross-check of Completed (more with retries).
	ProviderRequests int `json:"provider_requests"`
	// From the daemon's /metrics at the window's end.
	ResultsDropped int `json:"results_dropped"`
	StoreErrors    int `json:"store_errors"`
}

type cpuUse struct {
	DaemonSeconds     float64 `json:"daemon_seconds"`
	DaemonMicrosPerOp float64 `json:"daemon_us_per_op"`
	// DaemonMicrosPerExchange is DaemonMicrosPerOp divided by the setup's
	// exchanges per run: what compares other kinds with an HTTP run.
	DaemonMicrosPerExchange float64 `json:"daemon_us_per_exchange"`
	DaemonCores             float64 `json:"daemon_cores"`
	ProviderSeconds         float64 `json:"provider_seconds"`
	BenchSeconds            float64 `json:"bench_seconds"`
	// PostgresSeconds is the CPU of the Postgres server's processes over
	// the window with --store postgres (the postmaster and its children,
	// those reaped included), 0 with SQLite.
	PostgresSeconds     float64 `json:"postgres_seconds"`
	PostgresMicrosPerOp float64 `json:"postgres_us_per_op"`
	// MachineBusyCores is the whole machine's CPU use over the window
	// (/proc/stat), and OtherCores what neither the daemon, the provider
	// nor the bench used of it: a shared machine's other work, which
	// makes every number here pessimistic.
	MachineBusyCores float64 `json:"machine_busy_cores"`
	OtherCores       float64 `json:"other_cores"`
	// LoadAverage is the one-minute load average at the window's end.
	LoadAverage float64 `json:"load_average"`
}

type memUse struct {
	// PeakRSSBytes is VmHWM read just before the stop: the peak over the
	// daemon's whole life, start-up included.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	EndRSSBytes  int64 `json:"end_rss_bytes"`
	Threads      int   `json:"threads"`
}

type sqliteGrowth struct {
	StartBytes  int64   `json:"start_bytes"`
	EndBytes    int64   `json:"end_bytes"`
	GrowthBytes int64   `json:"growth_bytes"`
	Operations  int     `json:"operations"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	Method      string  `json:"method"`
}

type alertLatency struct {
	Probes        int            `json:"probes"`
	Measured      int            `json:"measured"`
	P50MS         *float64       `json:"p50_ms"`
	MaxMS         *float64       `json:"max_ms"`
	LatenciesMS   []float64      `json:"latencies_ms"`
	SlackMessages map[string]int `json:"slack_messages"`
}

type daemonHealth struct {
	ExitCode   int     `json:"exit_code"`
	ShutdownMS float64 `json:"shutdown_ms"`
	daemonLog
}

type profilePaths struct {
	CPU         string `json:"cpu"`
	Heap        string `json:"heap"`
	CPUCommand  string `json:"cpu_command"`
	HeapCommand string `json:"heap_command"`
}

func newRunReport(o runOptions, s *session) *runReport {
	rep := &runReport{
		benchHeader: newBenchHeader("run"),
		Toolpulse:   s.bin,
		Setup:       newLoadSetup(o.loadOptions, s),
		Profiles:    s.profilePaths(),
	}
	rep.Setup.AlertProbes = o.alertProbes
	rep.Setup.Store = o.store
	if o.keep != "" {
		rep.KeptIn = s.dir
	}
	return rep
}

func newLoadSetup(o loadOptions, s *session) loadSetup {
	consumer := "built-in select_results (the rules of consumers/select_results.yaml)"
	if o.consumer != "" {
		consumer = o.consumer
	}
	st := loadSetup{
		Probes: o.probes, IntervalMS: ms(o.interval), JitterMS: ms(o.jitter), WarmupMS: ms(o.warmup),
		DurationMS: ms(o.duration), TimeoutMS: ms(o.timeout), MaxAttempts: o.maxAttempts,
		MaxConcurrency: o.maxConcurrency, Items: o.items,
		ResponseBytes: len(cannedAnswers(o.items, o.responseBytes)[answerPass].body),
		Mix:           o.mix, MixPercent: o.mix.String(), Consumer: consumer,
		DaemonEnv:       append([]string{}, o.daemonEnv...),
		Kind:            o.kind,
		ExchangesPerRun: exchangesPerRun(o.kind, o.mcpEra),
	}
	if o.kind == kindMCP {
		st.MCPEra = o.mcpEra
	}
	return st
}

func (s *session) profilePaths() *profilePaths {
	if s.cpuProfile == "" {
		return nil
	}
	return &profilePaths{
		CPU: s.cpuProfile, Heap: s.heapProfile,
		CPUCommand:  "go tool pprof -top " + s.cpuProfile,
		HeapCommand: "go tool pprof -top -sample_index=inuse_space " + s.heapProfile,
	}
}

func marshalReport(rep any) ([]byte, error) {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the report: %w", err)
	}
	return append(b, '\n'), nil
}

// writeBenchTable prints a report for a person.
func writeBenchTable(w io.Writer, rep any) error {
	switch r := rep.(type) {
	case *runReport:
		return writeRunTable(w, r)
	case *soakReport:
		return writeSoakTable(w, r)
	case *peerReport:
		return writePeerTable(w, r)
	}
	return fmt.Errorf("no table for %T", rep)
}

// writeHeader prints the lines every load report starts with.
func writeHeader(tw io.Writer, h benchHeader, bin string, st loadSetup) {
	h.writeLines(tw)
	fmt.Fprintf(tw, "toolpulse\t%s\n", bin)
	fmt.Fprintf(tw, "probes\t%s every %s, jitter %s, timeout %s, max_attempts %d, max_concurrency %d\n",
		commas(int64(st.Probes)), msDuration(st.IntervalMS), msDuration(st.JitterMS), msDuration(st.TimeoutMS),
		st.MaxAttempts, st.MaxConcurrency)
	fmt.Fprintf(tw, "provider\t%s; %d items, %s per passing answer; mix %s\n", describeKind(st.Kind, st.MCPEra), st.Items, humanBytes(int64(st.ResponseBytes)), st.MixPercent)
	fmt.Fprintf(tw, "consumer\t%s\n", st.Consumer)
	if len(st.DaemonEnv) > 0 {
		fmt.Fprintf(tw, "daemon env\t%s\n", strings.Join(st.DaemonEnv, " "))
	}
}

func writeRunTable(w io.Writer, r *runReport) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	writeHeader(tw, r.benchHeader, r.Toolpulse, r.Setup)
	fmt.Fprintf(tw, "window\t%s, after a warm-up of %s\n", msDuration(r.Window.Seconds*1000), r.Window.Warmup)
	fmt.Fprintln(tw)
	ops := r.Operations
	row := func(name, value, note string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", name, value, note) }
	row("measurement", "value", "how")
	row("runs completed", fmt.Sprintf("%s of %s expected (%.2f %%)", commas(int64(ops.Completed)), commas(int64(ops.Expected)), ops.CompletedPercent),
		"results in the database started in the window; expected = probes × window ÷ interval")
	row("missed runs", fmt.Sprintf("%s (%.2f %%)", commas(int64(ops.Missed)), ops.MissedPercent), "expected − completed")
	row("outcomes", fmt.Sprintf("pass %s, contract_error %s, unavailable %s", commas(int64(ops.Pass)), commas(int64(ops.ContractError)), commas(int64(ops.Unavailable))), "")
	arrivals := "arrivals"
	switch r.Setup.Kind {
	case kindMCP:
		arrivals = "sessions (each one's first request)"
	case kindSteps:
		arrivals = "runs (each one's first step)"
	}
	row("provider requests", commas(int64(ops.ProviderRequests)), fmt.Sprintf("%s in the window; %d ticks skipped between runs", arrivals, r.StartLag.SkippedTicks))
	row("throughput", fmt.Sprintf("%.1f runs/s", ops.PerSecond), "")
	row("connections", commas(r.ProviderConnections), "TCP connections the daemon opened to the provider, warm-up and closed answers included")
	row("daemon CPU", fmt.Sprintf("%.2f s, %.0f µs per run, %.2f cores", r.CPU.DaemonSeconds, r.CPU.DaemonMicrosPerOp, r.CPU.DaemonCores),
		"utime + stime from /proc/PID/stat over the window")
	if n := r.Setup.ExchangesPerRun; n > 1 {
		row("daemon CPU per exchange", fmt.Sprintf("%.0f µs, %d exchanges a run", r.CPU.DaemonMicrosPerExchange, n),
			"CPU per run ÷ the HTTP requests a passing run makes: what compares this kind with an HTTP probe's run")
	}
	if r.Setup.Store == "postgres" {
		row("Postgres CPU", fmt.Sprintf("%.2f s, %.0f µs per run", r.CPU.PostgresSeconds, r.CPU.PostgresMicrosPerOp),
			"the server's processes (postmaster, backends, writers) from /proc over the window")
	}
	row("provider, bench CPU", fmt.Sprintf("%.2f s, %.2f s", r.CPU.ProviderSeconds, r.CPU.BenchSeconds), "the load generator and the Slack sink, same window")
	row("machine CPU", fmt.Sprintf("%.2f of %d cores busy, %.2f by other processes; load average %.2f", r.CPU.MachineBusyCores, r.NumCPU, r.CPU.OtherCores, r.CPU.LoadAverage),
		"/proc/stat over the window; other work on the machine makes every number here pessimistic")
	row("daemon memory", fmt.Sprintf("peak %s, end %s, %d threads", humanBytes(r.Memory.PeakRSSBytes), humanBytes(r.Memory.EndRSSBytes), r.Memory.Threads),
		"VmHWM (whole life) and VmRSS, read before the stop")
	lag := r.StartLag
	row("start lag", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms", lag.P50MS, lag.P99MS, lag.MaxMS),
		fmt.Sprintf("%s runs; arrival − (phase + k × interval), at the provider", commas(int64(lag.Runs))))
	sq := r.SQLite
	growth := "SQLite growth"
	if r.Setup.Store == "postgres" {
		growth = "Postgres growth"
	}
	row(growth, fmt.Sprintf("%.0f B per run", sq.BytesPerOp),
		fmt.Sprintf("%s over %s results (%s → %s)", signedBytes(sq.GrowthBytes), commas(int64(sq.Operations)), humanBytes(sq.StartBytes), humanBytes(sq.EndBytes)))
	a := r.Alerts
	if a.Measured > 0 {
		row("alert latency", fmt.Sprintf("p50 %.1f ms, max %.1f ms", *a.P50MS, *a.MaxMS),
			fmt.Sprintf("%d of %d alert probes; first failing answer served → firing message at the Slack sink", a.Measured, a.Probes))
	} else {
		row("alert latency", "n/a", fmt.Sprintf("0 of %d alert probes measured", a.Probes))
	}
	row("Slack messages", slackCounts(a.SlackMessages), "")
	if sc := r.Scrapes; sc.EverySeconds > 0 {
		row("/metrics scrapes", fmt.Sprintf("%d, p50 %.1f ms, max %.1f ms, %s each, %d failed", sc.Count, sc.P50MS, sc.MaxMS, humanBytes(sc.Bytes), sc.Failed),
			fmt.Sprintf("every %s from start-up, as Prometheus would; their CPU and memory are in the numbers above", msDuration(sc.EverySeconds*1000)))
	} else {
		row("/metrics scrapes", "none", "--scrape-every 0")
	}
	d := r.Daemon
	row("daemon", fmt.Sprintf("exit %d, stopped %s after SIGTERM, %d error lines, %d warnings", d.ExitCode, msDuration(d.ShutdownMS).Round(time.Millisecond), d.ErrorLines, d.WarnLines), "")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s: %s.\n", growth, sq.Method)
	if r.CPU.OtherCores > busyMachine {
		fmt.Fprintf(w, "\nwarning: other processes kept %.2f cores busy during the window: the machine was shared, and these numbers are worse than the daemon alone would show.\n", r.CPU.OtherCores)
	}
	writeFooter(w, r.Profiles, r.KeptIn)
	return nil
}

// busyMachine is the CPU use by other processes, in cores, above which
// the report warns that the machine was not the daemon's.
const busyMachine = 0.25

func writeFooter(w io.Writer, p *profilePaths, kept string) {
	if p != nil {
		fmt.Fprintf(w, "\nprofiles (CPU: the whole run; heap: when SIGTERM arrived, after a GC):\n  %s\n  %s\n", p.CPUCommand, p.HeapCommand)
	}
	if kept != "" {
		fmt.Fprintf(w, "\nkept in %s: checks.yaml, toolpulse.db, toolpulse.log (the daemon's stderr), provider.json\n", kept)
	}
}

// slackCounts prints message counts by kind, in a fixed order.
func slackCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %s", k, commas(int64(m[k])))
	}
	return strings.Join(parts, ", ")
}

func msDuration(v float64) time.Duration {
	return time.Duration(v * float64(time.Millisecond))
}

func signedBytes(n int64) string {
	if n < 0 {
		return "−" + humanBytes(-n)
	}
	return humanBytes(n)
}
