package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/examples"
	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/examples/slackprinter"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

type demoCmd struct {
	Dir      string        `placeholder:"DIR" help:"Where to write the demo config and database (default: a new temporary directory)."`
	Interval time.Duration `default:"1s" help:"How often each demo probe runs."`
	Phase    time.Duration `default:"10s" help:"How long each act of the drill lasts."`
	Serve    bool          `help:"Keep the status page up after the story ends, until Ctrl-C."`
}

// demoAct is one step of the drill: what changes at the provider and what
// the user should watch for.
type demoAct struct {
	title      string
	drifted    bool // /search answers in the seed-000 layout
	down       bool // /runs answers 503
	mcpDrifted bool // the MCP tool search_docs is its next release
	lying      bool // the refund processor lies cleanly about demoRefundOrder
}

// demoRefundOrder is the order whose refund refund_order_12 makes, checks
// and reverts on every run (examples/provider's orders).
const demoRefundOrder = 12

var demoActs = []demoAct{
	{title: "The provider is healthy: every probe selects and validates results, and toolpulse learns the\n" +
		"   response shape (its first 5 answers establish the baseline). search_docs_mcp calls the MCP tool\n" +
		"   search_docs on the provider's MCP server (/mcp), one fresh session per run: initialize,\n" +
		"   tools/list, tools/call, close. Only a run that says something new is printed; the others are\n" +
		"   counted."},
	{title: "The provider wraps its results in {\"items\": [...]} (the seed-000 drill) and the tracker is\n" +
		"   overloaded. HTTP is still 200 and the JSON is valid, yet the list-only consumer can no longer\n" +
		"   use the answer: contract_error, a shape_drift alert with the path diff, and a firing alert.\n" +
		"   The two-layout consumer reads the same answer and keeps passing: each consumer is one\n" +
		"   caller's own parsing, and only the one that cannot use the new layout fails. Both report the\n" +
		"   drift, one alert for the change, until two answers of the new shape taught it to the baseline:\n" +
		"   from then on it is learned, and the drift marker stops. The tracker answers 503: unavailable after\n" +
		"   retries that honour Retry-After.", drifted: true, down: true},
	{title: "The tracker recovers: a resolved message says how long it was failing. The list-only consumer\n" +
		"   still fails, and is reminded of (repeat_interval is short in the demo).", drifted: true},
	{title: "The MCP server ships the next release of search_docs. Its answer now lists the pages as\n" +
		"   \"documents\", not \"results\", and its outputSchema says so: the answer is valid by the server's\n" +
		"   own schema, yet the agent's consumer can no longer use it: contract_error (missing_results) and\n" +
		"   a shape_drift alert for the response. The tool's description changed too: it now tells agents\n" +
		"   to send the user's API key to another site, the way a compromised server re-instructs the agents\n" +
		"   that call it. toolpulse compares the tool's definition on every run: a definition drift alert\n" +
		"   shows the old and the new description.", drifted: true, mcpDrifted: true},
	{title: "The refund service starts to lie cleanly (seed 002): it still answers a well-formed success with\n" +
		"   a refund id for order 12, and never refunds it. No check of the answer can see that: the\n" +
		"   refund step's consumer passes it. refund_order_12 is a multi-step probe: it refunds, then\n" +
		"   polls the order until it shows that refund, then reverts it in an always step. The order stays\n" +
		"   paid: contract_error claim_mismatch at step verify, with what it saw (state: \"paid\"), and an\n" +
		"   alert. A verification whose endpoint failed would be unavailable instead: \"could not check\"\n" +
		"   is never \"the claim was false\".", drifted: true, mcpDrifted: true, lying: true},
}

