package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/results"
)

// The `run` and `soak` modes share a session: a working directory, the
// toolpulse binary, the provider process, the Slack sink and the daemon.

// loadOptions are the flags `run` and `soak` share.
type loadOptions struct {
	probes         int
	interval       time.Duration
	jitter         time.Duration
	warmup         time.Duration // -1: jitter + interval
	duration       time.Duration
	mix            benchMix
	items          int
	responseBytes  int
	maxAttempts    int
	maxConcurrency int
	timeout        time.Duration
	consumer       string
	// kind is what the probes call: kindHTTP, kindMCP (a tool of an MCP
	// server of the provider's in era mcpEra) or kindSteps (three HTTP
	// steps a run).
	kind      string
	mcpEra    string
	toolpulse string
	keep      string
	jsonPath  string
	profile   string
	// buildFlags are extra `go build` flags for toolpulse (see
	// readOptions.buildFlags).
	buildFlags []string
	// daemonEnv are NAME=VALUE settings added to the daemon's
	// environment only, such as GOMEMLIMIT: the provider and the bench
	// keep theirs.
	daemonEnv envList
}

// envList is a repeatable NAME=VALUE flag.
type envList []string

func (l *envList) String() string { return strings.Join(*l, " ") }

func (l *envList) Set(v string) error {
	name, _, ok := strings.Cut(v, "=")
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	*l = append(*l, v)
	return nil
}

// register declares the shared flags on fs, with d's values as defaults.
func (o *loadOptions) register(fs *flag.FlagSet, d loadOptions) {
	*o = d
	fs.IntVar(&o.probes, "probes", d.probes, "probes in the config, each at a path of its own on the provider")
	fs.DurationVar(&o.interval, "interval", d.interval, "every probe's interval")
	fs.DurationVar(&o.jitter, "jitter", d.jitter, "every probe's start jitter; toolpulse needs it below the interval, so a jitter of a whole interval or more becomes the interval less 1ms")
	fs.DurationVar(&o.duration, "duration", d.duration, "how long to measure, after the warm-up")
	fs.Var(&o.mix, "mix", "the share of runs the provider answers with each outcome, as `pass=W,contract_error=W,unavailable=W` weights")
	fs.IntVar(&o.items, "items", d.items, "results in a passing answer")
	fs.IntVar(&o.responseBytes, "response-bytes", d.responseBytes, "about how long a passing answer is, in bytes (titles are padded to fit)")
	fs.IntVar(&o.maxAttempts, "max-attempts", d.maxAttempts, "retries.max_attempts of every probe; above 1, unavailable runs are retried and the provider sees more requests than runs")
	fs.IntVar(&o.maxConcurrency, "max-concurrency", d.maxConcurrency, "max_concurrency: runs in flight at once")
	fs.DurationVar(&o.timeout, "timeout", d.timeout, "every probe's per-attempt timeout")
	fs.StringVar(&o.kind, "kind", kindHTTP, "what the probes call: `http` (a JSON API), mcp (a tool of an MCP server, one session per run) or steps (three HTTP steps per run: create a job, confirm it by the id captured from create's answer, verify it; each answer about --response-bytes and judged by the consumer; --mix and --alert-probes decide the answer of the last step)")
	fs.StringVar(&o.mcpEra, "mcp-era", mcpLegacy, "with --kind mcp, the era the provider's MCP server speaks: `legacy` (2025-11-25: initialize, a session, DELETE) or stateless (2026-07-28)")
	fs.StringVar(&o.consumer, "consumer", d.consumer, "consumer `file` the probes use (default: the rules of consumers/select_results.yaml, built in)")
	fs.StringVar(&o.toolpulse, "toolpulse", d.toolpulse, "toolpulse `binary` to run (default: go build ./cmd/toolpulse into a temporary directory)")
	fs.StringVar(&o.keep, "keep", d.keep, "keep the config, database, provider spec and daemon log in `dir` (created; it must be empty)")
	fs.StringVar(&o.jsonPath, "json", d.jsonPath, "also write the results as JSON to `file`; - writes them on stdout instead of the table")
	fs.StringVar(&o.profile, "profile", d.profile, "write the daemon's CPU and heap profiles into `dir`")
	fs.Var(&o.daemonEnv, "daemon-env", "add `NAME=VALUE` to the daemon's environment, such as GOMEMLIMIT=120MiB (repeatable)")
}

