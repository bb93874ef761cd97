package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

// TestHistoryShowsTrace: a run of a traced probe (trace is on by default)
// keeps the trace its request carried, and check, history (table, JSON
// and CSV) show that id, the one the provider saw; a probe with trace:
// false shows none (SPEC §10.1).
func TestHistoryShowsTrace(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // path -> traceparent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.Header.Get("Traceparent")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"items":[{"id":"a"}]}`))
	}))
	t.Cleanup(srv.Close)
	h := newCLIRun(t)
	config := `version: 1
storage: {path: results.db}
consumers:
  - {name: c, select: response.items}
probes:
  - {name: traced, request: {url: "` + srv.URL + `/traced"}, consumer: c}
  - {name: untraced, request: {url: "` + srv.URL + `/untraced"}, consumer: c, trace: false}
`
	if err := os.WriteFile(filepath.Join(h.dir, "checks.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := h.run("check", "--format", "json")
	if code != exitOK {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
	mu.Lock()
	traceID, ok := results.ParseTraceparent(seen["/traced"])
	untracedHeader := seen["/untraced"]
	mu.Unlock()
	if !ok || untracedHeader != "" {
		t.Fatalf("provider saw traceparent %q and %q; want one on the traced probe only", seen["/traced"], untracedHeader)
	}
	envs := decodeEnvelopes(t, out)
	if envs["traced"].TraceID != traceID || envs["untraced"].TraceID != "" {
		t.Errorf("check: trace_id %q and %q, want %s and none", envs["traced"].TraceID, envs["untraced"].TraceID, traceID)
	}

	code, out, _ = h.run("history")
	if code != exitOK || !strings.Contains(out, "TRACE") || !strings.Contains(out, traceID) {
		t.Errorf("history: exit %d, want a TRACE column with %s\n%s", code, traceID, out)
	}
	code, out, _ = h.run("history", "--probe", "untraced")
	if code != exitOK || strings.Contains(out, "TRACE") {
		t.Errorf("history of an untraced probe: exit %d, want no TRACE column\n%s", code, out)
	}
	code, out, _ = h.run("history", "--format", "json")
	got := map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got[row["probe"].(string)] = row["trace_id"]
	}
	if code != exitOK || got["traced"] != traceID || got["untraced"] != nil {
		t.Errorf("history --format json: exit %d, trace_id %v; want traced %s and untraced null", code, got, traceID)
	}
	code, out, _ = h.run("history", "--format", "csv", "--probe", "traced")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 2 || !strings.HasSuffix(lines[0], ",trace_id") || !strings.HasSuffix(lines[1], ","+traceID) {
		t.Errorf("history --format csv: exit %d, want a trace_id column ending in %s\n%s", code, traceID, out)
	}
}