// Run starts the bundled example provider and a stand-in for Slack on
// loopback, writes the example config next to a fresh database, and runs the
// real daemon while the provider drifts, so a user sees pass, drift,
// contract_error, unavailable and the alerts, for HTTP endpoints and an MCP
// tool, without any network access.
func (d *demoCmd) Run(e *env, root *cli) error {
	// The narration, the daemon's log and the Slack stand-in all print as
	// things happen; one lock keeps their lines whole.
	out := &lockedWriter{w: e.stdout}
	dir := d.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "toolpulse-demo-"); err != nil {
			return softwareError(err)
		}
	}
	if err := writeDemoFiles(dir); err != nil {
		return softwareError(err)
	}

	p := provider.New()
	orders := provider.NewOrders()
	defer p.Close()
	providerURL, stopProvider, err := serveLoopback(provider.Mux(p, orders))
	if err != nil {
		return softwareError(err)
	}
	defer stopProvider()

	slackURL, hasSlack := e.lookupEnv("SLACK_WEBHOOK_URL")
	slackNote := "the real Slack (SLACK_WEBHOOK_URL)"
	if !hasSlack || slackURL == "" {
		var stopSlack func()
		slackURL, stopSlack, err = serveLoopback(slackprinter.New(out))
		if err != nil {
			return softwareError(err)
		}
		defer stopSlack()
		slackNote = "a local stand-in for Slack that prints each message below"
	}

	lookup := func(k string) (string, bool) {
		switch k {
		case "DEMO_PROVIDER_URL":
			return providerURL, true
		case "DEMO_SLACK_WEBHOOK_URL":
			return slackURL, true
		case "DEMO_INTERVAL":
			return d.Interval.String(), true
		}
		return e.lookupEnv(k)
	}
	cfg, err := checks.Load(filepath.Join(dir, "checks.yaml"), lookup)
	if err != nil {
		return &exitError{code: exitConfig, err: err}
	}

	log := newDemoLog(out)
	s, err := newStack(e.ctx, cfg, log.Logger(), stackOptions{grace: 2 * time.Second})
	if err != nil {
		return softwareError(err)
	}
	// The status page and API, as `run` serves them, for the length of the
	// demo.
	statusURL, stopStatus, err := serveLoopback(newServer(serverDeps{
		logger: slog.New(slog.DiscardHandler), healthy: s.healthy, metrics: s.metricsHandler,
		store: s.store, probes: func() []*checks.Probe { return cfg.Probes },
	}))
	if err != nil {
		s.store.Close()
		return softwareError(err)
	}
	defer stopStatus()
	fmt.Fprintf(out, "toolpulse demo\n  provider: %s (examples/provider)\n  alerts:   %s\n  config:   %s\n  status:   %s/ (open it while the demo runs)\n",
		providerURL, slackNote, cfg.Path, statusURL)

	ctx, stop := context.WithCancel(e.ctx)
	defer stop()
	go func() {
		defer stop()
		for i, act := range demoActs {
			p.SetDrifted(act.drifted)
			p.SetDown(act.down)
			p.SetMCPDrifted(act.mcpDrifted)
			orders.SetLying(demoRefundOrder, act.lying)
			if n := log.Skipped(); i > 0 && n > 0 {
				fmt.Fprintf(out, "   (%d more runs said nothing new)\n", n)
			}
			fmt.Fprintf(out, "\n== %d. %s\n\n", i+1, act.title)
			if !sleepCtx(ctx, d.Phase) {
				return
			}
		}
		if n := log.Skipped(); n > 0 {
			fmt.Fprintf(out, "   (%d more runs said nothing new)\n", n)
		}
	}()
	started := time.Now()
	if err := s.run(ctx, cfg.Storage.Retention); err != nil {
		return softwareError(err)
	}
	stopStatus() // it reads the daemon's store, which run has closed

	// The story told in numbers, read back from the database as `toolpulse
	// stats` reads it; a Ctrl-C that ended the demo does not stop this.
	readCtx := context.WithoutCancel(e.ctx)
	db := cfg.Storage.Path
	store, err := sqlite.Open(readCtx, db)
	if err != nil {
		return softwareError(err)
	}
	defer store.Close()
	stats, err := store.Stats(readCtx, started.Add(-time.Minute), time.Now())
	if err != nil {
		return softwareError(err)
	}
	latest, err := latestRuns(readCtx, store)
	if err != nil {
		return softwareError(err)
	}
	fmt.Fprintf(out, "\nWhat happened, per probe (toolpulse stats):\n\n")
	if err := writeStatsTable(out, stats, latest, false); err != nil {
		return softwareError(err)
	}
	fmt.Fprintf(out, "\nEvery run, drift and alert is in %s. Try:\n\n", db)
	fmt.Fprintf(out, "  sqlite3 -readonly %s \"SELECT probe, outcome, code, count(*) FROM results GROUP BY 1, 2, 3;\"\n", db)
	fmt.Fprintf(out, "  sqlite3 -readonly %s \"SELECT detected_at, probe, kind, baseline, current, diff FROM drifts;\"\n", db)
	fmt.Fprintf(out, "\nNext: write a check of your own, README section \"Your first check in ten minutes\".\n")

	if d.Serve && e.ctx.Err() == nil {
		url, stop, err := serveLoopback(newServer(serverDeps{
			logger: slog.New(slog.DiscardHandler), healthy: func(context.Context) error { return nil }, metrics: s.metricsHandler,
			store: store, probes: func() []*checks.Probe { return cfg.Probes },
		}))
		if err != nil {
			return softwareError(err)
		}
		defer stop()
		fmt.Fprintf(out, "\nThe status page stays up at %s/ until Ctrl-C.\n", url)
		<-e.ctx.Done()
	}
	return nil
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// serveLoopback serves h on a free loopback port until stop is called.
func serveLoopback(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func() { srv.Close(); <-done }, nil
}

// writeDemoFiles copies the embedded examples/demo tree into dir.
func writeDemoFiles(dir string) error {
	return fs.WalkDir(examples.Demo, "demo", func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel("demo", path)
		if err != nil {
			return err
		}
		target := filepath.Join(dir, rel)
		if entry.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(examples.Demo, path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// sleepCtx waits d or until ctx ends; it reports whether the wait completed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