func (o *loadOptions) validate() error {
	switch {
	case o.probes < 1:
		return fmt.Errorf("--probes must be at least 1, got %d", o.probes)
	case o.interval < 10*time.Millisecond:
		return fmt.Errorf("--interval must be at least 10ms, got %s", o.interval)
	case o.jitter < 0:
		return fmt.Errorf("--jitter must not be negative, got %s", o.jitter)
	case o.duration <= 0:
		return fmt.Errorf("--duration must be positive, got %s", o.duration)
	case o.items < 1:
		return fmt.Errorf("--items must be at least 1, got %d", o.items)
	case o.maxAttempts < 1 || o.maxAttempts > 10:
		return fmt.Errorf("--max-attempts must be between 1 and 10, got %d", o.maxAttempts)
	case o.maxConcurrency < 1:
		return fmt.Errorf("--max-concurrency must be at least 1, got %d", o.maxConcurrency)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout must be positive, got %s", o.timeout)
	case o.kind != kindHTTP && o.kind != kindMCP && o.kind != kindSteps:
		return fmt.Errorf("--kind must be http, mcp or steps, got %q", o.kind)
	case o.mcpEra != mcpLegacy && o.mcpEra != mcpStateless:
		return fmt.Errorf("--mcp-era must be legacy or stateless, got %q", o.mcpEra)
	}
	if o.jitter >= o.interval {
		o.jitter = o.interval - time.Millisecond
	}
	if o.warmup < 0 {
		o.warmup = o.jitter + o.interval
	}
	return nil
}

// Set parses --mix.
func (m *benchMix) Set(s string) error {
	v, err := parseMix(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// session is one daemon under load.
type session struct {
	opts loadOptions
	prog *progress
	// pg is the run's Postgres database with --store postgres, else nil.
	pg *pgRun
	// dir holds the config, the database, the provider's spec and the
	// daemon's log; it is removed at the end unless it is --keep.
	dir, removeDir string
	buildDir       string
	bin            string
	provider       *providerProc
	slack          *harness.Slack
	slackServer    *harness.Loopback
	slackURL       string
	daemon         *daemon
	listen         string
	cfgPath        string
	dbPath         string
	logPath        string
	consumer       harness.Consumer // the consumer's entry in the config
	consumerName   string
	names          []string // probe names, by the provider's probe index
	cpuProfile     string
	heapProfile    string
	client         *http.Client
}

// newSession prepares everything but the daemon: the directory, the
// toolpulse binary, the provider serving spec, and the Slack stand-in.
func newSession(ctx context.Context, o loadOptions, spec providerSpec, prog *progress) (s *session, err error) {
	s = &session{opts: o, prog: prog, client: &http.Client{Timeout: time.Minute}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.dir, s.removeDir, err = benchDir(o.keep); err != nil {
		return nil, err
	}
	s.cfgPath = filepath.Join(s.dir, "checks.yaml")
	s.dbPath = filepath.Join(s.dir, "toolpulse.db")
	s.logPath = filepath.Join(s.dir, "toolpulse.log")
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return nil, fmt.Errorf("--profile: %w", err)
		}
		abs, err := filepath.Abs(o.profile)
		if err != nil {
			return nil, err
		}
		s.cpuProfile, s.heapProfile = filepath.Join(abs, "cpu.pprof"), filepath.Join(abs, "heap.pprof")
	}
	if err := s.prepareConsumer(); err != nil {
		return nil, err
	}
	s.names = benchProbeNames(spec.Probes)

	if o.toolpulse != "" {
		s.bin = o.toolpulse
	} else {
		if s.buildDir, err = os.MkdirTemp("", "toolpulse-bench-build-"); err != nil {
			return nil, err
		}
		if s.bin, err = toolpulseBinary(ctx, readOptions{buildFlags: o.buildFlags}, s.buildDir, prog); err != nil {
			return nil, err
		}
	}
	spec.Kind = o.kind
	if o.kind == kindMCP {
		spec.MCPEra = o.mcpEra
	}
	prog.printf("starting the provider: %s paths (%s), %d items, mix %s", commas(int64(spec.Probes)), describeKind(o.kind, o.mcpEra), spec.Items, spec.Mix)
	if s.provider, err = startProvider(s.dir, spec); err != nil {
		return nil, err
	}
	s.slack = &harness.Slack{}
	if s.slackServer, err = harness.Listen(s.slack); err != nil {
		return nil, err
	}
	s.slackURL = s.slackServer.URL + "/services/bench"
	if s.listen, _, err = loopbackPorts(); err != nil {
		return nil, fmt.Errorf("a loopback port for the daemon: %w", err)
	}
	return s, nil
}

// describeKind says what the probes call, for the progress and the report.
func describeKind(kind, mcpEra string) string {
	switch kind {
	case kindMCP:
		return "MCP tool, " + mcpEra + " era, JSON answers"
	case kindSteps:
		return "three-step HTTP JSON API (create, confirm, verify)"
	}
	return "HTTP JSON API"
}

// benchProbeNames names n probes probe-0001 and on, in the provider's
// order.
func benchProbeNames(n int) []string {
	names := make([]string, n)
	width := max(4, len(strconv.Itoa(n)))
	for i := range names {
		names[i] = fmt.Sprintf("probe-%0*d", width, i+1)
	}
	return names
}

// makeEmptyDir creates dir, or accepts it when it exists and is empty:
// the bench must not mix its files with anything else.
func makeEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("--keep: %w", err)
	case len(entries) > 0:
		return &usageError{fmt.Errorf("--keep %s: the directory is not empty", dir)}
	}
	return nil
}

