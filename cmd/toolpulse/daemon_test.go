package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/testkit"
)

// These tests start the real binary, as an operator would, and talk to it
// only through signals, its database, its logs and a loopback Slack.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// toolpulseBinary builds the command once per test run.
func toolpulseBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolpulse-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "toolpulse")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// fakeSlack is a loopback webhook that records every message's fallback
// text and when each post arrived. It answers posts from script first (one
// step a post), then refuses while down, else accepts.
type fakeSlack struct {
	mu       sync.Mutex
	script   []func(w http.ResponseWriter)
	arrivals []time.Time
	texts    []string
	down     bool
	refusals int
}

func (s *fakeSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg struct {
		Text string `json:"text"`
	}
	_ = json.NewDecoder(r.Body).Decode(&msg)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.arrivals = append(s.arrivals, time.Now())
	if len(s.script) > 0 {
		step := s.script[0]
		s.script = s.script[1:]
		step(w)
		return
	}
	if s.down {
		s.refusals++
		http.Error(w, "internal_error", http.StatusInternalServerError)
		return
	}
	s.texts = append(s.texts, msg.Text)
	_, _ = w.Write([]byte("ok"))
}

func (s *fakeSlack) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// count returns how many accepted messages contain substr.
func (s *fakeSlack) count(substr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.texts {
		if strings.Contains(t, substr) {
			n++
		}
	}
	return n
}

func (s *fakeSlack) refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusals
}

// daemonConfig is a checks.yaml for the daemon tests: fast probes against
// the example provider, alerts to a loopback webhook.
func daemonConfig(providerURL, slackURL string, probes ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `version: 1
storage: {path: results.db}
server: {listen: ""}
defaults:
  interval: 200ms
  jitter: 50ms
  timeout: 1s
  retries: {max_attempts: 1, budget: 2s}
notify:
  slack: {webhook_url: %q}
  failure_threshold: 1
  repeat_interval: 1h
consumers:
  - name: list_only
    version: "1"
    select: |
      type(response.results) == "array"
        ? filter(response.results, .score >= 0.75)
        : fail("unsupported_results_container", "results is " + type(response.results))
probes:
`, slackURL)
	for _, name := range probes {
		fmt.Fprintf(&b, "  - name: %s\n    request: {method: POST, url: %q, json: {query: q}}\n    consumer: list_only\n",
			name, providerURL+"/search")
	}
	return b.String()
}

// daemon is one running toolpulse process. Its t holds the test's
// failures back until the end, after the tail of the process's log; the
// tests assert through it.
type daemon struct {
	t    *testkit.T
	cmd  *exec.Cmd
	logs *testkit.Log
	done chan error
}

func startDaemon(t *testing.T, config string) *daemon {
	t.Helper()
	cmd := exec.Command(toolpulseBinary(t), "-c", config, "run", "--grace", "2s")
	logs := &testkit.Log{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tk := testkit.New(t)
	tk.Attach("toolpulse", logs)
	d := &daemon{t: tk, cmd: cmd, logs: logs, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

// stop sends sig and waits for the process to exit.
func (d *daemon) stop(sig syscall.Signal) error {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatal(err)
	}
	select {
	case err := <-d.done:
		return err
	case <-time.After(20 * time.Second):
		d.t.Fatalf("toolpulse did not exit within 20s of %v", sig)
		return nil
	}
}

// waitFor polls cond until it holds or 15 seconds pass. The failure is
// the daemon's: it comes after the tail of its log.
func waitFor(t *testing.T, what string, d *daemon, cond func() bool) {
	t.Helper()
	d.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out after 15s waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freeLoopbackAddr returns a loopback address that was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

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
	prov := httptest.NewServer(p.Handler())
	defer prov.Close()
	slack := &fakeSlack{}
	slackSrv := httptest.NewServer(slack)
	defer slackSrv.Close()
	dir := t.TempDir()
	config, db := filepath.Join(dir, "checks.yaml"), filepath.Join(dir, "results.db")
	write := func(s string) {
		if err := os.WriteFile(config, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rows := func(probe string) int {
		return countRows(t, db, "SELECT count(*) FROM results WHERE probe = ?", probe)
	}

	addr := freeLoopbackAddr(t)
	withServer := func(c string) string {
		return strings.Replace(c, `server: {listen: ""}`, `server: {listen: "`+addr+`"}`, 1)
	}
	write(withServer(daemonConfig(prov.URL, slackSrv.URL, "alpha")))
	d := startDaemon(t, config)
	waitFor(t, "alpha to run 3 times", d, func() bool { return rows("alpha") >= 3 })
	for path, want := range map[string]string{
		"/healthz": `{"status":"ok"}`,
		"/metrics": `toolpulse_runs_total{code="none",outcome="pass",probe="alpha"}`,
	} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			d.t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			d.t.Errorf("GET %s = %d, body lacks %s:\n%s", path, resp.StatusCode, want, body)
		}
	}

	// A broken config is refused with its position, and alpha keeps running.
	write(withServer(strings.Replace(daemonConfig(prov.URL, slackSrv.URL, "alpha", "beta"), "interval: 200ms", "interval: soon", 1)))
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		d.t.Fatal(err)
	}
	waitFor(t, "the refused reload to be logged", d, func() bool {
		return strings.Contains(d.logs.String(), "reload refused") && strings.Contains(d.logs.String(), "checks.yaml:5:13")
	})
	before := rows("alpha")
	waitFor(t, "alpha to keep running", d, func() bool { return rows("alpha") >= before+2 })
	if rows("beta") != 0 {
		d.t.Fatalf("beta ran from a refused config")
	}

	// A good config adds beta and removes alpha without a restart.
	write(withServer(daemonConfig(prov.URL, slackSrv.URL, "beta")))
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		d.t.Fatal(err)
	}
	waitFor(t, "beta to run", d, func() bool { return rows("beta") >= 2 })
	stopped := rows("alpha")
	time.Sleep(600 * time.Millisecond) // three of alpha's intervals
	if got := rows("alpha"); got > stopped+1 {
		d.t.Errorf("alpha ran %d more times after it was removed", got-stopped)
	}

	if err := d.stop(syscall.SIGTERM); err != nil {
		d.t.Errorf("SIGTERM: %v, want exit 0", err)
	}
	if !strings.Contains(d.logs.String(), `msg="probe run"`) || !strings.Contains(d.logs.String(), "outcome=pass") {
		d.t.Errorf("no per-run log line with its outcome")
	}
}

