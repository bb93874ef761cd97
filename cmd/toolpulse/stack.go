package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/alertmanager"
	"github.com/toolpulse/toolpulse/results/postgres"
	"github.com/toolpulse/toolpulse/results/prometheus"
	"github.com/toolpulse/toolpulse/results/slack"
	"github.com/toolpulse/toolpulse/results/webhook"
	"github.com/toolpulse/toolpulse/runner"
)

// stack is the daemon with the store and the metrics it is built on.
// `run` and `demo` both use it.
type stack struct {
	logger  *slog.Logger
	store   store
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
	// fault to wait out (storeDaemon); a fault that begins later is queued
	// and retried.
	store, err := openStore(ctx, cfg.Storage, storeDaemon)
	if err != nil {
		return nil, err
	}
	s := &stack{logger: logger, store: store}
	reg := prometheus.NewRegistry()
	if s.metrics, err = prometheus.NewAt(reg, cfg.Fleet.Location); err != nil {
		store.Close()
		return nil, err
	}
	s.metricsHandler = s.metrics.Handler(reg)
	s.metrics.WatchAlertStates(store.AlertStates)
	fleet, err := fleetOf(cfg, store)
	if err != nil {
		store.Close()
		return nil, err
	}
	s.daemon, err = runner.New(cfg, runner.Deps{
		Store:       store,
		Silences:    store,
		Senders:     newSenders(logger, store.FiringAlerts),
		Observer:    s.metrics,
		Logger:      logger,
		GracePeriod: opts.grace,
		Fleet:       fleet,
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	s.metrics.ConfigLoaded(true, time.Now())
	s.metrics.SetProbeInfo(probeInfo(cfg))
	s.metrics.WatchPending(s.daemon.Pending)
	return s, nil
}

// fleetOf is what makes the daemon one instance of a fleet (SPEC §12): a
// Postgres store is shared, so its instances elect the one that runs the
// probes of their location, by the lease of their location (fleet.location)
// held for fleet.lease; each change of its role
// is logged once, by the daemon. A SQLite store is one instance's: nil,
// it leads alone.
func fleetOf(cfg *checks.Config, store store) (*runner.Fleet, error) {
	if cfg.Storage.Driver != checks.DriverPostgres {
		return nil, nil
	}
	pg, ok := store.(*postgres.Store)
	if !ok {
		return nil, softwareError(fmt.Errorf("a %s store that keeps no fleet leases: %T", cfg.Storage.Driver, store))
	}
	return &runner.Fleet{Store: pgFleet{pg}, Location: cfg.Fleet.Location, TTL: cfg.Fleet.Lease, Version: results.ReadBuild().Version}, nil
}

// pgFleet is the Postgres store as a fleet's instance uses it: its fenced
// outbox, a type of the store's own, is the daemon's Outbox.
type pgFleet struct{ *postgres.Store }

func (p pgFleet) FencedOutbox(f results.Fence) runner.Outbox { return p.Store.FencedOutbox(f) }

// probeInfo is what toolpulse_probe_info says of cfg's probes.
func probeInfo(cfg *checks.Config) []prometheus.ProbeInfo {
	infos := make([]prometheus.ProbeInfo, len(cfg.Probes))
	for i, p := range cfg.Probes {
		infos[i] = prometheus.ProbeInfo{Probe: p.Name, Kind: p.Kind()}
		if t := p.MCPTarget(); t != nil {
			infos[i].Tool = t.Tool
		}
	}
	return infos
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
func (s *stack) reload(cfg *checks.Config) error {
	if err := s.daemon.Reload(cfg); err != nil {
		return err
	}
	s.metrics.SetProbeInfo(probeInfo(cfg))
	return nil
}

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

// newSenders returns a receiver for every receiver key of cfg's routes
// (checks.Route.Receivers), the default route's Slack included; none when
// alerts are only recorded. Every receiver links to the probe's page when
// server.public_url is set, and scrubs every secret of the config. logger
// gets what receivers do on their own (Alertmanager's re-posts).
//
// A receiver a reload leaves as it was is kept, not built again: the
// Alertmanager receiver remembers the firing alerts it re-posts, and a
// new one would let them end. A new Alertmanager receiver (at start, or
// after a reload changed it) starts from what firing says it was last
// told for each failure still firing, so that a restart does not let
// those alerts end; nil firing starts it empty.
func newSenders(logger *slog.Logger, firing firingAlerts) func(cfg *checks.Config) (runner.Senders, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var (
		mu   sync.Mutex
		kept = map[string]builtSender{}
	)
	return func(cfg *checks.Config) (runner.Senders, error) {
		mu.Lock()
		defer mu.Unlock()
		built, err := buildSenders(cfg, logger, kept, firing)
		if err != nil {
			return nil, err
		}
		kept = built
		out := make(runner.Senders, len(built))
		for key, b := range built {
			out[key] = b.sender
		}
		return out, nil
	}
}

// firingAlerts returns what a receiver was last told of each failure still
// firing: the store's FiringAlerts.
type firingAlerts func(ctx context.Context, receiver string) ([]results.Alert, error)

// restoreTimeout bounds the read of what a new Alertmanager receiver was
// last told: a slow store must not hold up a start or a reload.
const restoreTimeout = 5 * time.Second

// restore gives a new Alertmanager receiver the failures it was told are
// firing. A read that fails is logged: the alerts then end within the
// receiver's TTL unless the probes' next alerts post them again.
func restore(n *alertmanager.Notifier, key string, firing firingAlerts, logger *slog.Logger) {
	if firing == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), restoreTimeout)
	defer cancel()
	alerts, err := firing(ctx, key)
	if err == nil {
		err = n.Restore(ctx, alerts)
	}
	if err != nil {
		logger.Warn("could not read which alerts this Alertmanager receiver was told are firing; they end within 5m unless a probe alerts again",
			"receiver", key, "error", err)
		return
	}
	if len(alerts) > 0 {
		logger.Info("re-posting the alerts still firing", "receiver", key, "alerts", len(alerts))
	}
}

// builtSender is a receiver with what it was built from.
type builtSender struct {
	spec   string
	sender runner.Sender
}

func buildSenders(cfg *checks.Config, logger *slog.Logger, kept map[string]builtSender, firing firingAlerts) (map[string]builtSender, error) {
	out := map[string]builtSender{}
	redactor, base := cfg.Redactor(), cfg.Server.PublicURL
	// The redactor is part of every receiver: new secrets mean new ones.
	common := base + "\x00" + strings.Join(cfg.Secrets(), "\x00")
	for _, r := range cfg.Notify.AllRoutes() {
		for _, key := range r.Receivers() {
			kind := strings.TrimPrefix(key, r.Name+"/")
			spec := strings.Join([]string{kind, r.Slack.WebhookURL.Reveal(), r.Slack.Token.Reveal(), r.Slack.Channel,
				r.Slack.APIURL, r.Alertmanager.URL.Reveal(), r.Webhook.URL.Reveal(), r.Webhook.Secret.Reveal(), common}, "\x00")
			if k, ok := kept[key]; ok && k.spec == spec {
				out[key] = k
				continue
			}
			var (
				sender runner.Sender
				err    error
			)
			switch kind {
			case checks.ReceiverSlack:
				sender, err = slack.New(slack.Config{
					WebhookURL: r.Slack.WebhookURL.Reveal(),
					Token:      r.Slack.Token.Reveal(),
					Channel:    r.Slack.Channel,
					APIURL:     r.Slack.APIURL,
					Redactor:   redactor,
					BaseURL:    base,
				})
			case checks.ReceiverAlertmanager:
				var n *alertmanager.Notifier
				n, err = alertmanager.New(alertmanager.Config{
					URL:      r.Alertmanager.URL.Reveal(),
					Redactor: redactor,
					BaseURL:  base,
					Logger:   logger.With("receiver", key),
				})
				if err == nil {
					restore(n, key, firing, logger)
					sender = n
				}
			case checks.ReceiverWebhook:
				sender, err = webhook.New(webhook.Config{
					URL:      r.Webhook.URL.Reveal(),
					Secret:   r.Webhook.Secret.Reveal(),
					Redactor: redactor,
					BaseURL:  base,
				})
			default:
				err = fmt.Errorf("unknown receiver kind")
			}
			if err != nil {
				return nil, fmt.Errorf("receiver %s: %w", key, err)
			}
			out[key] = builtSender{spec: spec, sender: sender}
		}
	}
	return out, nil
}
