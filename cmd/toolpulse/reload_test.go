package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// TestRestartOnly: every restart-only setting is named when it changes,
// and compared with the value the daemon started with.
func TestRestartOnly(t *testing.T) {
	started := &checks.Config{
		Storage: checks.Storage{Path: "/var/lib/toolpulse/toolpulse.db", Retention: 720 * time.Hour},
		Server:  checks.Server{Listen: "127.0.0.1:9321", Token: "s3cret"},
	}
	cases := []struct {
		name   string
		change func(c *checks.Config)
		want   []string
	}{
		{"nothing", func(*checks.Config) {}, nil},
		{"listen", func(c *checks.Config) { c.Server.Listen = "127.0.0.1:9999" }, []string{"server.listen"}},
		{"token", func(c *checks.Config) { c.Server.Token = "other" }, []string{"server.token"}},
		{"storage path", func(c *checks.Config) { c.Storage.Path = "/tmp/x.db" }, []string{"storage.path"}},
		{"retention", func(c *checks.Config) { c.Storage.Retention = time.Hour }, []string{"storage.retention"}},
		{"driver", func(c *checks.Config) {
			c.Storage = checks.Storage{Driver: checks.DriverPostgres, DSN: "postgres://h/db", Retention: 720 * time.Hour}
		}, []string{"storage.driver", "storage.path", "storage.dsn"}},
		{"dsn", func(c *checks.Config) { c.Storage.DSN = "postgres://other/db" }, []string{"storage.dsn"}},
		{"node", func(c *checks.Config) { c.Fleet.Node = "web-2" }, []string{"fleet.node"}},
		{"location", func(c *checks.Config) { c.Fleet.Location = "eu-west" }, []string{"fleet.location"}},
		{"all", func(c *checks.Config) {
			c.Server = checks.Server{Listen: ":1", Token: "t"}
			c.Storage = checks.Storage{Path: "/x", Retention: 0}
		}, []string{"server.listen", "server.token", "storage.path", "storage.retention"}},
		{"probes only", func(c *checks.Config) { c.Probes = []*checks.Probe{{Name: "new"}} }, nil},
	}
	for _, c := range cases {
		next := *started
		c.change(&next)
		if got := restartOnly(started, &next); !slices.Equal(got, c.want) {
			t.Errorf("%s: restartOnly = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestConfigBanner: the banner compares the file on disk with the running
// config and says why they differ.
func TestConfigBanner(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checks.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	load := func() *checks.Config {
		t.Helper()
		cfg, err := checks.Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	write("version: 1\n")
	st := newConfigState(path, load(), func() time.Time { return time.Date(2026, 10, 26, 13, 7, 0, 0, time.UTC) })
	banner := func(step string, want ...string) {
		t.Helper()
		got := st.Banner()
		if len(want) == 0 && got != "" {
			t.Errorf("%s: banner = %q, want none", step, got)
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: banner = %q, want it to say %q", step, got, w)
			}
		}
	}
	banner("as started")
	write("version: 1\nmax_concurrency: 8\n")
	banner("edited, not reloaded", "differs from the running config", "older", "SIGHUP")
	st.Refused(checks.ErrorList{{File: path, Line: 2, Column: 18, Message: "boom"}})
	banner("reload refused", "differs from the running config", "was refused", "boom")
	st.Loaded(load())
	banner("reloaded")
	write("version: 1\nstorage: {retention: 1h}\n")
	if keys := st.Loaded(load()); !slices.Equal(keys, []string{"storage.retention"}) {
		t.Errorf("restart-only settings = %q, want storage.retention", keys)
	}
	banner("restart-only change", "storage.retention", "restart")
	write("version: 1\n")
	if keys := st.Loaded(load()); keys != nil {
		t.Errorf("restart-only settings after the revert = %q, want none", keys)
	}
	banner("reverted")
	os.Remove(path)
	banner("file gone", "cannot be read")
}

// TestDaemonReloadVisible runs the real binary through a restart-only
// change, its revert and a refused reload, and reads each from the reload
// gauges, the log and the status page's banner.
func TestDaemonReloadVisible(t *testing.T) {
	prov := e2e.Serve(t, provider.New().Handler())
	_, slackURL := e2e.Slack(t)
	dir := t.TempDir()
	addr := e2e.FreeAddr(t)
	config := func(retention time.Duration) harness.Config {
		cfg := harness.Fast(prov, slackURL, "alpha")
		cfg.Server.Listen = addr
		cfg.Storage.Retention = harness.Retain(retention)
		return cfg
	}
	path := e2e.Config(t, dir, config(720*time.Hour))
	d := e2e.Start(t, path)
	get := func(route string) string {
		resp, err := http.Get("http://" + addr + route)
		if err != nil {
			d.T.Fatalf("GET %s: %v", route, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	gauge := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(get("/metrics"))
		if m == nil {
			d.T.Fatalf("/metrics has no %s", name)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	const ok, at = "toolpulse_config_last_reload_successful", "toolpulse_config_last_reload_success_timestamp_seconds"
	const warning = "take effect on restart"
	d.WaitFor("the server to answer", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	if got := gauge(ok); got != 1 {
		d.T.Errorf("at start: %s = %v, want 1", ok, got)
	}
	started := gauge(at)
	if now := float64(time.Now().Unix()); started < now-60 || started > now+1 {
		d.T.Errorf("at start: %s = %v, want about %v", at, started, now)
	}
	if page := get("/"); strings.Contains(page, "config-banner") {
		d.T.Errorf("status page shows a config banner at start")
	}

	// A storage change on disk: the page says so before the SIGHUP; the
	// SIGHUP warns that it needs a restart.
	time.Sleep(10 * time.Millisecond) // a later success timestamp
	e2e.Config(t, dir, config(time.Hour))
	if page := get("/"); !strings.Contains(page, "differs from the running config") {
		d.T.Errorf("status page lacks the banner after the file changed")
	}
	d.Signal(syscall.SIGHUP)
	d.WaitFor("the reload", func() bool { return strings.Count(d.Log.String(), "config reloaded") == 1 })
	if log := d.Log.String(); strings.Count(log, warning) != 1 || !strings.Contains(log, "storage.retention") {
		d.T.Errorf("storage.retention change: want one restart warning naming it")
	}
	if got := gauge(at); got <= started {
		d.T.Errorf("after a reload: %s = %v, want later than %v", at, got, started)
	}
	if page := get("/"); !strings.Contains(page, "storage.retention") {
		d.T.Errorf("status page does not say storage.retention waits for a restart")
	}

	// Back to the running value: no warning, no banner.
	e2e.Config(t, dir, config(720*time.Hour))
	d.Signal(syscall.SIGHUP)
	d.WaitFor("the second reload", func() bool { return strings.Count(d.Log.String(), "config reloaded") == 2 })
	if n := strings.Count(d.Log.String(), warning); n != 1 {
		d.T.Errorf("reverting retention to its running value warned again (%d warnings in all)", n)
	}
	if page := get("/"); strings.Contains(page, "config-banner") {
		d.T.Errorf("status page shows a config banner after the revert")
	}

	// A refused reload: the gauge drops to 0, the timestamp stays, the
	// page says the running config is older.
	reloadedAt := gauge(at)
	broken := strings.Replace(config(720*time.Hour).YAML(), "interval: 200ms", "interval: soon", 1)
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Signal(syscall.SIGHUP)
	d.WaitFor("the refused reload", func() bool { return strings.Contains(d.Log.String(), "reload refused") })
	if got := gauge(ok); got != 0 {
		d.T.Errorf("after a refused reload: %s = %v, want 0", ok, got)
	}
	if got := gauge(at); got != reloadedAt {
		d.T.Errorf("after a refused reload: %s = %v, want it left at %v", at, got, reloadedAt)
	}
	if page := get("/"); !strings.Contains(page, "was refused") || !strings.Contains(page, "older") {
		d.T.Errorf("status page lacks the refused-reload banner")
	}
	if err := d.Stop(syscall.SIGTERM); err != nil {
		d.T.Errorf("SIGTERM: %v, want exit 0", err)
	}
}
