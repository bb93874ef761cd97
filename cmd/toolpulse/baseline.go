package main

import (
	"fmt"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
	"github.com/toolpulse/toolpulse/runner"
)

// baselineCmd groups the commands on probes' learned shape baselines
// (SPEC §5). The daemon reads resets from the database, so they need no
// reload.
type baselineCmd struct {
	Reset baselineResetCmd `cmd:"" help:"Forget a probe's learned response shape (and an MCP probe's tool definition) after an intended change; the next answers learn a new one."`
}

type baselineResetCmd struct {
	Probe string `required:"" placeholder:"NAME" help:"The probe whose baseline to forget."`
}

// Run resets the probe's profile. A database that does not exist is an
// error (66): there is nothing to reset, and opening it would create one.
func (b *baselineResetCmd) Run(e *env, root *cli) error {
	store, cfg, err := openStoreForReading(e.ctx, root, e)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := knownProbes(e.ctx, store, cfg, []string{b.Probe}); err != nil {
		return err
	}
	if _, err := store.ResetProfile(e.ctx, b.Probe, time.Now().UTC()); err != nil {
		return softwareError(err)
	}
	_, err = fmt.Fprintf(e.stdout, "reset the shape baseline of %s: its next %d answers learn a new one, and drift is judged from then on (a running daemon takes the reset within %v)\n",
		b.Probe, shape.ProfileWarmup, runner.SilenceRefresh)
	if err == nil && isMCP(cfg, b.Probe) {
		_, err = fmt.Fprintf(e.stdout, "forgot the tool definition of %s: the next one listed is its new baseline, not a drift\n", b.Probe)
	}
	return err
}

// isMCP reports whether cfg configures probe as an MCP probe.
func isMCP(cfg *checks.Config, probe string) bool {
	if cfg == nil {
		return false
	}
	for _, p := range cfg.Probes {
		if p.Name == probe {
			return p.Kind() == results.ProbeMCP
		}
	}
	return false
}
