package mcpsdk_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// wireRequest is one HTTP request as the server got it.
type wireRequest struct {
	method      string // JSON-RPC method, or the HTTP method of a request without one
	traceparent string
	tracestate  string
	meta        map[string]any // params._meta; nil when absent
}

// traceServer is a go-sdk server of one echo tool behind a handler that
// keeps every request's trace headers and params._meta, and the _meta the
// tool's handler saw.
type traceServer struct {
	mu       sync.Mutex
	requests []wireRequest
	toolMeta map[string]any
	toolHdr  string
}

func newTraceServer(t *testing.T) (*traceServer, string) {
	ts := &traceServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "traced", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echo"},
		func(_ context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			ts.mu.Lock()
			ts.toolMeta = req.Params.Meta
			ts.toolHdr = req.Extra.Header.Get("Traceparent")
			ts.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		wr := wireRequest{method: r.Method, traceparent: r.Header.Get("Traceparent"), tracestate: r.Header.Get("Tracestate")}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
			wr.method, wr.meta = msg.Method, msg.Params.Meta
		}
		ts.mu.Lock()
		ts.requests = append(ts.requests, wr)
		ts.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return ts, hs.URL
}

func traceCall(t *testing.T, url string, trace results.Trace) *mcpsdk.Answer {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	a, err := mcpsdk.Call(ctx, mcpsdk.Request{URL: url, Tool: "echo", MaxBodyBytes: 1 << 20,
		HTTPClient: &http.Client{Transport: tr}, Trace: trace})
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if a.Err != nil {
		t.Fatalf("Call: %v", a.Err)
	}
	return a
}

// TestCallTrace: with a trace, every HTTP request of the session carries a
// traceparent of the run's trace, a span of its own, and the synthetic
// tracestate; every JSON-RPC request and notification carries the same two
// in params._meta, which the go-sdk server hands to the tool (SPEC §10.1).
func TestCallTrace(t *testing.T) {
	ts, url := newTraceServer(t)
	trace, err := results.NewTrace(rand.Reader, "echo_probe")
	if err != nil {
		t.Fatal(err)
	}
	traceCall(t, url, trace)

	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.requests) < 3 {
		t.Fatalf("server saw %d requests, want the handshake, tools/list and tools/call", len(ts.requests))
	}
	spans := map[string]string{}
	methods := map[string]bool{}
	for _, r := range ts.requests {
		methods[r.method] = true
		id, ok := results.ParseTraceparent(r.traceparent)
		if !ok || id != trace.ID {
			t.Errorf("%s: traceparent %q, want one of trace %s", r.method, r.traceparent, trace.ID)
		}
		if r.tracestate != "toolpulse=synthetic:echo_probe" {
			t.Errorf("%s: tracestate %q, want toolpulse=synthetic:echo_probe", r.method, r.tracestate)
		}
		if other, dup := spans[r.traceparent]; dup {
			t.Errorf("%s and %s share the span %s; each request is a span of its own", other, r.method, r.traceparent)
		}
		spans[r.traceparent] = r.method
		if r.method == "server/discover" && r.meta["io.modelcontextprotocol/protocolVersion"] == nil {
			t.Errorf("server/discover: params._meta = %v, lost the keys the SDK put there", r.meta)
		}
		if r.method == http.MethodDelete || r.method == http.MethodGet {
			continue
		}
		if r.meta["traceparent"] != r.traceparent || r.meta["tracestate"] != r.tracestate {
			t.Errorf("%s: params._meta = %v, want the headers' traceparent %s and tracestate %s", r.method, r.meta, r.traceparent, r.tracestate)
		}
	}
	for _, m := range []string{"initialize", "tools/list", "tools/call"} {
		if !methods[m] {
			t.Errorf("no %s among %v", m, methods)
		}
	}
	if got, _ := ts.toolMeta["traceparent"].(string); got == "" || got != ts.toolHdr {
		t.Errorf("the tool saw _meta.traceparent %q and header %q, want the same span in both", got, ts.toolHdr)
	}
}

// TestCallNoTrace: the zero Trace (trace: false) sends no trace headers
// and nothing of a trace in _meta.
func TestCallNoTrace(t *testing.T) {
	ts, url := newTraceServer(t)
	traceCall(t, url, results.Trace{})
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, r := range ts.requests {
		if r.traceparent != "" || r.tracestate != "" || r.meta["traceparent"] != nil || r.meta["tracestate"] != nil {
			t.Errorf("%s: traceparent %q, tracestate %q, _meta %v; want none with trace off", r.method, r.traceparent, r.tracestate, r.meta)
		}
	}
}
