package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// runStack writes config to dir (a new temporary one when dir is ""),
// loads it and runs the daemon's stack in-process until the test ends;
// the test can reach the store and reload while it runs.
func runStack(t *testing.T, dir string, config harness.Config) *stack {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s, err := newStack(context.Background(), loadConfig(t, dir, config), slog.New(slog.DiscardHandler), stackOptions{grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx, 0) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	return s
}

// loadConfig writes config to dir/checks.yaml and loads it.
func loadConfig(t *testing.T, dir string, config harness.Config) *checks.Config {
	t.Helper()
	cfg, err := checks.Load(e2e.Config(t, dir, config), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// eventually waits up to 20 s for cond, failing the test with what.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
