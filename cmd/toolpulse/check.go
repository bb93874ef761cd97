package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner/prober"
)

type checkCmd struct {
	Probe    []string `placeholder:"NAME" help:"Run only this probe (repeatable)."`
	Format   string   `enum:"text,json" default:"text" help:"Output: text (a table) or json (one JSON envelope per line, as docs/cli.md shows it)."`
	NoRecord bool     `help:"Do not write results to the database."`
}

// Run runs the selected probes once, concurrently, records each result and
// prints them in config order. Exit: 0 all pass, 1 any contract_error, 2 any
// unavailable and no contract_error.
func (c *checkCmd) Run(e *env, root *cli) error {
	cfg, err := root.loadConfig(e)
	if err != nil {
		return err
	}
	probes, err := selectProbes(cfg, c.Probe)
	if err != nil {
		return err
	}
	var s store
	if !c.NoRecord {
		if s, err = openStore(e.ctx, cfg.Storage, storeRecord); err != nil {
			return err
		}
		defer s.Close()
	}

	exec := prober.NewExecutor(prober.Options{
		Logger:   slog.New(slog.DiscardHandler),
		Redactor: cfg.Redactor(),
	})
	all, recordErr := runAll(e.ctx, exec, s, probes, cfg.MaxConcurrency)

	if err := printResults(e.stdout, c.Format, all); err != nil {
		return softwareError(err)
	}
	if recordErr != nil {
		return softwareError(fmt.Errorf("recording results: %w", recordErr))
	}
	return exitStatus(verdict(all))
}

// selectProbes returns the probes named by --probe, in config order, or all
// of them when none is named.
func selectProbes(cfg *checks.Config, names []string) ([]*checks.Probe, error) {
	if len(names) == 0 {
		return cfg.Probes, nil
	}
	wanted := map[string]bool{}
	for _, n := range names {
		if cfg.Probe(n) == nil {
			return nil, unknownProbe(n, probeNames(cfg))
		}
		wanted[n] = true
	}
	var out []*checks.Probe
	for _, p := range cfg.Probes {
		if wanted[p.Name] {
			out = append(out, p)
		}
	}
	return out, nil
}

func probeNames(cfg *checks.Config) []string {
	names := make([]string, len(cfg.Probes))
	for i, p := range cfg.Probes {
		names[i] = p.Name
	}
	return names
}

// runAll runs every probe once with at most limit in flight and records each
// result as soon as it is known. It returns the results in probe order and
// the first recording error.
func runAll(ctx context.Context, exec *prober.Executor, store store, probes []*checks.Probe, limit int) ([]results.Result, error) {
	out := make([]results.Result, len(probes))
	sem := make(chan struct{}, max(limit, 1))
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		recordErr error
	)
	for i, p := range probes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = exec.Run(ctx, p)
			if store == nil {
				return
			}
			// Recording outlives a Ctrl-C: a result we ran is worth keeping.
			// Definition drift is the daemon's to judge: the run keeps its
			// tool's fingerprint but does not become the definition the
			// daemon compares the next one with.
			rec := out[i]
			if rec.Tool != nil {
				rec.Tool = &results.ToolDefinition{Fingerprint: rec.Tool.Fingerprint}
			}
			if err := store.Record(context.WithoutCancel(ctx), rec); err != nil {
				mu.Lock()
				if recordErr == nil {
					recordErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out, recordErr
}

// verdict is check's exit code for a set of results.
func verdict(all []results.Result) int {
	code := exitOK
	for _, r := range all {
		switch r.Outcome {
		case results.ContractError:
			return exitContractError
		case results.Unavailable:
			code = exitUnavailable
		}
	}
	return code
}
