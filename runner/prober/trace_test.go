package prober

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/results"
)

// traceHeaders is what a provider saw of each request's trace context.
type traceHeaders struct {
	mu   sync.Mutex
	seen []http.Header
}

func (h *traceHeaders) keep(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, http.Header{"Traceparent": r.Header.Values("Traceparent"), "Tracestate": r.Header.Values("Tracestate")})
}

// TestHTTPRunTraced: every request of a traced HTTP run (a retry and a
// redirect's hop included) carries a traceparent of the run's trace, whose
// id the result keeps, a span of its own, and the synthetic tracestate
// naming the probe (SPEC §10.1).
func TestHTTPRunTraced(t *testing.T) {
	var h traceHeaders
	var n int
	var mu sync.Mutex
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		h.keep(r)
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		switch {
		case first:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case r.URL.Path == "/search":
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(bodyOriginalList))
		}
	})
	p := testProbe(t, url)
	p.Trace = true
	res := NewExecutor(Options{}).Run(context.Background(), p)
	if res.Outcome != results.Pass {
		t.Fatalf("run = %s %v, want pass", res.Outcome, res.Error)
	}
	if len(res.TraceID) != 32 {
		t.Fatalf("TraceID = %q, want the run's trace id", res.TraceID)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.seen) != 3 {
		t.Fatalf("provider saw %d requests, want 3 (a 503, its retry, the redirect's hop)", len(h.seen))
	}
	spans := map[string]bool{}
	for i, hd := range h.seen {
		parent, state := hd.Get("Traceparent"), hd.Get("Tracestate")
		if id, ok := results.ParseTraceparent(parent); !ok || id != res.TraceID {
			t.Errorf("request %d: traceparent %q, want a span of trace %s", i+1, parent, res.TraceID)
		}
		if len(hd.Values("Traceparent")) != 1 {
			t.Errorf("request %d: %d traceparent headers, want 1", i+1, len(hd.Values("Traceparent")))
		}
		if state != "toolpulse=synthetic:external_search" {
			t.Errorf("request %d: tracestate %q, want toolpulse=synthetic:external_search", i+1, state)
		}
		if spans[parent] {
			t.Errorf("request %d reuses the span of an earlier request: %s", i+1, parent)
		}
		spans[parent] = true
	}

	again := NewExecutor(Options{}).Run(context.Background(), p)
	if again.TraceID == res.TraceID {
		t.Errorf("two runs share the trace %s; each run is a trace of its own", res.TraceID)
	}
}

// TestRunTraceOff: trace off sends no trace headers and keeps no trace id;
// a traceparent header the probe sets itself (which the loader turns
// trace off for) goes out as written.
func TestRunTraceOff(t *testing.T) {
	var h traceHeaders
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		h.keep(r)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(bodyOriginalList))
	})
	const own = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	p := testProbe(t, url)
	p.Steps[0].Request.Headers["traceparent"] = checks.Secret(own)
	res := NewExecutor(Options{}).Run(context.Background(), p)
	if res.Outcome != results.Pass || res.TraceID != "" {
		t.Fatalf("run = %s %v, trace %q; want a pass without a trace", res.Outcome, res.Error, res.TraceID)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, hd := range h.seen {
		if got := hd.Values("Traceparent"); len(got) != 1 || got[0] != own || hd.Get("Tracestate") != "" {
			t.Errorf("traceparent %q, tracestate %q; want the probe's own %s and no tracestate", got, hd.Get("Tracestate"), own)
		}
	}
}

// TestMCPRunTraced: a traced MCP run marks every request of its sessions
// with the run's trace, in headers and in params._meta, and keeps the id.
func TestMCPRunTraced(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Config{Era: mcptest.Legacy, Tools: []mcptest.Tool{searchTool()}})
	p := mcpProbe(srv, results.ContractError)
	p.Trace = true
	res := NewExecutor(Options{}).Run(context.Background(), p)
	if res.Outcome != results.Pass || len(res.TraceID) != 32 {
		t.Fatalf("run = %s %v, trace %q; want a traced pass", res.Outcome, res.Error, res.TraceID)
	}
	calls := 0
	for _, r := range srv.Requests() {
		parent := r.Header.Get("Traceparent")
		if id, ok := results.ParseTraceparent(parent); !ok || id != res.TraceID {
			t.Errorf("%s %s: traceparent %q, want a span of trace %s", r.HTTPMethod, r.Method, parent, res.TraceID)
		}
		if r.Method == "" {
			continue
		}
		var msg struct {
			Params struct {
				Meta map[string]string `json:"_meta"`
			} `json:"params"`
		}
		_ = json.Unmarshal(r.Body, &msg)
		if msg.Params.Meta["traceparent"] != parent || msg.Params.Meta["tracestate"] != r.Header.Get("Tracestate") {
			t.Errorf("%s: _meta %v, want the headers' traceparent and tracestate", r.Method, msg.Params.Meta)
		}
		if r.Method == "tools/call" {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("%d tools/call requests, want 1", calls)
	}

	p.Trace = false
	off := NewExecutor(Options{}).Run(context.Background(), p)
	if off.TraceID != "" {
		t.Errorf("trace off: TraceID = %q, want none", off.TraceID)
	}
}
