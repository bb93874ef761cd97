package mcpsdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/mcpsdk"
)

func weather() mcptest.Tool {
	return mcptest.Tool{
		Name:         "get-weather",
		Description:  "Current weather for a location",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}`),
		Annotations:  &mcptest.Annotations{ReadOnlyHint: mcptest.Bool(true)},
		Handler: func(context.Context, json.RawMessage) mcptest.Result {
			return mcptest.Result{Content: []mcptest.Content{mcptest.Text(`{"temperature":21.5}`)}, StructuredContent: map[string]any{"temperature": 21.5}}
		},
	}
}

// bearer adds an Authorization header, as a probe's headers go in.
type bearer struct{ next http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer t0ken")
	return b.next.RoundTrip(r)
}

// connect starts a session with the SDK's client; the session, the
// client's connections and the leak check end with the test, in that
// order.
func connect(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	client := mcp.NewClient(&mcp.Implementation{Name: "toolpulse-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, mcpsdk.Transport(url, &http.Client{Transport: bearer{tr}}), nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestSDKClient: the SDK's client connects to the test server in each era
// and encoding, lists the tools (following nextCursor) and calls one; the
// recorded requests show what it sent.
func TestSDKClient(t *testing.T) {
	tests := []struct {
		name     string
		cfg      mcptest.Config
		version  string
		sequence []string // the JSON-RPC methods received, in order
	}{
		{"legacy json", mcptest.Config{Era: mcptest.Legacy}, "2025-11-25",
			[]string{"server/discover", "initialize", "notifications/initialized", "tools/list", "tools/list", "tools/call", "DELETE"}},
		{"legacy sse", mcptest.Config{Era: mcptest.Legacy, Encoding: mcptest.SSE}, "2025-11-25",
			[]string{"server/discover", "initialize", "notifications/initialized", "tools/list", "tools/list", "tools/call", "DELETE"}},
		{"stateless json", mcptest.Config{Era: mcptest.Stateless}, mcptest.ModernVersion,
			[]string{"server/discover", "tools/list", "tools/list", "tools/call"}},
		{"stateless sse", mcptest.Config{Era: mcptest.Stateless, Encoding: mcptest.SSE}, mcptest.ModernVersion,
			[]string{"server/discover", "tools/list", "tools/list", "tools/call"}},
		{"dual era", mcptest.Config{Era: mcptest.DualEra}, mcptest.ModernVersion,
			[]string{"server/discover", "tools/list", "tools/list", "tools/call"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(testkit.NoLeaks(t))
			cfg := tt.cfg
			cfg.Tools = []mcptest.Tool{weather(), {Name: "second"}}
			cfg.PageSize = 1
			s := mcptest.Start(t, cfg)
			cs := connect(t, s.URL)
			if got := cs.InitializeResult().ProtocolVersion; got != tt.version {
				t.Errorf("negotiated %q, want %q", got, tt.version)
			}
			var names []string
			for tool, err := range cs.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatalf("listing tools: %v", err)
				}
				names = append(names, tool.Name)
			}
			if want := []string{"get-weather", "second"}; !reflect.DeepEqual(names, want) {
				t.Errorf("tools %v, want %v over two pages", names, want)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get-weather", Arguments: map[string]any{"location": "Oslo"}})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if res.IsError || !reflect.DeepEqual(res.StructuredContent, map[string]any{"temperature": 21.5}) {
				t.Errorf("result isError %v structuredContent %#v", res.IsError, res.StructuredContent)
			}
			if err := cs.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}

			var got []string
			for _, r := range s.Requests() {
				if r.HTTPMethod != http.MethodPost {
					got = append(got, r.HTTPMethod)
					continue
				}
				got = append(got, r.Method)
				if r.Authorization != "Bearer t0ken" {
					t.Errorf("%s went without the RoundTripper's Authorization header", r.Method)
				}
			}
			if !reflect.DeepEqual(got, tt.sequence) {
				t.Errorf("the server received %q, want %q", got, tt.sequence)
			}
			if tt.version == mcptest.ModernVersion {
				call := s.Calls("tools/call")[0]
				if call.Header.Get("Mcp-Method") != "tools/call" || call.Header.Get("Mcp-Name") != "get-weather" || call.ProtocolVersion != mcptest.ModernVersion || call.SessionID != "" {
					t.Errorf("tools/call headers %v", call.Header)
				}
			} else if call := s.Calls("tools/call")[0]; call.SessionID == "" || call.ProtocolVersion != "2025-11-25" {
				t.Errorf("tools/call went with session %q version %q", call.SessionID, call.ProtocolVersion)
			}
		})
	}
}

// TestSDKClientRetriesNothing: with the transport this package builds, a
// session the server forgets is not silently re-established: one
// tools/call reaches the server, and the call fails.
func TestSDKClientRetriesNothing(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusBadRequest} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Cleanup(testkit.NoLeaks(t))
			s := mcptest.Start(t, mcptest.Config{Tools: []mcptest.Tool{weather()}, Faults: []mcptest.Fault{mcptest.ForgetSession("tools/call", status).Once()}})
			cs := connect(t, s.URL)
			_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get-weather", Arguments: map[string]any{"location": "Oslo"}})
			if err == nil {
				t.Error("CallTool on a forgotten session succeeded")
			}
			if n := len(s.Calls("tools/call")); n != 1 {
				t.Errorf("%d tools/call requests, want exactly 1", n)
			}
			if n := len(s.Calls("initialize")); n != 1 {
				t.Errorf("%d initialize requests, want 1: the SDK must not re-initialize behind the probe's back", n)
			}
		})
	}
}

// TestSDKClientResumesOnce: a call whose SSE stream is cut after an
// event with an id is resumed with one GET carrying Last-Event-ID (MCP
// 2025-11-25 SSE polling); when the server refuses it (405), the call
// fails instead of trying again behind the probe's back, as the SDK's
// default of five reconnections would.
func TestSDKClientResumesOnce(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
	s := mcptest.Start(t, mcptest.Config{Tools: []mcptest.Tool{weather()}, Faults: []mcptest.Fault{mcptest.SSECut("tools/call")}})
	cs := connect(t, s.URL)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-weather", Arguments: map[string]any{"location": "Oslo"}}); err == nil {
		t.Error("CallTool succeeded on a stream cut before its answer")
	}
	var gets []string
	for _, r := range s.Requests() {
		if r.HTTPMethod == http.MethodGet {
			gets = append(gets, r.Header.Get("Last-Event-ID"))
		}
	}
	if len(gets) != 1 || gets[0] != "mcptest-prime" {
		t.Errorf("GETs with Last-Event-ID %q, want exactly one with \"mcptest-prime\"", gets)
	}
}
