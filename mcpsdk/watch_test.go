package mcpsdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

func watchCall(t *testing.T, url string, w mcpsdk.Watch) *mcpsdk.Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	a, err := mcpsdk.Call(ctx, mcpsdk.Request{URL: url, Tool: "lookup", Arguments: map[string]any{"query": "q"},
		MaxBodyBytes: 1 << 20, HTTPClient: &http.Client{}, Watch: w})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func methods(a *mcpsdk.Answer) []string {
	var out []string
	for _, x := range a.Exchanges {
		out = append(out, x.Method)
	}
	return out
}

// names are the key field of each raw listing entry.
func names(t *testing.T, entries []json.RawMessage, key string) []string {
	t.Helper()
	var out []string
	for _, e := range entries {
		var m map[string]any
		if err := json.Unmarshal(e, &m); err != nil {
			t.Fatalf("entry %s: %v", e, err)
		}
		s, _ := m[key].(string)
		out = append(out, s)
	}
	return out
}

// TestCallWatch: a call against the SDK's own server keeps what the
// server said of itself (instructions, name, version) and, only where it
// is asked to, reads prompts/list and resources/list from the wire, entries
// as the server sent them; a server that declares no prompts has none,
// without a prompts/list.
func TestCallWatch(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
	s, err := mcpsdk.NewServer(mcpsdk.ServerInfo{Name: "docs", Version: "1.2.0", Instructions: "Use lookup for the docs."},
		lookup("Looks a query up."))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	a := watchCall(t, srv.URL, mcpsdk.Watch{})
	if a.Err != nil {
		t.Fatalf("call: %s", describe(a))
	}
	if want := (mcpsdk.ServerInfo{Name: "docs", Version: "1.2.0", Instructions: "Use lookup for the docs."}); a.Server != want {
		t.Errorf("server %+v, want %+v", a.Server, want)
	}
	if a.Prompts != nil || a.Resources != nil || slices.Contains(methods(a), "prompts/list") {
		t.Errorf("unwatched listings read: prompts %s, resources %s, exchanges %v", a.Prompts, a.Resources, methods(a))
	}

	a = watchCall(t, srv.URL, mcpsdk.Watch{Prompts: true, Resources: true})
	if a.Err != nil {
		t.Fatalf("call: %s", describe(a))
	}
	if a.Prompts == nil || len(a.Prompts) != 0 || a.Resources == nil || len(a.Resources) != 0 {
		t.Errorf("a server without prompts or resources: %q, %q; want both empty, not nil", a.Prompts, a.Resources)
	}
	if got := methods(a); slices.Contains(got, "prompts/list") || slices.Contains(got, "resources/list") {
		t.Errorf("exchanges %v: listed what the server does not declare", got)
	}

	if err := s.SetPrompt(mcpsdk.ServerPrompt{Name: "summarize", Description: "Summarize a text.",
		Arguments: []mcpsdk.PromptArgument{{Name: "text", Required: true}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPrompt(mcpsdk.ServerPrompt{Name: "translate", Description: "Translate a text."}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetResource(mcpsdk.ServerResource{URI: "docs://readme", Name: "readme", MIMEType: "text/markdown", Text: "# Docs"}); err != nil {
		t.Fatal(err)
	}
	a = watchCall(t, srv.URL, mcpsdk.Watch{Prompts: true, Resources: true})
	if a.Err != nil {
		t.Fatalf("call: %s", describe(a))
	}
	want := []string{"server/discover", "initialize", "notifications/initialized", "tools/list", "prompts/list", "resources/list", "tools/call", "DELETE"}
	if got := methods(a); !slices.Equal(got, want) {
		t.Errorf("exchanges %v, want %v", got, want)
	}
	if got := names(t, a.Prompts, "name"); !slices.Equal(got, []string{"summarize", "translate"}) {
		t.Errorf("prompts %v", got)
	}
	if got := names(t, a.Resources, "uri"); !slices.Equal(got, []string{"docs://readme"}) {
		t.Errorf("resources %v", got)
	}
	if !bytes.Contains(a.Prompts[0], []byte(`"arguments":[{"name":"text","required":true}]`)) {
		t.Errorf("prompt entry %s, want its arguments as sent", a.Prompts[0])
	}

	a = watchCall(t, srv.URL, mcpsdk.Watch{Resources: true})
	if a.Err != nil || a.Prompts != nil || len(a.Resources) != 1 || slices.Contains(methods(a), "prompts/list") {
		t.Errorf("resources only: prompts %q, resources %q, exchanges %v (%s)", a.Prompts, a.Resources, methods(a), describe(a))
	}
}

// TestCallWatchFails: a watched listing that fails fails the call, as
// tools/list does, with the listing's exchange to blame; the tool's
// entry is still there and the listing is not.
func TestCallWatchFails(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
	s, err := mcpsdk.NewServer(mcpsdk.ServerInfo{Name: "docs", Version: "1.2.0"}, lookup("Looks a query up."))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetPrompt(mcpsdk.ServerPrompt{Name: "summarize"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"prompts/list"`)) {
			http.Error(w, "prompts are being rebuilt", http.StatusInternalServerError)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.ServeHTTP(w, r)
	}))
	defer srv.Close()
	a := watchCall(t, srv.URL, mcpsdk.Watch{Prompts: true})
	if a.Err == nil || a.Err.Code != results.CodeServerError {
		t.Fatalf("a failing prompts/list: %s; want server_error", describe(a))
	}
	blamed := ""
	for _, x := range a.Exchanges {
		if x.Code != "" {
			blamed = x.Method
		}
	}
	if blamed != "prompts/list" || a.Tool == nil || a.Prompts != nil || slices.Contains(methods(a), "tools/call") {
		t.Errorf("blamed %q, tool %s, prompts %q, exchanges %v; want prompts/list blamed, the tool's entry, no prompts, no call",
			blamed, a.Tool, a.Prompts, methods(a))
	}
}

// TestCallWatchStateless: in the 2026-07-28 era the server says its
// instructions in server/discover, and the listings are read the same
// way, without a session.
func TestCallWatchStateless(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
	srv := mcp.NewServer(&mcp.Implementation{Name: "modern", Version: "2.0.0"},
		&mcp.ServerOptions{Instructions: "Stateless instructions."})
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Looks a query up."},
		func(context.Context, *mcp.CallToolRequest, struct {
			Query string `json:"query"`
		}) (*mcp.CallToolResult, map[string]any, error) {
			return nil, map[string]any{"ok": true}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "summarize", Description: "Summarize."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	defer hs.Close()
	a := watchCall(t, hs.URL, mcpsdk.Watch{Prompts: true, Resources: true})
	if a.Err != nil {
		t.Fatalf("call: %s", describe(a))
	}
	if a.ProtocolVersion != "2026-07-28" {
		t.Errorf("protocol version %q, want the stateless 2026-07-28", a.ProtocolVersion)
	}
	if a.Server.Instructions != "Stateless instructions." || a.Server.Name != "modern" || a.Server.Version != "2.0.0" {
		t.Errorf("server %+v, want the discover result's instructions and serverInfo", a.Server)
	}
	if got := names(t, a.Prompts, "name"); !slices.Equal(got, []string{"summarize"}) || a.Resources == nil {
		t.Errorf("prompts %v, resources %q; exchanges %v", got, a.Resources, methods(a))
	}
}
