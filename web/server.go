// Package web is toolpulse's HTTP surface (SPEC §9): the status page, the
// JSON API, the /mcp health endpoint, /healthz and /metrics, behind one
// guard for authentication, Host names and rate limits. routes.go lists
// every route; NewServer takes everything the surface needs.
package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// Deps is what the read-only HTTP surface needs.
type Deps struct {
	Logger *slog.Logger
	// Server is the config the surface serves under: a loopback listen
	// address (or none: the demo's listeners are loopback) makes it answer
	// only to local Host names and the host of public_url.
	Server  checks.Server
	Token   checks.Secret               // "" means no authentication
	Healthy func(context.Context) error // nil error: the daemon and the store are healthy
	Metrics http.Handler
	Store   Store
	Probes  func() []*checks.Probe // the probes of the running config
	// Maintenance returns the running config's maintenance windows; nil:
	// none.
	Maintenance func() []results.MaintenanceWindow
	Now         func() time.Time // nil: time.Now
	// ConfigBanner says how the config file on disk stands against the
	// running config, for the status page; nil or "": nothing to say.
	ConfigBanner func() string
	// Role says what this instance is in its fleet now; nil: a single
	// instance, which leads alone.
	Role func() Role
	// Fleet is the store's knowledge of the instances sharing it; nil for
	// a store without a fleet (SQLite), where the API answers with this
	// instance alone and the status page has no Fleet section.
	Fleet FleetStore
	// Lease is fleet.lease: a node silent for more than
	// results.SilentLeases leases is no longer counted alive. 0:
	// checks.DefaultLease.
	Lease time.Duration
	// Started is when this instance started, for a fleet of one.
	Started time.Time
}

// lease returns deps.Lease, or the default lease when it is 0.
func (deps Deps) lease() time.Duration {
	if deps.Lease <= 0 {
		return checks.DefaultLease
	}
	return deps.Lease
}

// windows returns the running config's maintenance windows.
func (deps Deps) windows() []results.MaintenanceWindow {
	if deps.Maintenance == nil {
		return nil
	}
	return deps.Maintenance()
}

// nowFunc returns deps.Now, or time.Now when it is nil.
func (deps Deps) nowFunc() func() time.Time {
	if deps.Now == nil {
		return time.Now
	}
	return deps.Now
}

// loopbackAddr reports whether addr is a TCP address only local clients
// reach.
func loopbackAddr(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// Serve runs the HTTP surface on ln until ctx ends, then shuts it down
// gracefully. It returns once the server has stopped.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("serving", "url", "http://"+ln.Addr().String())
	if !loopbackAddr(ln.Addr()) {
		logger.Warn("serving plain HTTP beyond loopback: the token and every response cross the network in clear; put a TLS-terminating proxy in front, or listen on 127.0.0.1 behind one",
			"listen", ln.Addr().String())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdown)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
