package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
)

// TestRunLeaksNoGoroutines runs the whole daemon in this process (HTTP
// server, scheduler, executor, pipeline, Slack outbox, store), reloads it
// twice with a different set of probes and stops it: every goroutine it
// started must be gone afterwards. A reload that left a removed probe's
// job, client or connection behind, or a shutdown that forgot a worker,
// fails here.
func TestRunLeaksNoGoroutines(t *testing.T) {
	// A SIGHUP with no handler registered would kill the test binary: hold
	// one of our own for the whole test, registered before the leak
	// baseline so that os/signal's goroutine belongs to the baseline.
	hup := make(chan os.Signal, 8)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "broken") {
			// A contract error, so that alerts go through the outbox to Slack.
			_, _ = w.Write([]byte(`{"results": {"items": []}}`))
			return
		}
		_, _ = w.Write([]byte(`{"results": [{"id": "doc_1", "score": 0.9}]}`))
	}))
	defer provider.Close()
	slack := &fakeSlack{}
	slackServer := httptest.NewServer(slack)
	defer slackServer.Close()

	dir := t.TempDir()
	config := filepath.Join(dir, "checks.yaml")
	listen := freeLoopbackAddr(t)
	write := func(probes ...string) {
		t.Helper()
		cfg := daemonConfig(provider.URL, slackServer.URL)
		cfg = strings.Replace(cfg, `server: {listen: ""}`, "server: {listen: "+listen+"}", 1)
		var b strings.Builder
		b.WriteString(cfg)
		for _, name := range probes {
			b.WriteString("  - name: " + name + "\n    request: {method: POST, url: \"" +
				provider.URL + "/" + name + "\", json: {query: q}}\n    consumer: list_only\n")
		}
		if err := os.WriteFile(config, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("steady", "broken")

	checkLeaks := testkit.NoLeaks(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &testkit.Log{}
	tk := testkit.New(t)
	tk.Attach("toolpulse", logs)
	done := make(chan int, 1)
	go func() {
		lookup := func(string) (string, bool) { return "", false }
		done <- run(ctx, []string{"-c", config, "run", "--grace", "2s"}, lookup, logs, logs)
	}()

	db := filepath.Join(dir, "results.db")
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				tk.Fatalf("timed out after 20s waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	runsOf := func(probe string) int {
		return countRows(t, db, "SELECT count(*) FROM results WHERE probe = ?", probe)
	}
	get := func(path string) {
		t.Helper()
		resp, err := http.Get("http://" + listen + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	waitUntil("first runs and the alert", func() bool {
		return strings.Contains(logs.String(), "toolpulse started") &&
			runsOf("steady") > 0 && slack.count("broken") > 0
	})
	get("/")
	get("/metrics")

	reload := func(n int, probes ...string) {
		t.Helper()
		write(probes...)
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitUntil("reload", func() bool { return strings.Count(logs.String(), "config reloaded") >= n })
	}
	// Remove a failing probe (its alert resolves) and add one, then go back.
	reload(1, "steady", "fresh")
	waitUntil("the added probe's runs", func() bool { return runsOf("fresh") > 0 })
	reload(2, "steady", "broken")
	before := runsOf("broken")
	waitUntil("the re-added probe's runs", func() bool { return runsOf("broken") > before })
	get("/probes/steady")

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			tk.Fatalf("run exited %d", code)
		}
	case <-time.After(30 * time.Second):
		tk.Fatalf("run did not stop within 30s")
	}
	http.DefaultClient.CloseIdleConnections()
	checkLeaks()
}
