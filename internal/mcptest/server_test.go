package mcptest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/toolpulse/toolpulse/internal/mcptest"
)

// weather is a read-only tool with an input and an output schema.
func weather() mcptest.Tool {
	return mcptest.Tool{
		Name:         "get-weather",
		Description:  "Current weather for a location",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number"},"unit":{"type":"string"}},"required":["temperature","unit"]}`),
		Annotations:  &mcptest.Annotations{ReadOnlyHint: mcptest.Bool(true), DestructiveHint: mcptest.Bool(false)},
		Handler: func(_ context.Context, args json.RawMessage) mcptest.Result {
			var in struct{ Location string }
			_ = json.Unmarshal(args, &in)
			return mcptest.Result{
				Content:           []mcptest.Content{mcptest.Text(`{"temperature":21.5,"unit":"C"}`)},
				StructuredContent: map[string]any{"temperature": 21.5, "unit": "C"},
			}
		},
	}
}

func TestLegacySession(t *testing.T) {
	for _, enc := range []struct {
		name        string
		encoding    mcptest.Encoding
		contentType string
	}{
		{"json", mcptest.JSON, "application/json"},
		{"sse", mcptest.SSE, "text/event-stream"},
	} {
		t.Run(enc.name, func(t *testing.T) {
			s, c := start(t, mcptest.Config{Encoding: enc.encoding, Tools: []mcptest.Tool{weather()}, Name: "weather-server"})

			init := c.handshake()
			if got := init.header.Get("Content-Type"); got != enc.contentType {
				t.Errorf("initialize Content-Type = %q, want %q", got, enc.contentType)
			}
			if c.session == "" {
				t.Fatal("initialize set no Mcp-Session-Id")
			}
			res := init.result()
			if got := res["protocolVersion"]; got != "2025-06-18" {
				t.Errorf("protocolVersion = %v, want the offered 2025-06-18", got)
			}
			if _, ok := res["capabilities"].(map[string]any)["tools"]; !ok {
				t.Errorf("capabilities = %v, want tools", res["capabilities"])
			}
			if got := res["serverInfo"].(map[string]any)["name"]; got != "weather-server" {
				t.Errorf("serverInfo.name = %v", got)
			}

			list := c.call("tools/list", nil)
			tools, _ := list.result()["tools"].([]any)
			if len(tools) != 1 {
				t.Fatalf("tools/list = %s, want one tool", list.body)
			}
			tool := tools[0].(map[string]any)
			if tool["name"] != "get-weather" || tool["description"] != "Current weather for a location" || tool["outputSchema"] == nil {
				t.Errorf("listed tool = %v", tool)
			}
			if ann := tool["annotations"].(map[string]any); ann["readOnlyHint"] != true || ann["destructiveHint"] != false {
				t.Errorf("annotations = %v, want readOnlyHint true and an explicit destructiveHint false", ann)
			}
			if _, ok := list.result()["nextCursor"]; ok {
				t.Errorf("one page has a nextCursor: %s", list.body)
			}
			if _, ok := list.result()["resultType"]; ok {
				t.Errorf("a legacy result carries resultType: %s", list.body)
			}

			call := c.call("tools/call", map[string]any{"name": "get-weather", "arguments": map[string]any{"location": "New York"}})
			r := call.result()
			if r["isError"] != nil {
				t.Errorf("isError present on a success: %s", call.body)
			}
			if want := map[string]any{"temperature": 21.5, "unit": "C"}; !reflect.DeepEqual(r["structuredContent"], want) {
				t.Errorf("structuredContent = %v, want %v", r["structuredContent"], want)
			}
			if id := call.messages[0]["id"]; id != float64(c.id) {
				t.Errorf("response id = %v, want %d", id, c.id)
			}

			del := c.do(http.MethodDelete, nil, http.Header{"Mcp-Session-Id": {c.session}})
			if del.status != http.StatusOK || s.Sessions() != 0 {
				t.Errorf("DELETE: status %d with %d sessions left, want 200 and none", del.status, s.Sessions())
			}
			if after := c.call("tools/list", nil); after.status != http.StatusNotFound {
				t.Errorf("after DELETE: status %d, want 404", after.status)
			}

			var methods []string
			for _, r := range s.Requests() {
				methods = append(methods, r.HTTPMethod+" "+r.Method)
			}
			want := []string{"POST initialize", "POST notifications/initialized", "POST tools/list", "POST tools/call", "DELETE ", "POST tools/list"}
			if !reflect.DeepEqual(methods, want) {
				t.Errorf("recorded %q, want %q", methods, want)
			}
			for _, r := range s.Requests()[1:4] {
				if r.SessionID != c.session || r.ProtocolVersion != "2025-06-18" {
					t.Errorf("%s %s recorded session %q version %q, want %q and 2025-06-18", r.HTTPMethod, r.Method, r.SessionID, r.ProtocolVersion, c.session)
				}
			}
			if got := s.Calls("tools/call")[0]; got.Status != http.StatusOK || string(got.ID) != "3" {
				t.Errorf("tools/call recorded status %d id %s, want 200 and 3", got.Status, got.ID)
			}
		})
	}
}

