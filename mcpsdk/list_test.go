package mcpsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// list makes one ListTools against url on a transport of the test's own.
func list(t *testing.T, url string) (*mcpsdk.ToolList, error) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	return mcpsdk.ListTools(ctx, mcpsdk.ListRequest{
		URL:          url,
		Header:       http.Header{"Authorization": {secretToken}},
		MaxBodyBytes: 1 << 20,
		HTTPClient:   &http.Client{Transport: tr},
	})
}

// headerClash is a tool the go-sdk client drops from its ListTools: its
// x-mcp-header annotation is on an object, not a primitive.
func headerClash() mcptest.Tool {
	return mcptest.Tool{
		Name:        "header-clash",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"where":{"type":"object","x-mcp-header":"Where"}}}`),
	}
}

// TestListTools: every page of tools/list, in both eras, with every entry
// as the server sent it, the server's name and the negotiated version; a
// tool the SDK would drop is listed and flagged.
func TestListTools(t *testing.T) {
	for _, e := range []era{legacyJSON, legacySSE, stateless} {
		t.Run(e.name, func(t *testing.T) {
			t.Cleanup(testkit.NoLeaks(t))
			cfg := e.cfg
			cfg.Name, cfg.PageSize = "weather-server", 2
			cfg.Tools = []mcptest.Tool{weather(), plain("echo", "hi"), headerClash(), plain("last", "x")}
			s := mcptest.Start(t, cfg)
			got, err := list(t, s.URL)
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			var names []string
			for _, tool := range got.Tools {
				names = append(names, tool.Name)
				var def struct {
					Name string `json:"name"`
				}
				if json.Unmarshal(tool.Definition, &def) != nil || def.Name != tool.Name {
					t.Errorf("%s: Definition %s is not the entry as sent", tool.Name, tool.Definition)
				}
				if (tool.Invalid != "") != (tool.Name == "header-clash") {
					t.Errorf("%s: Invalid %q", tool.Name, tool.Invalid)
				}
			}
			if strings.Join(names, ",") != "get-weather,echo,header-clash,last" {
				t.Errorf("tools %v, want all four, from both pages, in order", names)
			}
			if n := len(s.Calls("tools/list")); n != 2 {
				t.Errorf("%d tools/list requests, want 2 (two pages)", n)
			}
			if inv := got.Tools[2].Invalid; !strings.Contains(inv, "x-mcp-header") {
				t.Errorf("header-clash flagged %q, want the SDK's reason", inv)
			}
			if got.Server.Name != "weather-server" || got.Server.Version != "1.0.0" || got.ProtocolVersion == "" || got.Truncated {
				t.Errorf("server %+v, version %q, truncated %v", got.Server, got.ProtocolVersion, got.Truncated)
			}
			if n := len(s.Calls("tools/call")); n != 0 {
				t.Errorf("%d tools/call requests, want none", n)
			}
		})
	}
}

// TestListToolsTruncated: the listing stops after 10 pages and says that
// it goes on.
func TestListToolsTruncated(t *testing.T) {
	var tools []mcptest.Tool
	for i := range 12 {
		tools = append(tools, plain(fmt.Sprintf("tool-%02d", i), "x"))
	}
	s := mcptest.Start(t, mcptest.Config{Tools: tools, PageSize: 1})
	got, err := list(t, s.URL)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if len(got.Tools) != 10 || !got.Truncated {
		t.Errorf("%d tools, truncated %v; want 10 and true", len(got.Tools), got.Truncated)
	}
}

// TestListToolsFailures: a failed listing is a typed error, never an
// empty list, and its message shows no header.
func TestListToolsFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	cases := []struct {
		name   string
		url    func(t *testing.T) string
		code   results.Code
		phrase string
	}{
		{"refused", func(*testing.T) string { return refused }, results.CodeConnectionRefused, "connection refused"},
		{"internal error", func(t *testing.T) string {
			return mcptest.Start(t, mcptest.Config{Tools: []mcptest.Tool{weather()}, Faults: []mcptest.Fault{mcptest.InternalError("tools/list")}}).URL
		}, results.CodeToolServerError, "tools/list: JSON-RPC error -32603"},
		{"garbage", func(t *testing.T) string {
			return mcptest.Start(t, mcptest.Config{Encoding: mcptest.SSE, Tools: []mcptest.Tool{weather()}, Faults: []mcptest.Fault{mcptest.SSEGarbage("tools/list")}}).URL
		}, results.CodeMCPProtocol, "tools/list"},
		{"no common version", func(t *testing.T) string {
			return mcptest.Start(t, mcptest.Config{Faults: []mcptest.Fault{mcptest.NoCommonVersion()}}).URL
		}, results.CodeMCPProtocol, "no protocol version in common"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(testkit.NoLeaks(t))
			got, err := list(t, c.url(t))
			var rerr *results.Error
			if !errors.As(err, &rerr) || got != nil {
				t.Fatalf("ListTools = %v, %v; want nil and a *results.Error", got, err)
			}
			if rerr.Code != c.code || !strings.Contains(rerr.Message, c.phrase) {
				t.Errorf("%s %q, want %s containing %q", rerr.Code, rerr.Message, c.code, c.phrase)
			}
			if strings.Contains(rerr.Message, "s3cret") || strings.Contains(rerr.Message, "\n") {
				t.Errorf("message %q shows the header or spans lines", rerr.Message)
			}
		})
	}
}

// TestListRequestChecked: a request ListTools cannot use is a plain error.
func TestListRequestChecked(t *testing.T) {
	_, err := mcpsdk.ListTools(t.Context(), mcpsdk.ListRequest{URL: "http://127.0.0.1:1/mcp"})
	var rerr *results.Error
	if err == nil || errors.As(err, &rerr) {
		t.Errorf("ListTools without a client = %v, want a plain error", err)
	}
}

// rawServer is a legacy-era server on loopback that answers tools/list
// with page, raw: what internal/mcptest, which lists only well-formed
// tools, cannot send.
func rawServer(t *testing.T, page string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"0"}}}`, m.ID)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, page)
		case "":
			w.WriteHeader(http.StatusAccepted) // a DELETE
		default:
			if len(m.ID) == 0 {
				w.WriteHeader(http.StatusAccepted) // a notification
				return
			}
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`, m.ID)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestListToolsMalformed: a page the SDK cannot decode is still listed
// from the wire, every entry flagged, the one without a name unnamed.
func TestListToolsMalformed(t *testing.T) {
	url := rawServer(t, `{"tools":[{"name":"ok","inputSchema":{"type":"object"}},42]}`)
	got, err := list(t, url)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if len(got.Tools) != 2 {
		t.Fatalf("%d tools, want both entries: %+v", len(got.Tools), got.Tools)
	}
	if ok := got.Tools[0]; ok.Name != "ok" || !strings.Contains(ok.Invalid, "the SDK cannot decode the page") {
		t.Errorf("first entry %+v, want ok flagged as on a page the SDK cannot decode", ok)
	}
	if bad := got.Tools[1]; bad.Name != "" || string(bad.Definition) != "42" || !strings.Contains(bad.Invalid, "not an object with a name") {
		t.Errorf("second entry %+v, want 42, unnamed, flagged", bad)
	}
	if got.Server.Name != "raw" || got.ProtocolVersion != "2025-11-25" {
		t.Errorf("server %+v on %q", got.Server, got.ProtocolVersion)
	}
}
