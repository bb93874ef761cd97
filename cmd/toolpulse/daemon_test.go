package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
	"github.com/toolpulse/toolpulse/results"
)

// These tests start the real binary, as an operator would, and talk to it
// only through signals, its database, its logs and a loopback Slack.

// countRows counts results rows of a probe, reading as an operator would.
func countRows(t *testing.T, db, query string, args ...any) int {
	t.Helper()
	conn, err := sql.Open("sqlite3", "file:"+db+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		if strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "unable to open") {
			return 0
		}
		t.Fatal(err)
	}
	return n
}

func TestDaemonReloadAndStop(t *testing.T) {
	p := provider.New()
	prov := e2e.Serve(t, p.Handler())
	_, slackURL := e2e.Slack(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "results.db")
	rows := func(probe string) int {
		return countRows(t, db, "SELECT count(*) FROM results WHERE probe = ?", probe)
	}

	addr := e2e.FreeAddr(t)
	config := func(probes ...string) harness.Config {
		cfg := harness.Fast(prov, slackURL, probes...)
		cfg.Server.Listen = addr
		return cfg
	}
	path := e2e.Config(t, dir, config("alpha"))
	d := e2e.Start(t, path)
	d.WaitFor("alpha to run 3 times", func() bool { return rows("alpha") >= 3 })
	for path, want := range map[string]string{
		"/healthz": `{"status":"ok","role":"leader"`,
		"/metrics": `toolpulse_runs_total{code="none",outcome="pass",probe="alpha"}`,
		// A single instance on SQLite leads alone, from its start.
		"/metrics#leader": "\ntoolpulse_fleet_leader 1\n",
		"/metrics#nodes":  "\ntoolpulse_fleet_nodes 1\n",
		"/api/v1/fleet":   `"role":"leader"`,
	} {
		path, _, _ = strings.Cut(path, "#")
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			d.T.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			d.T.Errorf("GET %s = %d, body lacks %q:\n%s", path, resp.StatusCode, want, body)
		}
	}

	// A broken config is refused with its position, and alpha keeps running.
	broken := strings.Replace(config("alpha", "beta").YAML(), "interval: 200ms", "interval: soon", 1)
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Signal(syscall.SIGHUP)
	d.WaitFor("the refused reload to be logged", func() bool {
		return strings.Contains(d.Log.String(), "reload refused") && strings.Contains(d.Log.String(), "checks.yaml:5:13")
	})
	before := rows("alpha")
	d.WaitFor("alpha to keep running", func() bool { return rows("alpha") >= before+2 })
	if rows("beta") != 0 {
		d.T.Fatalf("beta ran from a refused config")
	}

	// A good config adds beta and removes alpha without a restart.
	e2e.Config(t, dir, config("beta"))
	d.Signal(syscall.SIGHUP)
	d.WaitFor("beta to run", func() bool { return rows("beta") >= 2 })
	stopped := rows("alpha")
	time.Sleep(600 * time.Millisecond) // three of alpha's intervals
	if got := rows("alpha"); got > stopped+1 {
		d.T.Errorf("alpha ran %d more times after it was removed", got-stopped)
	}

	if err := d.Stop(syscall.SIGTERM); err != nil {
		d.T.Errorf("SIGTERM: %v, want exit 0", err)
	}
	if !strings.Contains(d.Log.String(), `msg="probe run"`) || !strings.Contains(d.Log.String(), "outcome=pass") {
		d.T.Errorf("no per-run log line with its outcome")
	}
}

