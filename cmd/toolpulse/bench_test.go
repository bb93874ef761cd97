package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner"
	"github.com/toolpulse/toolpulse/runner/prober"
)

// BenchmarkOperationAllIn is one whole operation as the daemon runs it,
// on the daemon's own wiring (newStack): the executor sends the probe's
// request to a loopback provider answering 20 search results, decodes,
// fingerprints and judges them with the repository's select_results
// consumer; the daemon's Recorder looks up drift and records the run in a
// SQLite file, and the metrics count it. What the daemon adds around it
// (gocron, the concurrency limiter, its "probe run" log line) is left out:
// runner keeps that path unexported.
//
// "steady" is the common case, the same shape on every run. "drifting"
// serves every other run in the items-wrapped layout (the consumer accepts
// both) after six runs of the list: the first wrapped run is the novel
// drift (its row and alert), the second still drifts, and from then on the
// profile has learned both layouts, so the loop measures a provider that
// alternates between two learned shapes: each run is judged against the
// profile in memory, and every pass carries a redacted shape sample,
// because its shape is not the executor's last one.
//
// The provider runs in this process: its handler's CPU and allocations are
// part of the figures.
func BenchmarkOperationAllIn(b *testing.B) {
	list := allInBody(20, false)
	wrapped := allInBody(20, true)
	tests := []struct {
		name    string
		drifted int // of the 12 warm-up runs
		body    func(n int64) []byte
	}{
		{"steady", 0, func(int64) []byte { return list }},
		// After six runs of the list, every other run is wrapped: runs 8
		// and 10 drift, and the profile has learned the wrapped layout by
		// run 12.
		{"drifting", 2, func(n int64) []byte {
			if n > 6 && n%2 == 0 {
				return wrapped
			}
			return list
		}},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			prov := harness.Bodies(tt.body)
			exec, rec, p := allInStack(b, e2e.Serve(b, prov))
			ctx := context.Background()
			once := func() (results.Result, runner.Decision) {
				r := exec.Run(ctx, p)
				d, err := rec.Record(ctx, &r)
				if err != nil {
					b.Fatal(err)
				}
				return r, d
			}

			// Enough runs for a baseline (its first five answers), and
			// proof that each case takes the path it names: in the
			// drifting case runs 8 and 10 drift, and none after.
			drifted := 0
			for range 12 {
				r, d := once()
				if r.Outcome != results.Pass || r.ValidatedCount != 20 {
					b.Fatalf("warm-up run: %s %s, %d validated", r.Outcome, r.Code(), r.ValidatedCount)
				}
				if d.Baseline != "" {
					drifted++
				}
			}
			if drifted != tt.drifted {
				b.Fatalf("%d of 12 warm-up runs drifted, want %d", drifted, tt.drifted)
			}

			b.ReportAllocs()
			for b.Loop() {
				r, d := once()
				if r.Outcome != results.Pass || d.Baseline != "" {
					b.Fatalf("run: %s %s, drifted from %q", r.Outcome, r.Code(), d.Baseline)
				}
			}
		})
	}
}

// allInStack loads a one-probe config for providerURL from a temporary
// directory, as `toolpulse run` would, and builds the daemon's stack on a
// SQLite file there. The probe sends a secret header, a query parameter
// and a JSON fixture, and is judged by the repository's select_results
// consumer.
func allInStack(b *testing.B, providerURL string) (*prober.Executor, *runner.Recorder, *checks.Probe) {
	b.Helper()
	consumer, err := filepath.Abs(filepath.Join("..", "..", "consumers", "select_results.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	probe := harness.Probe{Name: "external_search", Consumer: "select_results", Request: harness.Request{
		URL:     providerURL + "/search",
		Headers: map[string]string{"Authorization": "Bearer ${SEARCH_TOKEN}"},
		Query:   map[string]string{"lang": "en"},
		JSON:    map[string]any{"query": "API migration guide"},
	}}
	config := harness.Config{
		Storage:   harness.Storage{Path: "results.db"},
		Consumers: []harness.Consumer{{Name: "select_results", File: consumer}},
		Probes:    []harness.Probe{probe},
	}
	cfg, err := checks.Load(e2e.Config(b, b.TempDir(), config), func(name string) (string, bool) {
		return "sk-bench-SECRET", name == "SEARCH_TOKEN"
	})
	if err != nil {
		b.Fatal(err)
	}
	s, err := newStack(context.Background(), cfg, newLogger(io.Discard, "text", "info"), stackOptions{})
	if err != nil {
		b.Fatal(err)
	}
	// The daemon's own Executor and Recorder, wired as runner.New wires
	// them.
	exec := prober.NewExecutor(prober.Options{Logger: s.logger, Redactor: cfg.Redactor()})
	rec := runner.NewRecorder(s.store, cfg.Notify, runner.RecorderOptions{Logger: s.logger, Observer: s.metrics, Deliver: cfg.Notify.Slack.Enabled(), Labels: runner.ProbeLabels(cfg)})
	if err := rec.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		exec.CloseIdleConnections()
		if err := s.store.Close(); err != nil {
			b.Error(err)
		}
	})
	return exec, rec, cfg.Probe("external_search")
}

// allInBody is a seed-000 search answer with n results the consumer keeps,
// as a list or, wrapped, in the `{"items": [...]}` layout.
func allInBody(n int, wrapped bool) []byte {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{
			"id":      fmt.Sprintf("doc_%d", 700+i),
			"title":   fmt.Sprintf("API migration guide, part %d", i),
			"url":     fmt.Sprintf("https://docs.example.com/api/migration/%d", i),
			"snippet": "How to move from the v1 search endpoint to v2, with the new pagination cursor.",
			"score":   0.75 + float64(i)/100,
		}
	}
	var res any = items
	if wrapped {
		res = map[string]any{"items": items}
	}
	body, err := json.Marshal(map[string]any{"results": res, "next_cursor": nil})
	if err != nil {
		panic(err)
	}
	return body
}
