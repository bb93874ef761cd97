package main

import (
	"bytes"
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
	"text/tabwriter"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/examples"
	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/examples/slackprinter"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
	"github.com/toolpulse/toolpulse/web"
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

// demoWidth is how wide the demo's terminal output may be: every line it
// prints fits in it (the Slack stand-in wraps to it, the stats table is a
// selection of columns that fits).
const demoWidth = 120

var demoActs = []demoAct{
	{title: "The provider is healthy: every probe passes, and toolpulse learns each response's shape from its first\n" +
		"   answers. search_docs_mcp calls the MCP tool search_docs (/mcp), one fresh session per run. Only a run\n" +
		"   that says something new is printed; the others are counted."},
	{title: "The provider wraps its results in {\"items\": [...]} (seed 000): HTTP 200, valid JSON. The list-only\n" +
		"   consumer turns contract_error and alerts; the two-layout consumer reads the same answer and keeps passing.\n" +
		"   Both report the drift, alerted once; when two answers have taught the new shape to the baseline, the\n" +
		"   drift marker stops. The tracker is overloaded: unavailable after retries that honour Retry-After.",
		drifted: true, down: true},
	{title: "The tracker recovers: a resolved message says how long it was failing. The list-only consumer still\n" +
		"   fails; one reminder follows in the next act, when repeat_interval (two and a half acts here) has passed.",
		drifted: true},
	{title: "The MCP server ships the next release of search_docs: its answer lists \"documents\", not \"results\", as\n" +
		"   its own outputSchema says, yet the agent's consumer turns contract_error (missing_results), with a\n" +
		"   shape_drift alert. The new description tells agents to send the user's API key to another site, as a\n" +
		"   compromised server would: a definition drift alert shows the old and the new description.",
		drifted: true, mcpDrifted: true},
	{title: "The refund service starts to lie cleanly (seed 002): a well-formed success for order 12's refund, which\n" +
		"   never happens. The refund step's consumer passes it; refund_order_12 then polls the order, which stays\n" +
		"   paid: contract_error (claim_mismatch) at step verify, with what it saw (state: \"paid\"), and an alert.",
		drifted: true, mcpDrifted: true, lying: true},
}

// Run starts the bundled example provider and a stand-in for Slack on
// loopback, writes the example config next to a fresh database, and runs the
// real daemon while the provider drifts, so a user sees pass, drift,
// contract_error, unavailable and the alerts, for HTTP endpoints and an MCP
// tool, without any network access. The terminal gets the story, within
// demoWidth columns; the daemon's log goes to a file the demo names.
func (d *demoCmd) Run(e *env, root *cli) error {
	// The narration, the run lines and the Slack stand-in all print as
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
	logPath := filepath.Join(dir, "toolpulse-demo.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return softwareError(err)
	}
	defer logFile.Close()
	// The daemon's log and the Slack messages in full share the file.
	logOut := &lockedWriter{w: logFile}

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
		slackURL, stopSlack, err = serveLoopback(bothHandlers(
			slackprinter.NewWithOptions(out, slackprinter.Options{Width: demoWidth, Brief: true}),
			slackprinter.New(logOut)))
		if err != nil {
			return softwareError(err)
		}
		defer stopSlack()
		slackNote = "a local stand-in for Slack: each message below in brief, in full in the log"
	}

	lookup := func(k string) (string, bool) {
		switch k {
		case "DEMO_PROVIDER_URL":
			return providerURL, true
		case "DEMO_SLACK_WEBHOOK_URL":
			return slackURL, true
		case "DEMO_INTERVAL":
			return d.Interval.String(), true
		case "DEMO_REPEAT_INTERVAL":
			// Two and a half acts: the list-only consumer, failing from act 2
			// to the end, is reminded once, and no later failure lasts long
			// enough to be.
			return (d.Phase * 5 / 2).String(), true
		}
		return e.lookupEnv(k)
	}
	cfg, err := checks.Load(filepath.Join(dir, "checks.yaml"), lookup)
	if err != nil {
		return &exitError{code: exitConfig, err: err}
	}

	log := newDemoLog(logOut, out)
	s, err := newStack(e.ctx, cfg, log.Logger(), stackOptions{grace: 2 * time.Second})
	if err != nil {
		return softwareError(err)
	}
	// The status page and API, as `run` serves them, for the length of the
	// demo.
	statusURL, stopStatus, err := serveLoopback(web.NewServer(web.Deps{
		Logger: slog.New(slog.DiscardHandler), Healthy: s.healthy, Metrics: s.metricsHandler,
		Store: s.store, Probes: func() []*checks.Probe { return cfg.Probes },
	}))
	if err != nil {
		s.store.Close()
		return softwareError(err)
	}
	defer stopStatus()
	fmt.Fprintf(out, "toolpulse demo: %d acts of %s while a bundled provider drifts (about %s)\n",
		len(demoActs), d.Phase, d.Phase*time.Duration(len(demoActs)))
	fmt.Fprintf(out, "  provider: %s (examples/provider)\n  alerts:   %s\n  status:   %s/ (open it while the demo runs)\n",
		providerURL, slackNote, statusURL)
	fmt.Fprintf(out, "  config:   %s\n  log:      %s (the daemon's log)\n", cfg.Path, logPath)

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
	store, err := openStore(readCtx, cfg.Storage, storeRecord)
	if err != nil {
		return err
	}
	defer store.Close()
	stats, err := store.Stats(readCtx, started.Add(-time.Minute), time.Now())
	if err != nil {
		return softwareError(err)
	}
	fmt.Fprintf(out, "\nWhat happened, per probe (toolpulse stats, which has more columns):\n\n")
	if err := writeDemoStats(out, stats); err != nil {
		return softwareError(err)
	}
	// Relative to dir, the queries fit the terminal however long the
	// temporary directory's name is.
	dbArg := db
	if rel, err := filepath.Rel(dir, db); err == nil && filepath.IsLocal(rel) {
		dbArg = rel
	}
	fmt.Fprintf(out, "\nEvery run, drift and alert is in %s. Try:\n\n", db)
	fmt.Fprintf(out, "  cd %s\n", dir)
	fmt.Fprintf(out, "  sqlite3 -readonly %s \"SELECT probe, outcome, code, count(*) FROM results GROUP BY 1, 2, 3;\"\n", dbArg)
	fmt.Fprintf(out, "  sqlite3 -readonly %s \"SELECT detected_at, probe, kind, baseline, current, diff FROM drifts;\"\n", dbArg)
	fmt.Fprintf(out, "\nThe daemon's log, with every Slack message in full: %s\n", logPath)
	fmt.Fprintf(out, "Next: write a check of your own, README section \"Your first check in ten minutes\".\n")

	if d.Serve && e.ctx.Err() == nil {
		url, stop, err := serveLoopback(web.NewServer(web.Deps{
			Logger: slog.New(slog.DiscardHandler), Healthy: func(context.Context) error { return nil }, Metrics: s.metricsHandler,
			Store: store, Probes: func() []*checks.Probe { return cfg.Probes },
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

// writeDemoStats prints the columns of `toolpulse stats` that tell the
// demo's story, narrow enough for demoWidth: the full table, with its
// latency percentiles, retried passes, MCP tool and timestamps, is wider.
func writeDemoStats(w io.Writer, stats []results.ProbeStats) error {
	pct := func(n, of int) string { return fmt.Sprintf("%.1f%%", 100*rate(n, of)) }
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "PROBE\tRUNS\tPASS\tCONTRACT\tUNAVAIL\tP95\tDRIFTS\tLAST\n")
	for i := range stats {
		p := &stats[i]
		last := string(p.LastOutcome)
		if p.LastCode != "" {
			last += " (" + present.Printable(string(p.LastCode)) + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\n", present.Printable(p.Probe), p.Runs, pct(p.Pass, p.Runs),
			pct(p.ContractError, p.Runs), pct(p.Unavailable, p.Runs), present.FormatLatency(p.P95), p.DriftEvents, last)
	}
	return tw.Flush()
}

// bothHandlers serves each request to every one of hs, answering with
// what the first answered.
func bothHandlers(hs ...http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for i, h := range hs {
			req := r.Clone(r.Context())
			req.Body = io.NopCloser(bytes.NewReader(body))
			if i == 0 {
				h.ServeHTTP(w, req)
				continue
			}
			h.ServeHTTP(&discardResponse{}, req)
		}
	})
}

// discardResponse is a response nobody reads.
type discardResponse struct{ header http.Header }

func (d *discardResponse) Header() http.Header {
	if d.header == nil {
		d.header = http.Header{}
	}
	return d.header
}

func (*discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (*discardResponse) WriteHeader(int)             {}

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
