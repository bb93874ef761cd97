package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolpulse/toolpulse/checks"
)

type runCmd struct {
	Grace     time.Duration `default:"10s" help:"On SIGTERM/SIGINT, how long in-flight runs may finish before they are cancelled (and recorded as canceled)."`
	LogFormat string        `enum:"text,json" default:"text" help:"Log format on stderr: text or json."`
	LogLevel  string        `enum:"debug,info,warn,error" default:"info" help:"Lowest level logged."`
}

// Run is the daemon: it schedules every probe, records and alerts, reloads
// on SIGHUP (a bad new config is logged and the old one keeps running) and
// drains on SIGTERM/SIGINT, exiting 0.
func (c *runCmd) Run(e *env, root *cli) error {
	logger := newLogger(e.stderr, c.LogFormat, c.LogLevel)
	cfg, err := root.loadConfig(e)
	if err != nil {
		return err
	}
	// Listen before anything starts, so that a taken port fails the start
	// instead of leaving a daemon nobody can see.
	var ln net.Listener
	if cfg.Server.Listen != "" {
		if ln, err = net.Listen("tcp", cfg.Server.Listen); err != nil {
			return softwareError(fmt.Errorf("server.listen: %w", err))
		}
	}
	s, err := newStack(e.ctx, cfg, logger, stackOptions{grace: c.Grace})
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return softwareError(err)
	}
	logger.Info("toolpulse started", "config", cfg.Path, "db", cfg.Storage.Path,
		"probes", len(cfg.Probes), "slack", cfg.Notify.Slack.Enabled())

	var current atomic.Pointer[checks.Config]
	current.Store(cfg)

	ctx, stop := context.WithCancel(e.ctx)
	defer stop()
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
		reloadOnHangup(ctx, func() {
			next, err := root.loadConfig(e)
			if err != nil {
				logger.Error("reload refused; the running config stays", "config", root.configPath(e), "errors", err.Error())
				return
			}
			if prev := current.Load(); next.Server.Listen != prev.Server.Listen || next.Server.Token != prev.Server.Token {
				logger.Warn("server.listen and server.token changes take effect on restart")
			}
			if err := s.reload(next); err != nil {
				logger.Error("reload failed; the running config stays", "error", err)
				return
			}
			current.Store(next)
			logger.Info("config reloaded", "config", next.Path, "probes", len(next.Probes))
		})
	}()

	served := make(chan error, 1)
	if ln != nil {
		h := newServer(serverDeps{
			logger: logger, token: cfg.Server.Token, healthy: s.healthy, metrics: s.metricsHandler,
			store: s.store, probes: func() []*checks.Probe { return current.Load().Probes },
		})
		go func() { served <- serve(ctx, ln, h, logger) }()
	} else {
		served <- nil
	}

	err = s.run(ctx, cfg.Storage.Retention)
	stop()
	<-reloaded
	if serr := <-served; serr != nil {
		logger.Error("HTTP server", "listen", cfg.Server.Listen, "error", serr)
	}
	if err != nil {
		return softwareError(err)
	}
	logger.Info("toolpulse stopped")
	return nil
}

// reloadOnHangup calls reload on every SIGHUP until ctx ends.
func reloadOnHangup(ctx context.Context, reload func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			reload()
		}
	}
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