func TestLegacyVersionNegotiation(t *testing.T) {
	_, c := start(t, mcptest.Config{})
	a := c.call("initialize", map[string]any{"protocolVersion": "2024-01-01", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}})
	if got := a.result()["protocolVersion"]; got != mcptest.LatestLegacyVersion {
		t.Errorf("protocolVersion = %v for an unknown offer, want the latest, %s", got, mcptest.LatestLegacyVersion)
	}
}

func TestLegacyRejects(t *testing.T) {
	_, c := start(t, mcptest.Config{Tools: []mcptest.Tool{weather()}})
	tests := []struct {
		name     string
		prepare  func()
		send     func() answer
		status   int
		code     int
		contains string
	}{
		{"no session", func() { c.session = "" }, func() answer { return c.call("tools/list", nil) }, 400, -32000, "Server not initialized"},
		{"discover on a legacy server", func() { c.session = "" }, func() answer { return c.call("server/discover", nil) }, 400, -32000, "Server not initialized"},
		{"unknown session", func() { c.session = "forgotten" }, func() answer { return c.call("tools/list", nil) }, 404, -32001, "Session not found"},
		{"unsupported version header", func() { c.handshake(); c.version = "1999-01-01" }, func() answer { return c.call("tools/list", nil) }, 400, -32000, "Unsupported protocol version"},
		{"missing required argument", func() { c.handshake() }, func() answer {
			return c.call("tools/call", map[string]any{"name": "get-weather", "arguments": map[string]any{}})
		}, 200, -32602, `requires argument "location"`},
		{"unknown method", func() { c.handshake() }, func() answer { return c.call("resources/list", nil) }, 200, -32601, "Method not found"},
		{"accept without SSE", func() { c.handshake() }, func() answer {
			return c.do(http.MethodPost, []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`), http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}, "Mcp-Session-Id": {c.session}})
		}, 406, -32000, "Not Acceptable"},
		{"not JSON", func() { c.handshake() }, func() answer {
			return c.do(http.MethodPost, []byte(`{"jsonrpc":`), http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}})
		}, 400, -32700, "Parse error"},
		{"GET", func() {}, func() answer { return c.do(http.MethodGet, nil, http.Header{"Accept": {"text/event-stream"}}) }, 405, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.prepare()
			a := tt.send()
			code, msg := a.rpcError()
			if a.status != tt.status || code != tt.code || !contains(msg, tt.contains) {
				t.Errorf("got status %d, error %d %q; want %d, %d containing %q (body %s)", a.status, code, msg, tt.status, tt.code, tt.contains, a.body)
			}
		})
	}
}

func contains(s, sub string) bool { return sub == "" || (len(s) >= len(sub) && indexOf(s, sub) >= 0) }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestPaging(t *testing.T) {
	var tools []mcptest.Tool
	for i := range 5 {
		tools = append(tools, mcptest.Tool{Name: fmt.Sprintf("tool-%d", i)})
	}
	for _, modern := range []bool{false, true} {
		t.Run(fmt.Sprintf("modern=%v", modern), func(t *testing.T) {
			era := mcptest.Legacy
			if modern {
				era = mcptest.Stateless
			}
			_, c := start(t, mcptest.Config{Era: era, Tools: tools, PageSize: 2})
			c.modern = modern
			if !modern {
				c.handshake()
			}
			var names []string
			var pages int
			cursor := ""
			for {
				var params map[string]any
				if cursor != "" {
					params = map[string]any{"cursor": cursor}
				}
				a := c.call("tools/list", params)
				pages++
				for _, tool := range a.result()["tools"].([]any) {
					names = append(names, tool.(map[string]any)["name"].(string))
				}
				next, _ := a.result()["nextCursor"].(string)
				if next == "" || pages > 5 {
					break
				}
				cursor = next
			}
			if want := []string{"tool-0", "tool-1", "tool-2", "tool-3", "tool-4"}; pages != 3 || !reflect.DeepEqual(names, want) {
				t.Errorf("%d pages listing %v, want 3 listing %v", pages, names, want)
			}
			bad := c.call("tools/list", map[string]any{"cursor": "nonsense"})
			if code, _ := bad.rpcError(); code != -32602 {
				t.Errorf("a bad cursor: error %d, want -32602 (%s)", code, bad.body)
			}
		})
	}
}

func TestStateless(t *testing.T) {
	s, c := start(t, mcptest.Config{Era: mcptest.Stateless, Encoding: mcptest.SSE, Tools: []mcptest.Tool{weather()}})
	c.modern = true

	d := c.call("server/discover", nil)
	r := d.result()
	if d.status != http.StatusOK || !reflect.DeepEqual(r["supportedVersions"], []any{mcptest.ModernVersion}) || r["resultType"] != "complete" {
		t.Fatalf("server/discover: %d %s", d.status, d.body)
	}
	if name := r["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"].(map[string]any)["name"]; name != "mcptest" {
		t.Errorf("serverInfo in _meta = %v", name)
	}
	if d.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a stateless server minted a session: %q", d.header.Get("Mcp-Session-Id"))
	}
	list := c.call("tools/list", nil)
	if list.result()["resultType"] != "complete" || len(list.result()["tools"].([]any)) != 1 {
		t.Errorf("tools/list: %s", list.body)
	}
	call := c.call("tools/call", map[string]any{"name": "get-weather", "arguments": map[string]any{"location": "Oslo"}})
	if call.result()["resultType"] != "complete" || call.result()["structuredContent"] == nil {
		t.Errorf("tools/call: %s", call.body)
	}
	if s.Sessions() != 0 {
		t.Errorf("%d sessions on a stateless server", s.Sessions())
	}

	post := func(body string, h map[string]string) answer {
		hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
		for k, v := range h {
			hdr.Set(k, v)
		}
		return c.do(http.MethodPost, []byte(body), hdr)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	tests := []struct {
		name   string
		body   string
		header map[string]string
		status int
		code   int
	}{
		{"no Mcp-Method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28"}, 400, -32020},
		{"Mcp-Method differs", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}, 400, -32020},
		{"Mcp-Name differs", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-weather",` + meta + `}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "other"}, 400, -32020},
		{"Mcp-Name base64", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-weather","arguments":{"location":"x"},` + meta + `}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "=?base64?Z2V0LXdlYXRoZXI=?="}, 200, 0},
		{"no version header", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`,
			map[string]string{"Mcp-Method": "tools/list"}, 400, -32020},
		{"header and body differ", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}, 400, -32020},
		{"unsupported version", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2030-01-01"}}}`,
			map[string]string{"MCP-Protocol-Version": "2030-01-01", "Mcp-Method": "tools/list"}, 400, -32022},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"prompts/list","params":{` + meta + `}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "prompts/list"}, 404, -32601},
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
			nil, 400, -32022},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := post(tt.body, tt.header)
			if code, _ := a.rpcError(); a.status != tt.status || code != tt.code {
				t.Errorf("status %d error %d, want %d and %d: %s", a.status, code, tt.status, tt.code, a.body)
			}
		})
	}
	if a := c.do(http.MethodDelete, nil, http.Header{"Mcp-Session-Id": {"x"}}); a.status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d, want 405", a.status)
	}
}

