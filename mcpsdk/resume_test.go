package mcpsdk_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// pollingServer is a go-sdk server whose get-weather closes the tools/call
// stream after its priming event (SSE polling, MCP 2025-11-25), asking the
// client to come back after retry, and answers a little later: on the GET
// that resumes the stream with Last-Event-ID when the server keeps its
// events (store), and nowhere otherwise.
func pollingServer(t *testing.T, retry time.Duration, store bool) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "poller", Version: "1.0.0"}, nil)
	type in struct {
		Location string `json:"location"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "get-weather", Description: "Weather for a place."},
		func(ctx context.Context, req *mcp.CallToolRequest, args in) (*mcp.CallToolResult, any, error) {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: retry})
			select {
			case <-time.After(min(retry+100*time.Millisecond, time.Second)):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Sunny in " + args.Location}}}, nil, nil
		})
	opts := &mcp.StreamableHTTPOptions{}
	if store {
		opts.EventStore = mcp.NewMemoryEventStore(nil)
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, opts))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestCallResumesPolledStream: a go-sdk server that closes the tools/call
// stream after an event id and a retry: is polled for the answer with a
// GET carrying Last-Event-ID, after the retry, within the call's time; the
// GET is an exchange of its own and the cut POST says it got no answer. A
// retry: beyond the call's time is a timeout at once, and a stream cut
// with no event id (a server that keeps no events) stays connection_reset.
func TestCallResumesPolledStream(t *testing.T) {
	t.Run("resumed", func(t *testing.T) {
		t.Cleanup(testkit.NoLeaks(t))
		url := pollingServer(t, 300*time.Millisecond, true)
		start := time.Now()
		a := call(t, url, callCase{})
		took := time.Since(start)
		t.Logf("%s in %s", describe(a), took)
		checkAnswer(t, a, "", "")
		if string(a.Response) != `"Sunny in Oslo"` {
			t.Errorf("response %s, want the tool's text", a.Response)
		}
		if took < 300*time.Millisecond {
			t.Errorf("answered in %s, before the retry: of 300ms", took)
		}
		var post, get *mcpsdk.Exchange
		for i, x := range a.Exchanges {
			switch x.Method {
			case "tools/call":
				post = &a.Exchanges[i]
			case "GET tools/call (resumed)":
				get = &a.Exchanges[i]
			}
		}
		if post == nil || get == nil {
			t.Fatalf("exchanges %s: want the tools/call POST and the GET that resumed it", describe(a))
		}
		if get.Status != http.StatusOK || get.Code != "" || get.Message != "" {
			t.Errorf("the resuming GET: %d %s %q, want 200 and the answer", get.Status, get.Code, get.Message)
		}
		if post.Code != "" || !strings.Contains(post.Message, "no response: the server closed the SSE stream after event id") {
			t.Errorf("the cut POST: %s %q, want a note that it got no answer", post.Code, post.Message)
		}
	})
	t.Run("retry beyond the call's time", func(t *testing.T) {
		t.Cleanup(testkit.NoLeaks(t))
		url := pollingServer(t, 10*time.Second, true)
		a := call(t, url, callCase{timeout: 2 * time.Second})
		t.Logf("%s", describe(a))
		checkAnswer(t, a, results.CodeTimeout, "asks to resume it after 10s (retry: 10000), beyond what is left of the attempt's time")
		for _, x := range a.Exchanges {
			if strings.HasPrefix(x.Method, "GET") {
				t.Errorf("a GET (%s) after a retry: the call cannot wait for", x.Method)
			}
		}
	})
	t.Run("no event id", func(t *testing.T) {
		t.Cleanup(testkit.NoLeaks(t))
		url := pollingServer(t, 100*time.Millisecond, false)
		a := call(t, url, callCase{})
		t.Logf("%s", describe(a))
		checkAnswer(t, a, results.CodeConnectionReset, `tools/call "get-weather": the SSE stream ended before the response`)
		for _, x := range a.Exchanges {
			if strings.HasPrefix(x.Method, "GET") {
				t.Errorf("a GET (%s) for a stream that named no event to resume from", x.Method)
			}
		}
	})
}

// TestCallResumesTypeScriptServer: a server on the TypeScript SDK with an
// event store and a retry interval, whose tool closes the tools/call
// stream (extra.closeSSEStream) and answers 300 ms later, is polled for
// the answer as its own client does.
func TestCallResumesTypeScriptServer(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
	url := mcptest.StartTSServer(t)
	a := call(t, url, callCase{tool: "poll", args: map[string]any{}})
	t.Logf("%s", describe(a))
	checkAnswer(t, a, "", "")
	if string(a.Response) != `"polled"` {
		t.Errorf("response %s, want the tool's text", a.Response)
	}
	resumed := 0
	for _, x := range a.Exchanges {
		if x.Method == "GET tools/call (resumed)" && x.Status == http.StatusOK {
			resumed++
		}
	}
	if resumed != 1 {
		t.Errorf("%d GETs resumed the tools/call stream, want 1", resumed)
	}
}

// restartingServer is a go-sdk server in the session era (it refuses
// server/discover, as servers of 2025-11-25 do) that restarts once, at the
// first tools/call: a fresh handler, so that the call's session is gone
// (404). With get, it does not restart, and get answers every GET. Its
// get-weather takes 4.5 s to answer for Tromsø.
func restartingServer(t *testing.T, get http.HandlerFunc) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "restarting", Version: "1.0.0"}, nil)
	type in struct {
		Location string `json:"location"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "get-weather"}, func(ctx context.Context, _ *mcp.CallToolRequest, args in) (*mcp.CallToolResult, any, error) {
		if args.Location == "Tromsø" {
			// A slow answer, so that the session lives a while.
			select {
			case <-time.After(4500 * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Sunny in " + args.Location}}}, nil, nil
	})
	fresh := func() http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	}
	var mu sync.Mutex
	current, restarted := fresh(), false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"server/discover"`)) {
			// Only the session era (2025-11-25), as servers deployed today.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`))
			return
		}
		if r.Method == http.MethodGet && get != nil {
			get(w, r)
			return
		}
		mu.Lock()
		if get == nil && !restarted && bytes.Contains(body, []byte(`"method":"tools/call"`)) {
			current, restarted = fresh(), true
		}
		h := current
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		// The session the restart dropped is still open in the server.
		for ss := range server.Sessions() {
			_ = ss.Close()
		}
	})
	return srv.URL
}

