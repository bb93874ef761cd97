package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// The examples under examples/prometheus and examples/systemd are checked
// by the tools that would read them in production: promtool, a real
// Prometheus scraping the real daemon, and systemd-analyze.

// tool returns the path of a command the test needs. Without it the test
// is skipped, unless CI=true or TOOLPULSE_DEPLOY_TEST=required, where a
// missing tool fails the test instead: .ci/run installs them.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	if path, err := exec.LookPath(name); err == nil {
		return path
	}
	if os.Getenv("CI") == "true" || os.Getenv("TOOLPULSE_DEPLOY_TEST") == "required" {
		t.Fatalf("no %s on PATH (Debian package %s), and CI=true or TOOLPULSE_DEPLOY_TEST=required", name, pkg)
	}
	t.Skipf("no %s on PATH (Debian package %s; set TOOLPULSE_DEPLOY_TEST=required to fail instead)", name, pkg)
	return ""
}

// runTool runs a command and fails the test with its output if it fails.
func runTool(t *testing.T, dir, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// prometheusExample copies examples/prometheus into a temporary directory
// with the token file the scrape config names, edited by the replacements
// (old, new pairs) applied to every file, and returns the directory.
func prometheusExample(t *testing.T, token string, replace ...string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "..", "examples", "prometheus")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer(replace...)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), []byte(r.Replace(string(data))), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "toolpulse.token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPrometheusExample: the scrape config and the rules are valid for
// promtool, and the rules' unit tests (toolpulse.rules.test.yml) pass.
func TestPrometheusExample(t *testing.T) {
	promtool := tool(t, "promtool", "prometheus")
	dir := prometheusExample(t, "example-token")
	runTool(t, dir, promtool, "check", "config", "prometheus.yml")
	runTool(t, dir, promtool, "check", "rules", "toolpulse.rules.yml")
	runTool(t, dir, promtool, "test", "rules", "toolpulse.rules.test.yml")
}

// TestPrometheusRulesNameRealMetrics: every toolpulse_ metric the rules
// query is one the daemon serves, so a renamed metric cannot leave a rule
// that never fires.
func TestPrometheusRulesNameRealMetrics(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join("..", "..", "examples", "prometheus", "toolpulse.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	prov := e2e.Serve(t, provider.New().Handler())
	dir := t.TempDir()
	addr := e2e.FreeAddr(t)
	// A receiver, so that the alert series exist (at 0: alpha passes, and
	// nothing is ever posted to it).
	cfg := harness.Fast(prov, "http://127.0.0.1:9/slack", "alpha")
	cfg.Server.Listen = addr
	d := e2e.Start(t, e2e.Config(t, dir, cfg))
	var exposition string
	// The per-probe gauges exist once a run has finished.
	d.WaitFor("a scrape after alpha's first run", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		exposition = string(body)
		return strings.Contains(exposition, `toolpulse_last_run_timestamp_seconds{probe="alpha"}`)
	})
	for _, name := range regexp.MustCompile(`toolpulse_[a-z_]+`).FindAllString(string(rules), -1) {
		if !strings.Contains(exposition, "# TYPE "+name+" ") {
			d.T.Errorf("toolpulse.rules.yml queries %s, which /metrics does not serve", name)
		}
	}
}

