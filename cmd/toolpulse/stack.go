package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results/prometheus"
	"github.com/toolpulse/toolpulse/results/slack"
	"github.com/toolpulse/toolpulse/results/sqlite"
	"github.com/toolpulse/toolpulse/runner"
)

// stack is the daemon with the store and the metrics it is built on.
// `run` and `demo` both use it.
type stack struct {
	logger  *slog.Logger
	store   *sqlite.Store
	daemon  *runner.Daemon
	metrics *prometheus.Metrics
	// metricsHandler serves the metrics in Prometheus text format.
	metricsHandler http.Handler
}

// stackOptions tunes a stack for the demo; the zero value is what `run` uses.
type stackOptions struct {
	grace time.Duration
}

// newStack opens the store and builds the daemon for cfg.
func newStack(ctx context.Context, cfg *checks.Config, logger *slog.Logger, opts stackOptions) (*stack, error) {
	// A store that is read-only from the start is a setup to fix, not a
	// fault to wait out: refuse to start (exit 70) before Open creates or
	// migrates anything. A fault that begins later is queued and retried.
	if err := sqlite.CheckWritable(cfg.Storage.Path); err != nil {
		return nil, err
	}
	store, err := sqlite.Open(ctx, cfg.Storage.Path)
	if err != nil {
		return nil, err
	}
	s := &stack{logger: logger, store: store}
	reg := prometheus.NewRegistry()
	if s.metrics, err = prometheus.New(reg); err != nil {
		store.Close()
		return nil, err
	}
	s.metricsHandler = prometheus.Handler(reg)
	s.daemon, err = runner.New(cfg, runner.Deps{
		Store:       store,
		Silences:    store,
		Senders:     newSender,
		Observer:    s.metrics,
		Logger:      logger,
		GracePeriod: opts.grace,
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	s.metrics.ConfigLoaded(true, time.Now())
	s.metrics.WatchPending(s.daemon.Pending)
	return s, nil
}

// run runs the daemon, and retention beside it, until ctx ends, then
// drains and closes the store.
func (s *stack) run(ctx context.Context, retention time.Duration) error {
	defer s.store.Close()
	pctx, stopPruning := context.WithCancel(ctx)
	pruned := make(chan struct{})
	go func() {
		defer close(pruned)
		pruneLoop(pctx, s.store, retention, retentionEvery, s.logger)
	}()
	defer func() { stopPruning(); <-pruned }()
	return s.daemon.Run(ctx)
}

// healthy says why the stack cannot do its job, or nil: the scheduler must
// be running and the store must answer.
func (s *stack) healthy(ctx context.Context) error {
	if st := s.daemon.State(); st != "running" {
		return fmt.Errorf("scheduler is %s", st)
	}
	if err := s.store.Ping(ctx); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if n := s.daemon.Pending(); n > 0 {
		// The store answers a ping but would not take the runs (a full
		// disk is seen only by a write).
		return fmt.Errorf("store: %d run(s) waiting to be written", n)
	}
	return nil
}

// reload applies a new, already validated config to the running daemon.
func (s *stack) reload(cfg *checks.Config) error { return s.daemon.Reload(cfg) }

// reloadFrom is one SIGHUP: it loads the config again and applies it, or
// logs why not and keeps the running one; either way the reload gauges and
// state say how it went.
func (s *stack) reloadFrom(state *configState, load func() (*checks.Config, error)) {
	next, err := load()
	if err == nil {
		if err = s.reload(next); err != nil {
			s.logger.Error("reload failed; the running config stays", "error", err)
		}
	} else {
		s.logger.Error("reload refused; the running config stays", "config", state.path, "errors", err.Error())
	}
	if err != nil {
		state.Refused(err)
		s.metrics.ConfigLoaded(false, time.Now())
		return
	}
	warnRestartOnly(s.logger, state.Loaded(next))
	s.metrics.ConfigLoaded(true, time.Now())
	s.logger.Info("config reloaded", "config", next.Path, "probes", len(next.Probes))
}

// newSender returns the Slack sender the config asks for, or nil when
// alerts are only recorded.
func newSender(cfg *checks.Config) (runner.Sender, error) {
	sl := cfg.Notify.Slack
	if !sl.Enabled() {
		return nil, nil
	}
	return slack.New(slack.Config{
		WebhookURL: sl.WebhookURL.Reveal(),
		Token:      sl.Token.Reveal(),
		Channel:    sl.Channel,
		APIURL:     sl.APIURL,
		Redactor:   cfg.Redactor(),
	})
}