// The built-in consumer: the rules of consumers/select_results.yaml.
const (
	builtinConsumerName    = "select_results"
	builtinConsumerVersion = "2"
	builtinConsumerSelect  = `let raw = response.results;
(type(raw) == "array" ? raw
  : type(raw) == "map" && type(raw?.items) == "array" ? raw.items
  : fail("unsupported_results_container", "results is " + type(raw)))
| filter(.score >= 0.75)`
	builtinConsumerValidate = `type(.id) == "string" && type(.score) in ["int", "float"]`
)

var consumerNameLine = regexp.MustCompile(`(?m)^name:[ \t]*["']?([a-z0-9_.-]+)`)

// prepareConsumer makes the consumer's entry in the config: the built-in
// rules, or --consumer copied next to the config.
func (s *session) prepareConsumer() error {
	if s.opts.consumer == "" {
		s.consumer = harness.Consumer{Name: builtinConsumerName, Version: builtinConsumerVersion,
			Select: builtinConsumerSelect, Validate: builtinConsumerValidate}
		s.consumerName = builtinConsumerName
		return nil
	}
	b, err := os.ReadFile(s.opts.consumer)
	if err != nil {
		return &usageError{fmt.Errorf("--consumer: %w", err)}
	}
	m := consumerNameLine.FindSubmatch(b)
	if m == nil {
		return &usageError{fmt.Errorf("--consumer %s: no top-level name: in it", s.opts.consumer)}
	}
	if err := os.WriteFile(filepath.Join(s.dir, "consumer.yaml"), b, 0o644); err != nil {
		return err
	}
	s.consumer = harness.Consumer{File: "consumer.yaml"}
	s.consumerName = string(m[1])
	return nil
}

// writeConfig writes the daemon's config with the given probes (provider
// indexes). It replaces the file in one rename, so that a reload never
// reads half of it.
func (s *session) writeConfig(probes []int) error {
	o := s.opts
	cfg := harness.Config{
		Storage:        harness.Storage{Path: harness.Literal(s.dbPath), Retention: harness.Retain(0)},
		Server:         harness.Server{Listen: s.listen},
		MaxConcurrency: o.maxConcurrency,
		Defaults: harness.Defaults{Interval: o.interval, Jitter: o.jitter, Timeout: o.timeout,
			Retries: harness.Retries{MaxAttempts: o.maxAttempts}},
		Notify:    &harness.Notify{WebhookURL: harness.Literal(s.slackURL), FailureThreshold: 1},
		Consumers: []harness.Consumer{s.consumer},
	}
	for _, i := range probes {
		p := harness.Probe{Name: s.names[i], Consumer: s.consumerName}
		url := harness.Literal(s.provider.url(i))
		switch o.kind {
		case kindMCP:
			p.MCP = &harness.MCP{URL: url, Tool: benchToolName,
				Arguments: map[string]any{"query": "API migration guide"}}
		case kindSteps:
			// A probe with steps has a consumer on each step, none of its own.
			p.Steps, p.Consumer = benchSteps(url, s.consumerName), ""
		default:
			p.Request = harness.Request{Method: "POST", URL: url,
				JSON: map[string]any{"query": "API migration guide"}}
		}
		cfg.Probes = append(cfg.Probes, p)
	}
	yaml := cfg.YAML()
	if s.pg != nil {
		var err error
		if yaml, err = withPostgresStorage(yaml, s.pg.dsn); err != nil {
			return err
		}
	}
	tmp := s.cfgPath + ".new"
	if err := os.WriteFile(tmp, []byte(yaml), 0o644); err != nil {
		return fmt.Errorf("write the daemon's config: %w", err)
	}
	return os.Rename(tmp, s.cfgPath)
}

// stopAll stops the daemon, then the provider, and returns how the daemon
// ended: its exit code, how long it took to stop after SIGTERM and what
// it logged.
func (s *session) stopAll(prog *progress) (daemonHealth, error) {
	prog.printf("stopping toolpulse run")
	drain, err := s.stopDaemon()
	h := daemonHealth{
		ShutdownMS: ms(drain),
		ExitCode:   s.daemon.proc.ExitCode(),
		daemonLog:  scanDaemonLog(s.daemon.stderr.Bytes()),
	}
	if err != nil {
		return h, err
	}
	return h, s.provider.stop()
}

