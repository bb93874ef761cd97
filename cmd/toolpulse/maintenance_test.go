package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// TestDaemonMaintenanceReload runs the real binary with a provider that
// refuses connections and a maintenance window on now: the failing probe's alerts are
// recorded skipped and nothing reaches Slack, while the API, /metrics and
// the status page show the window. A SIGHUP that takes the window away
// lets the next run announce the failure.
func TestDaemonMaintenanceReload(t *testing.T) {
	provURL := "http://" + e2e.FreeAddr(t) // nothing listens: unavailable
	slack, slackURL := e2e.Slack(t)
	dir := t.TempDir()
	addr := e2e.FreeAddr(t)
	base := harness.Fast(provURL, slackURL, "alpha")
	base.Server.Listen = addr
	// On since a minute ago, every day, for an hour.
	start := time.Now().UTC().Add(-time.Minute)
	window := fmt.Sprintf("maintenance:\n  - probes: [alpha]\n    start: \"%02d:%02d\"\n    duration: 1h\n", start.Hour(), start.Minute())
	path := e2e.Config(t, dir, base)
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(base.YAML() + window)
	d := e2e.Start(t, path)
	get := func(route string) string {
		resp, err := http.Get("http://" + addr + route)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	d.WaitFor("an alert recorded skipped for maintenance", func() bool {
		return strings.Contains(d.Log.String(), "reason=maintenance")
	})
	time.Sleep(time.Second) // five more failing runs
	if n := len(slack.Messages()); n != 0 {
		d.T.Errorf("Slack got %d messages during the window, want none", n)
	}
	if api := get("/api/v1/maintenance"); !strings.Contains(api, `"active":true`) || !strings.Contains(api, `"probes":["alpha"]`) {
		d.T.Errorf("GET /api/v1/maintenance = %s, want alpha's window active", api)
	}
	if m := get("/metrics"); !strings.Contains(m, `toolpulse_probe_in_maintenance{probe="alpha"} 1`) {
		d.T.Errorf("/metrics lacks toolpulse_probe_in_maintenance{probe=\"alpha\"} 1")
	}
	if page := get("/"); !strings.Contains(page, "in maintenance until") {
		d.T.Errorf("the status page does not say alpha is in maintenance")
	}

	write(base.YAML())
	d.Signal(syscall.SIGHUP)
	d.WaitFor("the reload", func() bool { return strings.Contains(d.Log.String(), "config reloaded") })
	d.WaitFor("the failure announced once the window is gone", func() bool { return len(slack.Messages()) >= 1 })
	if m := get("/metrics"); strings.Contains(m, "toolpulse_probe_in_maintenance{") {
		d.T.Errorf("/metrics still has toolpulse_probe_in_maintenance without a window")
	}
	if page := get("/"); strings.Contains(page, "in maintenance") {
		d.T.Errorf("the status page still shows the window after the reload took it away")
	}
	if err := d.Stop(syscall.SIGTERM); err != nil {
		d.T.Errorf("SIGTERM: %v, want exit 0", err)
	}
}
