package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/prometheus"
	"github.com/toolpulse/toolpulse/results/slack"
	"github.com/toolpulse/toolpulse/results/sqlite"
	"github.com/toolpulse/toolpulse/runner"
)

// stack is the daemon with everything it is built from: the store, the
// executor, the outbox deliverer and the Slack sender. `run` and `demo`
// both use it.
type stack struct {
	logger    *slog.Logger
	store     *sqlite.Store
	exec      *runner.Executor
	sender    *switchSender
	deliverer *runner.Deliverer
	daemon    *runner.Daemon
	metrics   *prometheus.Metrics
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
	s := &stack{logger: logger, store: store, sender: &switchSender{}}
	reg := prometheus.NewRegistry()
	if s.metrics, err = prometheus.New(reg); err != nil {
		store.Close()
		return nil, err
	}
	s.metricsHandler = prometheus.Handler(reg)
	s.metrics.SetProbes(probeNames(cfg))
	sender, err := newSender(cfg)
	if err != nil {
		store.Close()
		return nil, err
	}
	s.sender.set(sender)
	s.exec = runner.NewExecutor(runner.Options{Logger: logger, Redactor: cfg.Redactor()})
	s.deliverer = runner.NewDeliverer(store, s.sender, runner.DelivererOptions{Logger: logger, Observer: s.metrics})
	s.daemon, err = runner.NewDaemon(cfg, runner.DaemonOptions{
		Logger:      logger,
		Executor:    s.exec,
		Store:       store,
		Deliverer:   s.deliverer,
		GracePeriod: opts.grace,
		Observer:    s.metrics,
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	return s, nil
}

// run runs the daemon, and retention beside it, until ctx ends, then
// drains and closes the store.
func (s *stack) run(ctx context.Context, retention time.Duration) error {
	defer s.store.Close()
	defer s.exec.CloseIdleConnections()
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
func (s *stack) reload(cfg *checks.Config) error {
	sender, err := newSender(cfg)
	if err != nil {
		return err
	}
	s.sender.set(sender)
	s.exec.SetRedactor(cfg.Redactor())
	// Before the reload, so that the first runs of added probes count.
	s.metrics.SetProbes(probeNames(cfg))
	// Daemon.Reload also hands the new notify settings to its recorder.
	return s.daemon.Reload(cfg)
}

func probeNames(cfg *checks.Config) []string {
	names := make([]string, len(cfg.Probes))
	for i, p := range cfg.Probes {
		names[i] = p.Name
	}
	return names
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

// switchSender lets a reload change where alerts go without restarting the
// deliverer; with no sender configured it refuses for good, which the
// deliverer records as a failed delivery (it only sees alerts recorded
// while a sender existed).
type switchSender struct {
	mu     sync.RWMutex
	sender runner.Sender
}

func (s *switchSender) set(sender runner.Sender) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sender = sender
}

// Send implements runner.Sender.
func (s *switchSender) Send(ctx context.Context, a results.Alert) (bool, time.Duration, error) {
	s.mu.RLock()
	sender := s.sender
	s.mu.RUnlock()
	if sender == nil {
		return false, 0, fmt.Errorf("no Slack receiver is configured any more")
	}
	return sender.Send(ctx, a)
}