// startDaemon starts `toolpulse run` on the config and waits until its
// /healthz answers, returning when it did.
func (s *session) startDaemon(ctx context.Context) (time.Time, error) {
	args := []string{"-c", s.cfgPath, "run", "--grace", "5s", "--log-level", "warn", "--log-format", "json"}
	if s.cpuProfile != "" {
		args = append(args, "--cpu-profile", s.cpuProfile, "--heap-profile", s.heapProfile)
	}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return time.Time{}, err
	}
	d, err := startDaemon(ctx, s.bin, args, s.opts.daemonEnv, logFile)
	if err != nil {
		logFile.Close()
		return time.Time{}, err
	}
	go func() {
		<-d.exited()
		logFile.Close()
	}()
	s.daemon = d
	if _, err := d.waitHealthy(ctx, s.client, "http://"+s.listen+"/healthz"); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// waitUntil sleeps until t, and fails early if the daemon exits or ctx
// ends.
func (s *session) waitUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.daemon.exited():
		return s.daemonExited()
	}
}

func (s *session) daemonExited() error {
	return fmt.Errorf("toolpulse run exited during the measurement: %w", s.daemon.exitErr())
}

// metrics fetches the daemon's /metrics and sums each metric over its
// labels.
func (s *session) metrics(ctx context.Context) (map[string]float64, error) {
	resp, err := getOK(ctx, s.client, "http://"+s.listen+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body)
}

// getOK GETs url and returns the response if its status is 200 OK, and an
// error otherwise; the caller closes the body.
func getOK(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return resp, nil
}

// parseMetrics reads the Prometheus text format and sums every sample of
// each metric name, whatever its labels.
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			// Label values may hold spaces and braces; the value follows
			// the last closing brace.
			i := strings.LastIndexByte(rest, '}')
			if i < 0 {
				return nil, fmt.Errorf("metrics: unterminated labels in %q", line)
			}
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("metrics: no value in %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: %q: %w", line, err)
		}
		out[name] += v
	}
	return out, sc.Err()
}

// stopDaemon sends SIGTERM, waits for a clean exit and says how long the
// drain took.
func (s *session) stopDaemon() (time.Duration, error) {
	start := time.Now()
	err := s.daemon.stop()
	return time.Since(start), err
}

// close stops whatever still runs and removes what is not kept.
func (s *session) close() {
	if s.daemon != nil {
		_ = s.daemon.stop() // a failure was reported where it mattered
	}
	if s.provider != nil {
		_ = s.provider.stop()
	}
	if s.slackServer != nil {
		_ = s.slackServer.Close()
	}
	if s.buildDir != "" {
		os.RemoveAll(s.buildDir)
	}
	if s.removeDir != "" {
		os.RemoveAll(s.removeDir)
	}
}

// Kinds of Slack message, as the bench reports them.
const (
	slackFiring   = string(results.AlertFiring)
	slackResolved = string(results.AlertResolved)
	slackInvalid  = string(harness.KindInvalid)
)

// slackMessages counts the messages Slack got by kind.
func (s *session) slackMessages() map[string]int {
	out := map[string]int{}
	for k, n := range s.slack.Kinds() {
		out[string(k)] = n
	}
	return out
}

// firstFiringSince returns when the first firing alert of the probe at
// provider index i reached Slack at or after since (Unix ns), or 0.
func (s *session) firstFiringSince(i int, since int64) int64 {
	at := s.slack.FirstSince(s.names[i], results.AlertFiring, time.Unix(0, since))
	if at.IsZero() {
		return 0
	}
	return at.UnixNano()
}

// daemonLog sums up the daemon's log: toolpulse logs JSON lines, and in a
// clean run none of them is an error. A line that is not JSON (a panic, a
// runtime fault) counts as an error.
type daemonLog struct {
	ErrorLines  int      `json:"error_lines"`
	WarnLines   int      `json:"warn_lines"`
	FirstErrors []string `json:"first_errors"`
}

func scanDaemonLog(b []byte) daemonLog {
	out := daemonLog{FirstErrors: []string{}}
	for line := range bytes.Lines(b) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var entry struct {
			Level string `json:"level"`
		}
		isError := json.Unmarshal(line, &entry) != nil || entry.Level == "ERROR"
		if entry.Level == "WARN" {
			out.WarnLines++
		}
		if !isError {
			continue
		}
		out.ErrorLines++
		if len(out.FirstErrors) < 5 {
			text := string(line)
			if len(text) > 500 {
				text = text[:500] + "…"
			}
			out.FirstErrors = append(out.FirstErrors, text)
		}
	}
	return out
}

// dbFiles is the size of the database file and of its WAL.
func dbFiles(path string) (db, wal int64, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	db = fi.Size()
	if fi, err := os.Stat(path + "-wal"); err == nil {
		wal = fi.Size()
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, 0, err
	}
	return db, wal, nil
}
