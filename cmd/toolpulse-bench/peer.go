package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/toolpulse/toolpulse/internal/harness"
)

// The peer mode measures Gatus, the closest open peer, under the load that
// `run` gives toolpulse: the same provider process and answers, probes at
// paths of their own, CPU and memory read from /proc over a window after a
// warm-up. Gatus keeps no history that the bench could count, so its
// checks are the provider's arrivals; it does not retry, so each arrival
// is one check. Alternate it with `run` in one sitting: only ratios of
// one sitting compare.

// gatusStagger is how long Gatus waits between starting one endpoint's
// monitor and the next (watchdog.Monitor in v5.36): 1,000 endpoints take
// 222 s to be all running.
const gatusStagger = 222 * time.Millisecond

// peerOptions are the flags of the peer mode.
type peerOptions struct {
	gatus         string
	probes        int
	interval      time.Duration
	warmup        time.Duration // -1: every endpoint started, then an interval and a second
	duration      time.Duration
	items         int
	responseBytes int
	concurrency   int
	storage       string // memory or sqlite
	keep          string
	jsonPath      string
}

func parsePeerFlags(args []string, stderr io.Writer) (peerOptions, error) {
	o := peerOptions{probes: 100, interval: time.Second, warmup: -1, duration: time.Minute,
		items: 20, responseBytes: 2048}
	fs := flag.NewFlagSet("peer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.gatus, "gatus", "", "the Gatus `binary` to measure (required), such as one built by go build in a checkout of its tag v5.36.0")
	fs.IntVar(&o.probes, "probes", o.probes, "endpoints in Gatus's config, each at a path of its own on the provider")
	fs.DurationVar(&o.interval, "interval", o.interval, "every endpoint's interval")
	fs.DurationVar(&o.warmup, "warmup", o.warmup, "how long Gatus runs before the measurement starts (default: probes × 222ms, Gatus's start stagger, plus the interval and 1s)")
	fs.DurationVar(&o.duration, "duration", o.duration, "how long to measure, after the warm-up")
	fs.IntVar(&o.items, "items", o.items, "results in an answer")
	fs.IntVar(&o.responseBytes, "response-bytes", o.responseBytes, "about how long an answer is, in bytes")
	fs.IntVar(&o.concurrency, "concurrency", o.concurrency, "Gatus's concurrency: endpoints evaluated at once (0: unlimited; Gatus's own default is 3)")
	fs.StringVar(&o.storage, "storage", "memory", "Gatus's store: `memory` (its default) or sqlite (a file in the bench's directory, as toolpulse keeps every run)")
	fs.StringVar(&o.keep, "keep", "", "keep Gatus's config and log and the provider's spec in `dir` (created; it must be empty)")
	fs.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to `file`; - writes them on stdout instead of the table")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: toolpulse-bench peer --gatus BIN [flags]

Runs Gatus on generated endpoints against the loopback provider of run,
with the same answers, and measures over --duration after a warm-up: checks
per second, Gatus's CPU per check, memory and start lag. Each endpoint POSTs
the query run's probes send and checks what Gatus can of the answer: the
status, a non-empty results list and the first result's id.

`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	switch {
	case o.gatus == "":
		return o, &usageError{errors.New("--gatus is required")}
	case o.probes < 1:
		return o, &usageError{fmt.Errorf("--probes must be at least 1, got %d", o.probes)}
	case o.interval < 10*time.Millisecond:
		return o, &usageError{fmt.Errorf("--interval must be at least 10ms, got %s", o.interval)}
	case o.duration <= 0:
		return o, &usageError{fmt.Errorf("--duration must be positive, got %s", o.duration)}
	case o.items < 1:
		return o, &usageError{fmt.Errorf("--items must be at least 1, got %d", o.items)}
	case o.storage != "memory" && o.storage != "sqlite":
		return o, &usageError{fmt.Errorf("--storage must be memory or sqlite, got %q", o.storage)}
	case o.concurrency < 0:
		return o, &usageError{fmt.Errorf("--concurrency must not be negative, got %d", o.concurrency)}
	}
	if o.warmup < 0 {
		o.warmup = time.Duration(o.probes)*gatusStagger + o.interval + time.Second
	}
	return o, nil
}

// peerReport is what the peer mode measured; --json writes it as is.
type peerReport struct {
	benchHeader        // mode "peer"
	Gatus       string `json:"gatus"`
	Setup       struct {
		Probes        int      `json:"probes"`
		IntervalMS    float64  `json:"interval_ms"`
		WarmupMS      float64  `json:"warmup_ms"`
		DurationMS    float64  `json:"duration_ms"`
		Concurrency   int      `json:"concurrency"`
		Storage       string   `json:"storage"`
		Items         int      `json:"items"`
		ResponseBytes int      `json:"response_bytes"`
		Conditions    []string `json:"conditions"`
	} `json:"setup"`
	Window benchWindow `json:"window"`
	Checks struct {
		// Expected is probes × window ÷ interval; Completed the
		// provider's arrivals in the window.
		Expected         int     `json:"expected"`
		Completed        int     `json:"completed"`
		CompletedPercent float64 `json:"completed_percent"`
		PerSecond        float64 `json:"per_second"`
	} `json:"checks"`
	CPU struct {
		PeerSeconds         float64 `json:"peer_seconds"`
		PeerMicrosPerOp     float64 `json:"peer_us_per_check"`
		PeerCores           float64 `json:"peer_cores"`
		ProviderSeconds     float64 `json:"provider_seconds"`
		MachineBusyCores    float64 `json:"machine_busy_cores"`
		OtherCores          float64 `json:"other_cores"`
		LoadAverage         float64 `json:"load_average"`
		ProviderMicrosPerOp float64 `json:"provider_us_per_check"`
	} `json:"cpu"`
	Memory              memUse           `json:"memory"`
	StartLag            startLag         `json:"start_lag"`
	ProviderAnswers     map[string]int64 `json:"provider_answers"`
	ProviderConnections int64            `json:"provider_connections"`
	KeptIn              string           `json:"kept_in"`
}

// gatusConditions are what each endpoint checks: the nearest Gatus comes
// to the consumer of run's probes, which keeps results scored at least
// 0.75 and validates each (Gatus compares numbers as integers, so a score
// cannot be checked).
var gatusConditions = []string{
	"[STATUS] == 200",
	"len([BODY].results) > 0",
	"[BODY].results[0].id == doc_00001",
}

func runPeerMode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parsePeerFlags(args, stderr)
	if err != nil {
		return err
	}
	rep, err := benchPeer(ctx, o, newProgress(stderr))
	if rep != nil {
		if werr := writeRunOutput(stdout, o.jsonPath, rep); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// benchPeer runs the peer mode. Like benchRun, it returns the report
// whenever the measurement completed.
func benchPeer(ctx context.Context, o peerOptions, prog *progress) (*peerReport, error) {
	dir, remove, err := benchDir(o.keep)
	if err != nil {
		return nil, err
	}
	if remove != "" {
		defer os.RemoveAll(remove)
	}

	spec := providerSpec{Probes: o.probes, Items: o.items, ResponseBytes: o.responseBytes,
		Mix: benchMix{Pass: 100}, Kind: kindHTTP,
		Capacity: arrivalCapacity(loadOptions{warmup: o.warmup, duration: o.duration, interval: o.interval})}
	prog.printf("starting the provider: %s paths (%s), %d items", commas(int64(o.probes)), describeKind(kindHTTP, ""), o.items)
	provider, err := startProvider(dir, spec)
	if err != nil {
		return nil, err
	}
	defer provider.stop()

	listen, _, err := loopbackPorts()
	if err != nil {
		return nil, fmt.Errorf("a loopback port for Gatus: %w", err)
	}
	cfgPath := filepath.Join(dir, "gatus.yaml")
	if err := os.WriteFile(cfgPath, gatusConfig(o, listen, filepath.Join(dir, "gatus.db"), provider.url), 0o644); err != nil {
		return nil, fmt.Errorf("write Gatus's config: %w", err)
	}
	logFile, err := os.Create(filepath.Join(dir, "gatus.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	prog.printf("starting Gatus: %s endpoints every %s, concurrency %d", commas(int64(o.probes)), o.interval, o.concurrency)
	peer, err := harness.Start(ctx, harness.Command{Bin: o.gatus, Output: logFile, StopTimeout: stopTimeout,
		Env: []string{"GATUS_CONFIG_PATH=" + cfgPath, "GATUS_LOG_LEVEL=WARN"}})
	if err != nil {
		return nil, fmt.Errorf("start Gatus: %w", err)
	}
	defer peer.Kill()
	client := &http.Client{Timeout: time.Minute}
	if err := waitPeerHealthy(ctx, peer, client, "http://"+listen+"/health"); err != nil {
		return nil, err
	}

	rep := &peerReport{benchHeader: newBenchHeader("peer"), Gatus: o.gatus}
	st := &rep.Setup
	st.Probes, st.Concurrency, st.Storage, st.Items, st.Conditions = o.probes, o.concurrency, o.storage, o.items, gatusConditions
	st.IntervalMS, st.WarmupMS, st.DurationMS = ms(o.interval), ms(o.warmup), ms(o.duration)
	st.ResponseBytes = spec.ResponseBytes
	if o.keep != "" {
		rep.KeptIn = dir
	}

	w0 := time.Now().Add(o.warmup)
	w1 := w0.Add(o.duration)
	prog.printf("warming up for %s", o.warmup)
	if err := sleepUntil(ctx, peer, w0); err != nil {
		return nil, err
	}
	start, err := readPeerEdge(peer.Pid(), provider.pid())
	if err != nil {
		return nil, err
	}
	prog.printf("measuring for %s", o.duration)
	if err := sleepUntil(ctx, peer, w1); err != nil {
		return nil, err
	}
	end, err := readPeerEdge(peer.Pid(), provider.pid())
	if err != nil {
		return nil, err
	}
	pr, err := provider.collect(ctx)
	if err != nil {
		return nil, err
	}
	prog.printf("stopping Gatus")
	if err := peer.Stop(syscall.SIGTERM, stopTimeout); err != nil && !errors.Is(err, harness.ErrNoExit) {
		// Gatus may exit non-zero on SIGTERM; the measurement stands.
		prog.printf("Gatus: %v", err)
	}
	if err := provider.stop(); err != nil {
		return nil, err
	}

	rep.Window = benchWindow{Start: w0.UTC(), End: w1.UTC(), Seconds: o.duration.Seconds(),
		Warmup: fmt.Sprintf("%s from /health answering 200", o.warmup)}
	c := &rep.Checks
	c.Expected = int(float64(o.probes) * o.duration.Seconds() / o.interval.Seconds())
	c.Completed = countArrivals(pr.Arrivals, w0.UnixNano(), w1.UnixNano())
	c.PerSecond = float64(c.Completed) / o.duration.Seconds()
	if c.Expected > 0 {
		c.CompletedPercent = 100 * float64(c.Completed) / float64(c.Expected)
	}
	cpu := &rep.CPU
	elapsed := end.at.Sub(start.at).Seconds()
	cpu.PeerSeconds = (end.daemon.CPU - start.daemon.CPU).Seconds()
	cpu.ProviderSeconds = (end.provider.CPU - start.provider.CPU).Seconds()
	cpu.PeerCores = cpu.PeerSeconds / elapsed
	cpu.MachineBusyCores = (end.machine.Busy - start.machine.Busy).Seconds() / elapsed
	benchSeconds := (end.bench.CPU - start.bench.CPU).Seconds()
	cpu.OtherCores = max(cpu.MachineBusyCores-(cpu.PeerSeconds+cpu.ProviderSeconds+benchSeconds)/elapsed, 0)
	cpu.LoadAverage = loadAverage()
	if c.Completed > 0 {
		cpu.PeerMicrosPerOp = cpu.PeerSeconds * 1e6 / float64(c.Completed)
		cpu.ProviderMicrosPerOp = cpu.ProviderSeconds * 1e6 / float64(c.Completed)
	}
	rep.Memory = memUse{PeakRSSBytes: end.daemon.HWM, EndRSSBytes: end.daemon.RSS, Threads: end.daemon.Threads}
	rep.StartLag = startLags(pr.Arrivals, o.interval, w0.UnixNano(), w1.UnixNano())
	rep.ProviderAnswers, rep.ProviderConnections = pr.Served, pr.Connections
	if c.Completed == 0 {
		return rep, errors.New("the provider saw no check in the window: see Gatus's log (--keep)")
	}
	return rep, nil
}

// benchDir makes a mode's working directory: keep, created empty, or a
// temporary directory, which is then also remove (else remove is "").
func benchDir(keep string) (dir, remove string, err error) {
	if keep != "" {
		if err := makeEmptyDir(keep); err != nil {
			return "", "", err
		}
		dir, err = filepath.Abs(keep)
		return dir, "", err
	}
	if dir, err = os.MkdirTemp("", "toolpulse-bench-"); err != nil {
		return "", "", err
	}
	return dir, dir, nil
}

// gatusConfig is Gatus's config: the store (with sqlite, the file db), no
// metrics, the web server on listen, and one endpoint per provider path,
// each POSTing the query of run's probes.
func gatusConfig(o peerOptions, listen, db string, url func(int) string) []byte {
	host, port, _ := strings.Cut(listen, ":")
	var b bytes.Buffer
	fmt.Fprintf(&b, "metrics: false\nconcurrency: %d\nstorage:\n  type: %s\n", o.concurrency, o.storage)
	if o.storage == "sqlite" {
		fmt.Fprintf(&b, "  path: %s\n", strconv.Quote(db))
	}
	fmt.Fprintf(&b, "web:\n  address: %s\n  port: %s\nendpoints:\n", host, port)
	names := benchProbeNames(o.probes)
	for i, name := range names {
		fmt.Fprintf(&b, "  - name: %s\n    url: %s\n    method: POST\n", name, strconv.Quote(url(i)))
		fmt.Fprintf(&b, "    headers:\n      Content-Type: application/json\n    body: '{\"query\":\"API migration guide\"}'\n")
		fmt.Fprintf(&b, "    interval: %s\n    conditions:\n", o.interval)
		for _, c := range gatusConditions {
			fmt.Fprintf(&b, "      - %s\n", strconv.Quote(c))
		}
	}
	return b.Bytes()
}

// waitPeerHealthy polls url until Gatus answers 200.
func waitPeerHealthy(ctx context.Context, p *harness.Process, client *http.Client, url string) error {
	deadline := time.NewTimer(healthTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if status, _, err := get(ctx, client, url); err == nil && status == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.Exited():
			return fmt.Errorf("Gatus exited before it was healthy: %v (see its log with --keep)", p.Err())
		case <-deadline.C:
			return fmt.Errorf("Gatus not healthy after %s", healthTimeout)
		case <-tick.C:
		}
	}
}

// sleepUntil sleeps until t, and fails early if p exits or ctx ends.
func sleepUntil(ctx context.Context, p *harness.Process, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.Exited():
		return fmt.Errorf("Gatus exited during the measurement: %v", p.Err())
	}
}

// readPeerEdge reads the processes at one end of the window; the peer
// takes the daemon's place.
func readPeerEdge(peer, provider int) (windowEdge, error) {
	e := windowEdge{at: time.Now()}
	var err error
	if e.machine, err = readMachineCPU(); err != nil {
		return e, err
	}
	if e.daemon, err = readProcStat(peer); err != nil {
		return e, fmt.Errorf("Gatus's /proc: %w", err)
	}
	if e.provider, err = readProcStat(provider); err != nil {
		return e, fmt.Errorf("the provider's /proc: %w", err)
	}
	if e.bench, err = readProcStat(0); err != nil {
		return e, fmt.Errorf("the bench's /proc: %w", err)
	}
	return e, nil
}

func writePeerTable(w io.Writer, r *peerReport) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	r.benchHeader.writeLines(tw)
	st := r.Setup
	fmt.Fprintf(tw, "gatus\t%s\n", r.Gatus)
	fmt.Fprintf(tw, "endpoints\t%s every %s, concurrency %d, %s store\n", commas(int64(st.Probes)), msDuration(st.IntervalMS), st.Concurrency, st.Storage)
	fmt.Fprintf(tw, "provider\t%s; %d items, %s per answer\n", describeKind(kindHTTP, ""), st.Items, humanBytes(int64(st.ResponseBytes)))
	fmt.Fprintf(tw, "conditions\t%s\n", strings.Join(st.Conditions, ", "))
	fmt.Fprintf(tw, "window\t%s, after a warm-up of %s\n", msDuration(r.Window.Seconds*1000), r.Window.Warmup)
	fmt.Fprintln(tw)
	row := func(name, value, note string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", name, value, note) }
	c, cpu := r.Checks, r.CPU
	row("measurement", "value", "how")
	row("checks", fmt.Sprintf("%s of %s expected (%.2f %%), %.1f/s", commas(int64(c.Completed)), commas(int64(c.Expected)), c.CompletedPercent, c.PerSecond),
		"the provider's arrivals in the window; expected = endpoints × window ÷ interval")
	row("Gatus CPU", fmt.Sprintf("%.0f µs per check, %.3f cores", cpu.PeerMicrosPerOp, cpu.PeerCores), "utime+stime from /proc/PID/stat over the window")
	row("provider CPU", fmt.Sprintf("%.0f µs per check", cpu.ProviderMicrosPerOp), "")
	row("machine", fmt.Sprintf("%.2f cores busy, %.2f by others, load %.2f", cpu.MachineBusyCores, cpu.OtherCores, cpu.LoadAverage), "/proc/stat; others = busy − Gatus − provider − bench")
	row("memory", fmt.Sprintf("peak RSS %s, end RSS %s, %d threads", humanBytes(r.Memory.PeakRSSBytes), humanBytes(r.Memory.EndRSSBytes), r.Memory.Threads), "VmHWM, VmRSS")
	l := r.StartLag
	row("start lag", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d skipped ticks", l.P50MS, l.P99MS, l.MaxMS, l.SkippedTicks), "arrivals against each endpoint's phase")
	row("connections", commas(r.ProviderConnections), "opened to the provider over the whole bench")
	return tw.Flush()
}
