package main

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/examples"
	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
	"github.com/toolpulse/toolpulse/runner"
)

type demoCmd struct {
	Dir   string        `placeholder:"DIR" help:"Where to write the demo config and database (default: a new temporary directory)."`
	Pause time.Duration `default:"1s" help:"Pause between rounds."`
}

// demoRound is one step of the drill: what changes at the provider, and
// what the user should see.
type demoRound struct {
	title   string
	drifted bool
	down    bool
}

var demoRounds = []demoRound{
	{"Round 1: the provider is healthy. Every probe selects and validates results.", false, false},
	{"Round 2: the provider wraps results in {\"items\": [...]} (seed 000) and the tracker is overloaded.\n" +
		"HTTP is still 200 and the JSON is valid, but the list-only consumer can no longer use the answer.", true, true},
	{"Round 3: the tracker recovers. The drift stays: only the consumer that knows both layouts passes.", true, false},
}

// Run starts the bundled example provider on loopback, writes the example
// config next to a fresh database, and checks the provider round by round
// while it drifts, so a user sees pass, contract_error and unavailable
// without any network access.
func (d *demoCmd) Run(e *env, root *cli) error {
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return softwareError(err)
	}
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	providerURL := "http://" + ln.Addr().String()
	lookup := func(k string) (string, bool) {
		if k == "DEMO_PROVIDER_URL" {
			return providerURL, true
		}
		return e.lookupEnv(k)
	}
	configPath := filepath.Join(dir, "checks.yaml")
	cfg, err := checks.Load(configPath, lookup)
	if err != nil {
		return &exitError{code: exitConfig, err: err}
	}
	store, err := sqlite.Open(e.ctx, cfg.Storage.Path)
	if err != nil {
		return softwareError(err)
	}
	defer store.Close()
	exec := runner.NewExecutor(runner.Options{Logger: slog.New(slog.DiscardHandler), Redactor: cfg.Redactor()})

	fmt.Fprintf(e.stdout, "toolpulse demo: example provider on %s, config %s\n", providerURL, configPath)
	for i, round := range demoRounds {
		if i > 0 && !sleepCtx(e.ctx, d.Pause) {
			return exitStatus(exitOK)
		}
		p.SetDrifted(round.drifted)
		p.SetDown(round.down)
		fmt.Fprintf(e.stdout, "\n%s\n\n", round.title)
		all, err := runAll(e.ctx, exec, store, cfg.Probes, cfg.MaxConcurrency)
		if perr := printTable(e.stdout, all); perr != nil {
			return softwareError(perr)
		}
		if err != nil {
			return softwareError(fmt.Errorf("recording results: %w", err))
		}
		for _, r := range all {
			if r.Shape != nil && i > 0 && r.Outcome != results.Pass && r.ResponseSample != "" {
				fmt.Fprintf(e.stdout, "  %s saw: %s\n", r.Probe, oneLine(r.ResponseSample, maxMessageRunes))
			}
		}
	}

	fmt.Fprintf(e.stdout, "\nEvery run is in %s. Try:\n\n", cfg.Storage.Path)
	fmt.Fprintf(e.stdout, "  sqlite3 %s \"SELECT started_at, probe, outcome, code, attempts FROM results ORDER BY started_at;\"\n", cfg.Storage.Path)
	fmt.Fprintf(e.stdout, "  sqlite3 %s \"SELECT probe, shape_fingerprint, count(*) FROM results GROUP BY 1, 2;\"\n", cfg.Storage.Path)
	return nil
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
