package mcpsdk_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// TestEverythingServer meets a real MCP server nobody here wrote,
// @modelcontextprotocol/server-everything from npm, with the SDK's client,
// inside a private network namespace (it listens on every interface).
// What 2026.8.31 (on @modelcontextprotocol/sdk 1.32.2) was seen to do, and
// what this test holds it to:
//   - it is legacy era only: server/discover, sent without a session, gets
//     400 and {"code":-32000,"message":"Bad Request: Server not
//     initialized"}, so the SDK falls back to initialize and negotiates
//     2025-11-25;
//   - initialize mints an Mcp-Session-Id, and every answer to a request is
//     text/event-stream, opened by a priming event (an id, empty data)
//     before the response event;
//   - a session it does not know gets 400 and -32000 "Bad Request: No
//     valid session ID provided" with no id, not the 404 the spec asks for
//     (so a client following the spec does not re-initialize);
//   - an unknown tool is a successful answer carrying isError: true and
//     "MCP error -32602: Tool nope not found"; bad arguments to echo are
//     the same, "MCP error -32602: Input validation error: …";
//   - echo {"message": "hi"} answers the text "Echo: hi".
//
// Call meets it too: echo passes, a tool it does not list is tool_missing,
// and arguments it rejects are tool_input.
func TestEverythingServer(t *testing.T) {
	ev := mcptest.FindEverything(t)
	mcptest.InPrivateNetwork(t, func(t *testing.T) {
		t.Cleanup(testkit.NoLeaks(t))
		url := ev.Start(t)
		t.Logf("%s %s at %s", "server-everything", ev.Version, url)

		cs := connect(t, url)
		init := cs.InitializeResult()
		if init.ProtocolVersion != "2025-11-25" || cs.ID() == "" {
			t.Errorf("negotiated %q with session %q; want the legacy 2025-11-25 with a session", init.ProtocolVersion, cs.ID())
		}
		if init.ServerInfo == nil || init.ServerInfo.Name != "mcp-servers/everything" {
			t.Errorf("serverInfo %+v", init.ServerInfo)
		}
		var names []string
		var echo *mcp.Tool
		for tool, err := range cs.Tools(t.Context(), nil) {
			if err != nil {
				t.Fatalf("listing tools: %v", err)
			}
			names = append(names, tool.Name)
			if tool.Name == "echo" {
				echo = tool
			}
		}
		t.Logf("%d tools: %s", len(names), strings.Join(names, ", "))
		if echo == nil {
			t.Fatalf("no echo tool among %v", names)
		}
		if echo.Annotations == nil || !echo.Annotations.ReadOnlyHint {
			t.Errorf("echo's annotations %+v, want readOnlyHint", echo.Annotations)
		}

		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
		if err != nil {
			t.Fatalf("calling echo: %v", err)
		}
		if text := firstText(res); res.IsError || text != "Echo: hi" {
			t.Errorf("echo answered isError %v %q, want \"Echo: hi\"", res.IsError, text)
		}
		unknown, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("calling an unknown tool: %v, want an isError result", err)
		}
		if text := firstText(unknown); !unknown.IsError || text != "MCP error -32602: Tool nope not found" {
			t.Errorf("an unknown tool answered isError %v %q", unknown.IsError, text)
		}
		bad, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": 5}})
		if err != nil {
			t.Fatalf("calling echo with a number: %v, want an isError result", err)
		}
		if text := firstText(bad); !bad.IsError || !strings.HasPrefix(text, "MCP error -32602: Input validation error") {
			t.Errorf("bad arguments answered isError %v %q", bad.IsError, text)
		}

		// Call, as a probe makes it: one fresh session per call.
		for _, c := range []struct {
			name    string
			tool    string
			args    map[string]any
			code    results.Code
			message string
			check   func(t *testing.T, a *mcpsdk.Answer)
		}{
			{"echo", "echo", map[string]any{"message": "hi"}, "", "", func(t *testing.T, a *mcpsdk.Answer) {
				if string(a.Response) != `"Echo: hi"` || a.ProtocolVersion != "2025-11-25" || len(a.Tool) == 0 {
					t.Errorf("response %s version %q tool %s", a.Response, a.ProtocolVersion, a.Tool)
				}
			}},
			{"unknown tool", "nope", map[string]any{}, results.CodeToolMissing, `tools/list: no tool "nope" among the`, nil},
			{"bad arguments", "echo", map[string]any{"message": 5}, results.CodeToolInput,
				`tools/call "echo": the result rejects the arguments: "MCP error -32602: Input validation error`, nil},
		} {
			t.Run("Call "+c.name, func(t *testing.T) {
				a := call(t, url, callCase{tool: c.tool, args: c.args})
				t.Logf("%s", describe(a))
				checkAnswer(t, a, c.code, c.message)
				if c.check != nil {
					c.check(t, a)
				}
			})
		}

		// The wire, by hand.
		hc := &http.Client{Transport: &http.Transport{}}
		t.Cleanup(hc.CloseIdleConnections)
		post := func(session, body string) (*http.Response, []byte) {
			t.Helper()
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
				req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp, b
		}
		resp, body := post("", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
		if code, msg := rpcError(body); resp.StatusCode != 400 || code != -32000 || msg != "Bad Request: Server not initialized" {
			t.Errorf("server/discover: %d %s", resp.StatusCode, body)
		}
		resp, body = post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Mcp-Session-Id") == "" || !bytes.HasPrefix(body, []byte("id: ")) {
			t.Errorf("initialize: %q session %q, body begins %q", resp.Header.Get("Content-Type"), resp.Header.Get("Mcp-Session-Id"), body[:min(len(body), 60)])
		}
		resp, body = post("not-a-session", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if code, msg := rpcError(body); resp.StatusCode != 400 || code != -32000 || msg != "Bad Request: No valid session ID provided" {
			t.Errorf("an unknown session: %d %s", resp.StatusCode, body)
		}
	})
}

func firstText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if t, ok := res.Content[0].(*mcp.TextContent); ok {
		return t.Text
	}
	return ""
}

func rpcError(body []byte) (int, string) {
	var m struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Error.Code, m.Error.Message
}
