package main

import (
	"context"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
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

	// The probe named broken gets a contract error, so that alerts go
	// through the outbox to Slack.
	healthy := e2e.Serve(t, provider.New().Handler())
	drifted := provider.New()
	drifted.SetDrifted(true)
	broken := e2e.Serve(t, drifted.Handler())
	slack, slackURL := e2e.Slack(t)

	dir := t.TempDir()
	listen := e2e.FreeAddr(t)
	var config string
	write := func(probes ...string) {
		t.Helper()
		cfg := harness.Fast(healthy, slackURL)
		cfg.Server.Listen = listen
		for _, name := range probes {
			url := healthy
			if name == "broken" {
				url = broken
			}
			cfg.Probes = append(cfg.Probes, harness.SearchProbe(name, url+"/search"))
		}
		config = e2e.Config(t, dir, cfg)
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
			runsOf("steady") > 0 && slack.Count("broken") > 0
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