// TestCallSessionForgottenByRestart: a go-sdk server that restarts between
// tools/list and tools/call (restartingServer) is met in a second session,
// and the run keeps the trace: the answer says it re-initialized, and the
// exchange the session was lost at keeps session_lost and says the call
// went on.
func TestCallSessionForgottenByRestart(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
	a := call(t, restartingServer(t, nil), callCase{})
	t.Logf("%s", describe(a))
	checkAnswer(t, a, "", "")
	if !a.Reinitialized {
		t.Error("the answer does not say the call re-initialized")
	}
	lost := 0
	for _, x := range a.Exchanges {
		if x.Code == results.CodeSessionLost && x.Session == 1 && x.Status == http.StatusNotFound &&
			strings.HasPrefix(x.Message, `tools/call "get-weather": the server forgot the session (HTTP 404 Not Found)`) {
			lost++
		}
	}
	if lost != 1 {
		t.Errorf("%d exchanges keep the forgotten session, want the tools/call's: %s", lost, describe(a))
	}
}

// TestCallFailsAfterRestart: a call that fails in the second session says
// in its message that the server forgot the first one.
func TestCallFailsAfterRestart(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
	a := call(t, restartingServer(t, nil), callCase{args: map[string]any{}})
	t.Logf("%s", describe(a))
	checkAnswer(t, a, results.CodeToolInput, `; in a second session, after tools/call "get-weather": the server forgot the session (HTTP 404 Not Found)`)
}

// TestCallStandaloneStreamNeverFails: the standalone GET stream is
// optional, and a probe only listens on it: a session-era go-sdk server
// whose GET fails (500, or a dropped connection), ends its stream at once (while a slow call
// outlasts the reconnections the SDK would make), or answers it late
// still passes, within the time a stream that answers late is waited
// for, and the GET is no row.
func TestCallStandaloneStreamNeverFails(t *testing.T) {
	for _, c := range []struct {
		name string
		get  func(w http.ResponseWriter, r *http.Request)
		slow bool // a call that outlasts the SDK's reconnections
	}{
		{"500", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }, false},
		{"connection dropped", func(w http.ResponseWriter, _ *http.Request) {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
		}, true},
		{"ended at once", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
		}, true},
		{"late", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
			}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(testkit.NoLeaks(t))
			url := restartingServer(t, c.get)
			start, budget, args := time.Now(), 2500*time.Millisecond, oslo
			if c.slow {
				budget, args = 6*time.Second, map[string]any{"location": "Tromsø"}
			}
			a := call(t, url, callCase{tool: "get-weather", args: args, timeout: 8 * time.Second})
			t.Logf("%s", describe(a))
			checkAnswer(t, a, "", "")
			if took := time.Since(start); took > budget {
				t.Errorf("took %s: a late standalone stream is waited for a second at most", took)
			}
			for _, x := range a.Exchanges {
				if strings.HasPrefix(x.Method, "GET") {
					t.Errorf("the standalone stream is a row: %s", describe(a))
				}
			}
		})
	}
}