// TestDaemonRestartAlertsOnce kills the daemon with SIGKILL while a probe
// fails and while Slack is down: a restart must not repeat the firing alert,
// must deliver what was left in the outbox, and must resolve exactly once.
func TestDaemonRestartAlertsOnce(t *testing.T) {
	p := provider.New()
	p.SetDrifted(true) // the list-only consumer fails: contract_error
	prov := e2e.Serve(t, p.Handler())
	slack, slackURL := e2e.Slack(t)
	dir := t.TempDir()
	config := e2e.Config(t, dir, harness.Fast(prov, slackURL, "search"))
	db := filepath.Join(dir, "results.db")
	runs := func() int { return countRows(t, db, "SELECT count(*) FROM results") }

	d := e2e.Start(t, config)
	d.WaitFor("the firing alert", func() bool { return slack.Count(":red_circle: search contract_error") == 1 })
	n := runs()
	d.WaitFor("more failing runs", func() bool { return runs() >= n+2 })
	_ = d.Stop(syscall.SIGKILL)

	d = e2e.Start(t, config)
	n = runs()
	d.WaitFor("failing runs after the restart", func() bool { return runs() >= n+3 })
	if got := slack.Count(":red_circle: search"); got != 1 {
		d.T.Errorf("%d firing alerts after a restart during a known failure, want 1", got)
	}

	// Slack goes down just as the probe recovers: the resolved message
	// waits in the outbox, survives a kill, and is delivered after restart.
	slack.SetDown(true)
	p.SetDrifted(false)
	d.WaitFor("a refused delivery", func() bool { return slack.Refused() >= 1 })
	_ = d.Stop(syscall.SIGKILL)
	if got := countRows(t, db, "SELECT count(*) FROM alerts WHERE kind = 'resolved' AND state = 'pending'"); got != 1 {
		d.T.Fatalf("%d pending resolved alerts in the outbox after the kill, want 1", got)
	}

	slack.SetDown(false)
	d = e2e.Start(t, config)
	d.WaitFor("the resolved message after the restart", func() bool { return slack.Count(":large_green_circle: search resolved") == 1 })
	n = runs()
	d.WaitFor("passing runs", func() bool { return runs() >= n+3 })
	if err := d.Stop(syscall.SIGTERM); err != nil {
		d.T.Errorf("SIGTERM: %v, want exit 0", err)
	}
	if got := slack.Count(":large_green_circle: search resolved"); got != 1 {
		d.T.Errorf("%d resolved messages, want exactly 1", got)
	}
	if got := slack.Count(":red_circle: search"); got != 1 {
		d.T.Errorf("%d firing alerts in all, want 1", got)
	}
}

// TestDaemonDriftOnce runs the real daemon while the provider makes the
// seed-000 change: one drift event and one shape_drift alert, however many
// runs show the new layout; the API marks the runs drifted until the
// profile has learned the layout, and the shapes table holds two shapes.
func TestDaemonDriftOnce(t *testing.T) {
	p := provider.New()
	prov := e2e.Serve(t, p.Handler())
	slack, slackURL := e2e.Slack(t)
	dir := t.TempDir()
	cfg := harness.Fast(prov, slackURL, "search")
	cfg.Server.Listen = e2e.FreeAddr(t)
	config := e2e.Config(t, dir, cfg)
	db := filepath.Join(dir, "results.db")
	runs := func() int { return countRows(t, db, "SELECT count(*) FROM results") }

	d := e2e.Start(t, config)
	d.WaitFor("an established baseline", func() bool { return runs() >= 7 })
	p.SetDrifted(true)
	d.WaitFor("the drift event", func() bool { return countRows(t, db, "SELECT count(*) FROM drifts") == 1 })
	n := runs()
	d.WaitFor("more drifted runs", func() bool { return runs() >= n+8 })

	if got := countRows(t, db, "SELECT count(*) FROM drifts"); got != 1 {
		t.Errorf("%d drift events, want 1", got)
	}
	if got := countRows(t, db, "SELECT count(*) FROM alerts WHERE kind = 'shape_drift'"); got != 1 {
		t.Errorf("%d shape_drift alerts, want 1", got)
	}
	d.WaitFor("the drift message in Slack", func() bool { return slack.Count(":warning: search response shape changed") >= 1 })
	if got := slack.Count(":warning: search response shape changed"); got != 1 {
		t.Errorf("%d drift messages in Slack, want 1", got)
	}
	if got := countRows(t, db, "SELECT count(*) FROM shapes"); got != 2 {
		t.Errorf("%d shapes, want 2", got)
	}
	if got := countRows(t, db, "SELECT count(*) FROM results WHERE shape_drift IS NOT NULL"); got != 2 {
		t.Errorf("%d runs marked drifted, want 2 (the first two of the new layout)", got)
	}

	resp, err := http.Get("http://" + cfg.Server.Listen + "/api/v1/probes/search/results?limit=1000")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Results []results.Envelope `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	var marks []string
	for i := len(page.Results) - 1; i >= 0; i-- { // oldest first
		if s := page.Results[i].Shape; s != nil && len(s.Drift) > 0 {
			marks = append(marks, strings.Join(s.Drift, "; ")+" from "+s.Baseline)
		}
	}
	want := "results: list<object(3 keys)> -> object(1 keys) from "
	if len(marks) != 2 || !strings.HasPrefix(marks[0], want) || marks[0] != marks[1] {
		t.Errorf("API drift marks, oldest first: %q; want two of %q", marks, want+"…")
	}
	if err := d.Stop(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM: %v, want exit 0", err)
	}
}