func TestDualEra(t *testing.T) {
	_, c := start(t, mcptest.Config{Era: mcptest.DualEra, Tools: []mcptest.Tool{weather()}})
	c.handshake()
	if c.session == "" {
		t.Fatal("initialize on a dual-era server set no session")
	}
	if a := c.call("tools/list", nil); len(a.result()["tools"].([]any)) != 1 || a.result()["resultType"] != nil {
		t.Errorf("legacy tools/list: %s", a.body)
	}
	m := &raw{t: t, url: c.url, hc: c.hc, modern: true}
	if a := m.call("tools/list", nil); a.result()["resultType"] != "complete" {
		t.Errorf("modern tools/list: %s", a.body)
	}
}

func TestRecordsAuthorization(t *testing.T) {
	s, c := start(t, mcptest.Config{})
	c.do(http.MethodPost, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`),
		http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Authorization": {"Bearer s3cret"}})
	got := s.Requests()
	if len(got) != 1 || got[0].Authorization != "Bearer s3cret" || got[0].Method != "initialize" || string(got[0].Body) == "" {
		t.Errorf("recorded %+v", got)
	}
}

func TestUnknownToolStyles(t *testing.T) {
	tests := []struct {
		style   mcptest.UnknownToolStyle
		status  int
		code    int
		isError bool
		text    string
	}{
		{mcptest.UnknownAsInvalidParams, 200, -32602, false, "Unknown tool: nope"},
		{mcptest.UnknownAsMethodNotFound, 200, -32601, false, "Unknown tool: nope"},
		{mcptest.UnknownAsResult, 200, 0, true, "MCP error -32602: Tool nope not found"},
		{mcptest.UnknownAsHTTP400, 400, -32602, false, `unknown tool "nope"`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.style), func(t *testing.T) {
			_, c := start(t, mcptest.Config{UnknownTool: tt.style, Tools: []mcptest.Tool{weather()}})
			c.handshake()
			a := c.call("tools/call", map[string]any{"name": "nope", "arguments": map[string]any{}})
			code, msg := a.rpcError()
			isError, _ := a.result()["isError"].(bool)
			if tt.isError {
				msg = a.result()["content"].([]any)[0].(map[string]any)["text"].(string)
			}
			if a.status != tt.status || code != tt.code || isError != tt.isError || msg != tt.text {
				t.Errorf("status %d error %d isError %v text %q; want %d %d %v %q", a.status, code, isError, msg, tt.status, tt.code, tt.isError, tt.text)
			}
		})
	}
}
