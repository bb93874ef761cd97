package main

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/checks"
)

// configState is what the daemon knows about its config: the one it runs,
// the restart-only settings it started with, and how the last load went.
// The reload goroutine writes it; the status page reads it.
type configState struct {
	path    string // the config file, as given on the command line
	started *checks.Config
	now     func() time.Time

	mu       sync.Mutex
	running  *checks.Config
	loadedAt time.Time // when running was loaded
	refused  *refusal  // the last reload, if it was refused; nil after a success
	restart  []string  // restart-only settings the running config changed
}

type refusal struct {
	at  time.Time
	err string
}

func newConfigState(path string, cfg *checks.Config, now func() time.Time) *configState {
	if now == nil {
		now = time.Now
	}
	return &configState{path: path, started: cfg, running: cfg, loadedAt: now(), now: now}
}

// Running returns the running config.
func (c *configState) Running() *checks.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running
}

// Loaded records next as the running config and returns the restart-only
// settings in which it differs from the ones the daemon started with.
func (c *configState) Loaded(next *checks.Config) []string {
	restart := restartOnly(c.started, next)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running, c.loadedAt, c.refused, c.restart = next, c.now(), nil, restart
	return restart
}

// Refused records a reload that left the running config in place.
func (c *configState) Refused(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused = &refusal{at: c.now(), err: err.Error()}
}

// restartOnly lists the settings that only a restart applies (the
// listener, its token, the store, the node's name and location) in which next differs from started.
// It compares against the values the daemon started with, not the last
// reload, so that putting a setting back to its running value is quiet.
func restartOnly(started, next *checks.Config) []string {
	var keys []string
	if next.Server.Listen != started.Server.Listen {
		keys = append(keys, "server.listen")
	}
	if next.Server.Token != started.Server.Token {
		keys = append(keys, "server.token")
	}
	if next.Storage.Driver != started.Storage.Driver {
		keys = append(keys, "storage.driver")
	}
	if next.Storage.Path != started.Storage.Path {
		keys = append(keys, "storage.path")
	}
	if next.Storage.DSN != started.Storage.DSN {
		keys = append(keys, "storage.dsn")
	}
	if next.Storage.Retention != started.Storage.Retention {
		keys = append(keys, "storage.retention")
	}
	if next.Fleet.Node != started.Fleet.Node {
		keys = append(keys, "fleet.node")
	}
	if next.Fleet.Location != started.Fleet.Location {
		// The elector claims the lease of the location it started with.
		keys = append(keys, "fleet.location")
	}
	return keys
}

// warnRestartOnly logs the restart-only settings a reload did not apply.
func warnRestartOnly(logger *slog.Logger, keys []string) {
	if len(keys) > 0 {
		logger.Warn("these settings take effect on restart; the running values stay", "settings", strings.Join(keys, ","))
	}
}

// Banner says how the config file on disk stands against the running
// config, read when the status page is served; "" when they agree. Only
// the file's own bytes are compared (consumer files it names are not).
func (c *configState) Banner() string {
	c.mu.Lock()
	running, loadedAt, refused, restart := c.running, c.loadedAt, c.refused, c.restart
	c.mu.Unlock()
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	digest, err := checks.FileDigest(c.path)
	switch {
	case err != nil:
		return fmt.Sprintf("The config file %s cannot be read (%v); the running config was loaded at %s.", c.path, err, at(loadedAt))
	case digest != running.Digest && refused != nil:
		return fmt.Sprintf("The config file on disk differs from the running config: the last reload, at %s, was refused (%s). The running config is older, loaded at %s.",
			at(refused.at), firstLine(refused.err), at(loadedAt))
	case digest != running.Digest:
		return fmt.Sprintf("The config file on disk differs from the running config, which is older (loaded at %s): send SIGHUP to reload it.", at(loadedAt))
	case len(restart) > 0:
		return fmt.Sprintf("The running config changes %s, which take effect on restart.", strings.Join(restart, ", "))
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