// TestDaemonRestartAlertsOnce kills the daemon with SIGKILL while a probe
// fails and while Slack is down: a restart must not repeat the firing alert,
// must deliver what was left in the outbox, and must resolve exactly once.
func TestDaemonRestartAlertsOnce(t *testing.T) {
	p := provider.New()
	p.SetDrifted(true) // the list-only consumer fails: contract_error
	prov := httptest.NewServer(p.Handler())
	defer prov.Close()
	slack := &fakeSlack{}
	slackSrv := httptest.NewServer(slack)
	defer slackSrv.Close()
	dir := t.TempDir()
	config := filepath.Join(dir, "checks.yaml")
	if err := os.WriteFile(config, []byte(daemonConfig(prov.URL, slackSrv.URL, "search")), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "results.db")
	runs := func() int { return countRows(t, db, "SELECT count(*) FROM results") }

	d := startDaemon(t, config)
	waitFor(t, "the firing alert", d, func() bool { return slack.count(":red_circle: search contract_error") == 1 })
	n := runs()
	waitFor(t, "more failing runs", d, func() bool { return runs() >= n+2 })
	_ = d.stop(syscall.SIGKILL)

	d = startDaemon(t, config)
	n = runs()
	waitFor(t, "failing runs after the restart", d, func() bool { return runs() >= n+3 })
	if got := slack.count(":red_circle: search"); got != 1 {
		d.t.Errorf("%d firing alerts after a restart during a known failure, want 1", got)
	}

	// Slack goes down just as the probe recovers: the resolved message
	// waits in the outbox, survives a kill, and is delivered after restart.
	slack.setDown(true)
	p.SetDrifted(false)
	waitFor(t, "a refused delivery", d, func() bool { return slack.refused() >= 1 })
	_ = d.stop(syscall.SIGKILL)
	if got := countRows(t, db, "SELECT count(*) FROM alerts WHERE kind = 'resolved' AND state = 'pending'"); got != 1 {
		d.t.Fatalf("%d pending resolved alerts in the outbox after the kill, want 1", got)
	}

	slack.setDown(false)
	d = startDaemon(t, config)
	waitFor(t, "the resolved message after the restart", d, func() bool { return slack.count(":large_green_circle: search resolved") == 1 })
	n = runs()
	waitFor(t, "passing runs", d, func() bool { return runs() >= n+3 })
	if err := d.stop(syscall.SIGTERM); err != nil {
		d.t.Errorf("SIGTERM: %v, want exit 0", err)
	}
	if got := slack.count(":large_green_circle: search resolved"); got != 1 {
		d.t.Errorf("%d resolved messages, want exactly 1", got)
	}
	if got := slack.count(":red_circle: search"); got != 1 {
		d.t.Errorf("%d firing alerts in all, want 1", got)
	}
}