// TestPrometheusScrapesDaemon starts a real Prometheus on loopback with
// the example config (intervals and for: shortened) scraping a real
// daemon through its bearer token, and waits, through Prometheus's HTTP
// API, for ToolpulseProbeFailing to fire for the failing probe and only
// for it.
func TestPrometheusScrapesDaemon(t *testing.T) {
	bin := tool(t, "prometheus", "prometheus")
	good := e2e.Serve(t, provider.New().Handler())
	drifted := provider.New()
	drifted.SetDrifted(true) // the list-only consumer fails: contract_error
	bad := e2e.Serve(t, drifted.Handler())

	const token = "scrape-token-7f3a"
	addr := e2e.FreeAddr(t)
	cfg := harness.Fast(good, "", "healthy")
	cfg.Probes = append(cfg.Probes, harness.SearchProbe("broken", bad+"/search"))
	cfg.Server = harness.Server{Listen: addr, Token: token}
	d := e2e.Start(t, e2e.Config(t, t.TempDir(), cfg))

	promAddr := e2e.FreeAddr(t)
	dir := prometheusExample(t, token,
		"127.0.0.1:9321", addr,
		"scrape_interval: 15s", "scrape_interval: 1s",
		"evaluation_interval: 15s", "evaluation_interval: 1s",
		"for: 5m", "for: 2s")
	ctx, cancel := context.WithCancel(context.Background())
	prom := exec.CommandContext(ctx, bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(t.TempDir(), "data"),
		"--web.listen-address="+promAddr,
		"--log.level=warn")
	var promLog strings.Builder
	prom.Stdout, prom.Stderr = &promLog, &promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = prom.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", promLog.String())
		}
	})

	api := func(path string, v any) bool {
		resp, err := http.Get("http://" + promAddr + path)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
	}
	var targets struct {
		Data struct {
			ActiveTargets []struct {
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	d.WaitWithin("Prometheus to scrape toolpulse with the token", 60*time.Second, func() bool {
		return api("/api/v1/targets", &targets) && len(targets.Data.ActiveTargets) == 1 &&
			targets.Data.ActiveTargets[0].Health == "up"
	})
	type alert struct {
		Labels map[string]string `json:"labels"`
		State  string            `json:"state"`
	}
	var alerts struct {
		Data struct {
			Alerts []alert `json:"alerts"`
		} `json:"data"`
	}
	firing := func(a alert) bool {
		return a.Labels["alertname"] == "ToolpulseProbeFailing" && a.State == "firing"
	}
	d.WaitWithin("ToolpulseProbeFailing to fire for the broken probe", 60*time.Second, func() bool {
		if !api("/api/v1/alerts", &alerts) {
			return false
		}
		for _, a := range alerts.Data.Alerts {
			if firing(a) && a.Labels["probe"] == "broken" && a.Labels["outcome"] == "contract_error" {
				return true
			}
		}
		return false
	})
	for _, a := range alerts.Data.Alerts {
		if a.Labels["alertname"] == "ToolpulseProbeFailing" && a.Labels["probe"] != "broken" {
			d.T.Errorf("ToolpulseProbeFailing is %s for %s, which passes", a.State, a.Labels["probe"])
		}
		if a.Labels["alertname"] == "ToolpulseReloadRefused" || a.Labels["alertname"] == "ToolpulseDown" {
			d.T.Errorf("%s is %s on a healthy daemon", a.Labels["alertname"], a.State)
		}
	}
}

// TestSystemdUnit: systemd-analyze accepts examples/systemd/toolpulse.service
// with the binary it starts (built here) and scores its sandbox at an
// exposure of 2.0 or less; each hardening setting the README promises is
// there, and SIGHUP is how it reloads.
func TestSystemdUnit(t *testing.T) {
	checkSystemdUnit(t, "toolpulse.service", "--db /var/lib/toolpulse/", "StateDirectory=toolpulse")
}

// TestSystemdFleetUnit: the same of examples/systemd/toolpulse-fleet.service,
// a fleet node: no SQLite file (the config names the Postgres store), the
// node named after its host, and restarts without a limit while the
// database is away.
func TestSystemdFleetUnit(t *testing.T) {
	unit := checkSystemdUnit(t, "toolpulse-fleet.service", "Environment=TOOLPULSE_NODE=%H",
		"EnvironmentFile=-/etc/toolpulse/env", "StartLimitIntervalSec=0")
	if strings.Contains(unit, "--db") || strings.Contains(unit, "StateDirectory") {
		t.Error("toolpulse-fleet.service keeps a SQLite file; a fleet node's history is in Postgres")
	}
}

// checkSystemdUnit runs the checks of TestSystemdUnit on the unit of
// examples/systemd named file, which must also contain each of wants, and
// returns its text.
func checkSystemdUnit(t *testing.T, file string, wants ...string) string {
	t.Helper()
	analyze := tool(t, "systemd-analyze", "systemd")
	unit, err := os.ReadFile(filepath.Join("..", "..", "examples", "systemd", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{
		"ExecStart=/usr/local/bin/toolpulse ", "ExecReload=/bin/kill -HUP $MAINPID",
		"DynamicUser=yes", "ProtectSystem=strict", "ProtectHome=yes",
		"PrivateTmp=yes", "NoNewPrivileges=yes", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
		"SystemCallFilter=@system-service", "CapabilityBoundingSet=\n", "RestartPreventExitStatus=78 64",
	}, wants...) {
		if !strings.Contains(string(unit), want) {
			t.Errorf("%s lacks %q", file, want)
		}
	}
	// verify checks that ExecStart's binary exists: point it at a real one.
	dir := t.TempDir()
	path := filepath.Join(dir, file)
	edited := strings.Replace(string(unit), "ExecStart=/usr/local/bin/toolpulse ", "ExecStart="+e2e.Binary(t)+" ", 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	// verify exits 0 on an unknown key or a bad value, only warning: any
	// output is a failure.
	if out := runTool(t, dir, analyze, "verify", path); strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify %s:\n%s", file, out)
	}
	runTool(t, dir, analyze, "security", "--offline=true", "--threshold=20", path)
	return string(unit)
}
