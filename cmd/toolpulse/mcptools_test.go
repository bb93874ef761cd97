package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolpulse/toolpulse/internal/mcptest"
)

// mcpToolsToken is the header value the tests send; no output may show it.
const mcpToolsToken = "Bearer mcp-tools-s3cret"

// runMCPTools runs `toolpulse mcp tools` in-process with no config.
func runMCPTools(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	none := func(string) (string, bool) { return "", false }
	code = run(context.Background(), append([]string{"mcp", "tools"}, args...), none, &out, &errOut)
	if strings.Contains(out.String()+errOut.String(), "s3cret") {
		t.Errorf("the header's value is in the output:\n%s%s", out.String(), errOut.String())
	}
	return code, out.String(), errOut.String()
}

// weatherTools is a server's worth of tools: a read-only one with an
// output schema, a destructive one, one without annotations, and one the
// go-sdk client drops (x-mcp-header on an object).
func weatherTools() []mcptest.Tool {
	return []mcptest.Tool{
		{
			Name:         "get-weather",
			Title:        "Weather",
			Description:  "Current weather for a location.",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"},"units":{"type":"string"}},"required":["location"]}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}`),
			Annotations:  &mcptest.Annotations{ReadOnlyHint: mcptest.Bool(true)},
		},
		{
			Name:        "delete-forecast",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"force":{"type":"boolean"}},"required":["id","force"]}`),
			Annotations: &mcptest.Annotations{DestructiveHint: mcptest.Bool(true)},
		},
		{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "header-clash", InputSchema: json.RawMessage(`{"type":"object","properties":{"where":{"type":"object","x-mcp-header":"Where"}}}`)},
	}
}

// TestMCPToolsTable: one row per tool with its hint, output schema and
// required arguments, from every page, in both eras; the header reaches
// the server; the SDK-dropped tool is listed and flagged.
func TestMCPToolsTable(t *testing.T) {
	eras := map[string]mcptest.Config{
		"legacy":    {Era: mcptest.Legacy, Encoding: mcptest.SSE},
		"stateless": {Era: mcptest.Stateless},
	}
	for name, cfg := range eras {
		t.Run(name, func(t *testing.T) {
			cfg.Name, cfg.PageSize, cfg.Tools = "weather-server", 3, weatherTools()
			s := mcptest.Start(t, cfg)
			code, out, errOut := runMCPTools(t, "--url", s.URL, "--header", "Authorization="+mcpToolsToken, "--header", "X-Scopes=read,write=all")
			if code != exitOK {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			t.Logf("\n%s", out)
			lines := strings.Split(out, "\n")
			want := [][]string{
				{"TOOL", "HINT", "OUTPUT", "SCHEMA", "REQUIRED", "TASKS"},
				{"get-weather", "read-only", "yes", "location", "-"},
				{"delete-forecast", "destructive", "no", "id,force", "-"},
				{"echo", "-", "no", "-", "-"},
				{"header-clash", "-", "no", "-", "-"},
			}
			for i, w := range want {
				if i >= len(lines) || strings.Join(strings.Fields(lines[i]), " ") != strings.Join(w, " ") {
					t.Errorf("line %d = %q, want the cells %q", i, lines[i], w)
				}
			}
			if !strings.Contains(out, "flagged: header-clash: the SDK drops it from its listing: property \"where\": x-mcp-header") {
				t.Errorf("no flag for header-clash:\n%s", out)
			}
			version := "2025-11-25"
			if name == "stateless" {
				version = mcptest.ModernVersion
			}
			if !strings.Contains(out, "\n\nserver weather-server 1.0.0, protocol "+version+": 4 tools\nflagged: header-clash") {
				t.Errorf("no server line naming weather-server 1.0.0, protocol %s and 4 tools after the table, before the flags:\n%s", version, out)
			}
			if n := len(s.Calls("tools/list")); n != 2 {
				t.Errorf("%d tools/list requests, want 2 pages", n)
			}
			for _, r := range s.Calls("tools/list") {
				if r.Authorization != mcpToolsToken || r.Header.Get("X-Scopes") != "read,write=all" {
					t.Errorf("tools/list sent Authorization %q, X-Scopes %q; want the --header values whole", r.Authorization, r.Header.Get("X-Scopes"))
				}
			}
			if n := len(s.Calls("tools/call")); n != 0 {
				t.Errorf("%d tools/call requests: listing must call nothing", n)
			}
		})
	}
}

// TestMCPToolsJSON: --format json is the raw definitions under MCP's
// names, null for what a definition lacks, and the server.
func TestMCPToolsJSON(t *testing.T) {
	s := mcptest.Start(t, mcptest.Config{Name: "weather-server", Tools: weatherTools()})
	code, out, errOut := runMCPTools(t, "--url", s.URL, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var doc struct {
		Server          map[string]string `json:"server"`
		ProtocolVersion string            `json:"protocol_version"`
		Truncated       *bool             `json:"truncated"`
		Tools           []map[string]json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if doc.Server["name"] != "weather-server" || doc.Server["version"] != "1.0.0" || doc.ProtocolVersion != "2025-11-25" || doc.Truncated == nil || *doc.Truncated {
		t.Errorf("server %v, protocol %q, truncated %v", doc.Server, doc.ProtocolVersion, doc.Truncated)
	}
	if len(doc.Tools) != 4 {
		t.Fatalf("%d tools, want 4:\n%s", len(doc.Tools), out)
	}
	fields := []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "execution", "invalid"}
	for _, tool := range doc.Tools {
		if len(tool) != len(fields) {
			t.Errorf("tool %s has fields %v, want exactly %v", tool["name"], keys(tool), fields)
		}
		for _, f := range fields {
			if _, ok := tool[f]; !ok {
				t.Errorf("tool %s lacks %q", tool["name"], f)
			}
		}
	}
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		_ = json.Compact(&b, raw)
		return b.String()
	}
	first := doc.Tools[0]
	checks := map[string]string{
		"name":         `"get-weather"`,
		"title":        `"Weather"`,
		"description":  `"Current weather for a location."`,
		"inputSchema":  `{"type":"object","properties":{"location":{"type":"string"},"units":{"type":"string"}},"required":["location"]}`,
		"outputSchema": `{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}`,
		"annotations":  `{"readOnlyHint":true}`,
		"invalid":      `null`,
	}
	for f, want := range checks {
		if got := compact(first[f]); got != want {
			t.Errorf("get-weather %s = %s, want %s", f, got, want)
		}
	}
	if got := compact(doc.Tools[2]["outputSchema"]); got != "null" {
		t.Errorf("echo outputSchema = %s, want null", got)
	}
	if got := compact(doc.Tools[3]["invalid"]); !strings.Contains(got, "x-mcp-header") {
		t.Errorf("header-clash invalid = %s, want the SDK's reason", got)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestMCPToolsFailures: each failure is one line on stderr, nothing on
// stdout, and the exit code of the README's table.
func TestMCPToolsFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>a web page</html>"))
	}))
	t.Cleanup(page.Close)
	// A redirect is not followed: the headers would go along.
	var redirected atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { redirected.Add(1) }))
	t.Cleanup(target.Close)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL+"/mcp", http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	failing := mcptest.Start(t, mcptest.Config{Tools: weatherTools(), Faults: []mcptest.Fault{mcptest.InternalError("tools/list")}})
	sse := mcptest.Start(t, mcptest.Config{Encoding: mcptest.SSE, Tools: weatherTools(), Faults: []mcptest.Fault{mcptest.SSEGarbage("tools/list")}})

	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"refused", []string{"--url", refused}, exitServiceUnavailable,
			"toolpulse: mcp tools: connection_refused: server/discover: dial tcp " + l.Addr().String() + ": connect: connection refused"},
		{"server error", []string{"--url", failing.URL}, exitServiceUnavailable,
			`toolpulse: mcp tools: tool_server_error: tools/list: JSON-RPC error -32603 "Internal error"`},
		{"a web page", []string{"--url", page.URL}, exitDataError,
			"toolpulse: mcp tools: mcp_protocol: server/discover: HTTP 200 with Content-Type \"text/html\", neither application/json nor text/event-stream"},
		{"a redirect", []string{"--url", redirect.URL + "/mcp"}, exitDataError, "toolpulse: mcp tools: unexpected_status: initialize: HTTP 307 Temporary Redirect"},
		{"garbage in the stream", []string{"--url", sse.URL}, exitDataError, "toolpulse: mcp tools: mcp_protocol: tools/list: an SSE event is not JSON-RPC"},
		{"not http", []string{"--url", "ftp://user:pw-s3cret@example.com/mcp"}, exitUsage,
			"toolpulse: --url ftp://user:xxxxx@example.com/mcp: want an http:// or https:// URL"},
		{"no host", []string{"--url", "http:///mcp"}, exitUsage, "toolpulse: --url http:///mcp: no host"},
		{"header without =", []string{"--url", failing.URL, "--header", "Authorization: " + mcpToolsToken}, exitUsage,
			"toolpulse: --header #1: want NAME=VALUE (the value is not shown)"},
		{"header with a bad name", []string{"--url", failing.URL, "--header", "Authorization: Bearer mcp-tools-s3cret=="}, exitUsage,
			"toolpulse: --header #1: the part before = is not a header name (the flag is not shown)"},
		{"no url", nil, exitUsage, "toolpulse: want --url URL, or a stdio server's command after --"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runMCPTools(t, append(c.args, "--header", "X-Api-Key=s3cret")...)
			if code != c.code {
				t.Errorf("exit %d, want %d (stderr %s)", code, c.code, errOut)
			}
			first, _, _ := strings.Cut(errOut, "\n")
			if !strings.HasPrefix(first, c.stderr) {
				t.Errorf("stderr %q, want it to start %q", errOut, c.stderr)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing: a failed listing is not an empty one", out)
			}
		})
	}
	if n := redirected.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
	if n := len(failing.Calls("tools/list")); n < 1 {
		t.Errorf("the failing server saw %d tools/list requests", n)
	}
}

// TestMCPToolsEverything lists the tools of a real server nobody here
// wrote, @modelcontextprotocol/server-everything from npm, inside a
// private network namespace: echo is read-only and requires message,
// get-structured-content declares an output schema, and the server names
// itself as it does in its handshake.
func TestMCPToolsEverything(t *testing.T) {
	ev := mcptest.FindEverything(t)
	mcptest.InPrivateNetwork(t, func(t *testing.T) {
		url := ev.Start(t)
		code, out, errOut := runMCPTools(t, "--url", url, "--header", "Authorization="+mcpToolsToken)
		if code != exitOK {
			t.Fatalf("exit %d, stderr %s", code, errOut)
		}
		t.Logf("server-everything %s:\n%s", ev.Version, out)
		rows := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				rows[f[0]] = strings.Join(f, " ")
			}
		}
		if r := rows["echo"]; r != "echo read-only no message forbidden" {
			t.Errorf("echo's row %q, want read-only, no output schema, message required, taskSupport forbidden", r)
		}
		if r := rows["get-structured-content"]; r != "get-structured-content read-only yes location forbidden" {
			t.Errorf("get-structured-content's row %q, want read-only, an output schema, location required, taskSupport forbidden", r)
		}
		if !strings.Contains(out, "\nserver mcp-servers/everything ") || !strings.Contains(out, ", protocol 2025-11-25: ") {
			t.Errorf("no server line for mcp-servers/everything on 2025-11-25:\n%s", out)
		}
		code, out, errOut = runMCPTools(t, "--url", url, "--format", "json")
		if code != exitOK {
			t.Fatalf("--format json: exit %d, stderr %s", code, errOut)
		}
		var doc struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Tools) < 5 {
			t.Fatalf("--format json: %v, %d tools:\n%s", err, len(doc.Tools), out)
		}
	})
}

// TestMCPToolsTaskSupport: a tool a TypeScript SDK server lists with
// execution.taskSupport: required shows it in the TASKS column and is
// flagged with what a probe of it does; the JSON keeps execution.
func TestMCPToolsTaskSupport(t *testing.T) {
	url := mcptest.StartTSServer(t)
	code, out, errOut := runMCPTools(t, "--url", url)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	t.Logf("\n%s", out)
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 5 {
			rows[f[0]] = f[4]
		}
	}
	if rows["task-only"] != "required" || rows["echo"] != "forbidden" {
		t.Errorf("TASKS of task-only %q and echo %q, want required and forbidden", rows["task-only"], rows["echo"])
	}
	if !strings.Contains(out, "flagged: task-only: execution.taskSupport is required: the tool runs only as a task, and a probe of it ends as needs_input") {
		t.Errorf("task-only is not flagged:\n%s", out)
	}
	code, out, errOut = runMCPTools(t, "--url", url, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var doc struct {
		Tools []struct {
			Name      string          `json:"name"`
			Execution json.RawMessage `json:"execution"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, tool := range doc.Tools {
		if tool.Name == "task-only" && !strings.Contains(strings.Join(strings.Fields(string(tool.Execution)), ""), `"taskSupport":"required"`) {
			t.Errorf("task-only's execution %s", tool.Execution)
		}
	}
}
