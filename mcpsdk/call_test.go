package mcpsdk_test

import (
	"context"
	"encoding/json"
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

// secretToken goes in every Call's headers; no message may show it.
const secretToken = "Bearer s3cret-t0ken"

// era is one way a server speaks the transport.
type era struct {
	name string
	cfg  mcptest.Config
}

var (
	legacyJSON = era{"legacy json", mcptest.Config{Era: mcptest.Legacy}}
	legacySSE  = era{"legacy sse", mcptest.Config{Era: mcptest.Legacy, Encoding: mcptest.SSE}}
	stateless  = era{"stateless", mcptest.Config{Era: mcptest.Stateless}}
	dualEra    = era{"dual era", mcptest.Config{Era: mcptest.DualEra}}
	allEras    = []era{legacyJSON, legacySSE, stateless}
	legacyEras = []era{legacyJSON, legacySSE}
)

// plain is a tool without an outputSchema that answers text.
func plain(name, text string) mcptest.Tool {
	return mcptest.Tool{
		Name:        name,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`),
		Handler: func(context.Context, json.RawMessage) mcptest.Result {
			return mcptest.TextResult(text)
		},
	}
}

var oslo = map[string]any{"location": "Oslo"}

// callCase is one Call and what it must end with.
type callCase struct {
	name    string
	tools   []mcptest.Tool // weather() when nil
	faults  []mcptest.Fault
	page    int
	tool    string         // get-weather when ""
	args    map[string]any // oslo when nil
	timeout time.Duration  // 5s when 0
	limit   int64          // 1 MiB when 0
	allow   bool           // AllowDestructive
	auth    string         // the Authorization header; secretToken when ""
	code    results.Code   // "" for a usable answer
	message string         // a fragment of the message
	check   func(t *testing.T, s *mcptest.Server, a *mcpsdk.Answer)
}

// run drives c against a fresh server of era e.
func (c callCase) run(t *testing.T, e era) {
	t.Helper()
	t.Cleanup(testkit.NoLeaks(t))
	cfg := e.cfg
	cfg.Tools = c.tools
	if cfg.Tools == nil {
		cfg.Tools = []mcptest.Tool{weather()}
	}
	cfg.Faults, cfg.PageSize = c.faults, c.page
	s := mcptest.Start(t, cfg)
	a := call(t, s.URL, c)
	t.Logf("%s", describe(a))
	checkAnswer(t, a, c.code, c.message)
	if c.check != nil {
		c.check(t, s, a)
	}
}

// call makes one Call for c against url, on a transport of the test's
// own that is closed before the leak check.
func call(t *testing.T, url string, c callCase) *mcpsdk.Answer {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	timeout := c.timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	req := mcpsdk.Request{
		URL:              url,
		Header:           http.Header{"Authorization": {secretToken}},
		Tool:             c.tool,
		Arguments:        c.args,
		AllowDestructive: c.allow,
		MaxBodyBytes:     c.limit,
		HTTPClient:       &http.Client{Transport: tr},
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	if req.Tool == "" {
		req.Tool = "get-weather"
	}
	if req.Arguments == nil {
		req.Arguments = oslo
	}
	if req.MaxBodyBytes == 0 {
		req.MaxBodyBytes = 1 << 20
	}
	start := time.Now()
	a, err := mcpsdk.Call(ctx, req)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if took := time.Since(start); took > timeout+time.Second {
		t.Errorf("Call took %s, past its %s deadline", took, timeout)
	}
	return a
}

// checkAnswer holds a to the code and message fragment it must have, and
// to what every answer must be.
func checkAnswer(t *testing.T, a *mcpsdk.Answer, code results.Code, fragment string) {
	t.Helper()
	if a == nil {
		t.Fatal("nil Answer")
	}
	var got results.Code
	msg := ""
	if a.Err != nil {
		got, msg = a.Err.Code, a.Err.Message
	}
	if got != code {
		t.Fatalf("code %q (%s), want %q", got, msg, code)
	}
	if !strings.Contains(msg, fragment) {
		t.Errorf("message %q, want it to contain %q", msg, fragment)
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, "s3cret") || strings.Contains(msg, "hunter2") {
		t.Errorf("message %q is more than one line or shows a secret", msg)
	}
	if a.Err == nil {
		// Never an empty success: a usable answer has its result, the
		// tool's definition and the tools/call exchange.
		if len(a.Result) == 0 || len(a.Response) == 0 || len(a.Tool) == 0 || a.Status != http.StatusOK {
			t.Errorf("a usable answer without result %s, response %s, tool %s or status %d", a.Result, a.Response, a.Tool, a.Status)
		}
	}
	if len(a.Exchanges) == 0 && code != results.CodeDestructiveTool {
		t.Error("no exchanges recorded")
	}
	blamed := 0
	for _, x := range a.Exchanges {
		if x.Method == "" || x.StartedAt.IsZero() || x.Duration < 0 {
			t.Errorf("exchange %+v lacks its method, start or duration", x)
		}
		if x.Code == results.CodeSessionLost && a.Reinitialized && x.Session == 1 && strings.HasSuffix(x.Message, "; the call went on in a new session") {
			continue // the trace of the session the server forgot
		}
		if x.Code != "" {
			blamed++
			if x.Code != got || x.Message != msg {
				t.Errorf("exchange %s carries %s %q, the answer %s %q", x.Method, x.Code, x.Message, got, msg)
			}
		}
	}
	if blamed > 1 {
		t.Errorf("%d exchanges carry the answer's code, want at most 1", blamed)
	}
}

func describe(a *mcpsdk.Answer) string {
	var b strings.Builder
	if a.Err != nil {
		fmt.Fprintf(&b, "%s: %s;", a.Err.Code, a.Err.Message)
	} else {
		fmt.Fprintf(&b, "pass: response %s;", a.Response)
	}
	for _, x := range a.Exchanges {
		fmt.Fprintf(&b, " [%d] %s %d %dB %s", x.Session, x.Method, x.Status, x.ResponseBytes, x.Duration.Round(time.Millisecond))
	}
	return b.String()
}

// forEra runs the cases in each era.
func forEra(t *testing.T, eras []era, cases []callCase) {
	for _, c := range cases {
		for _, e := range eras {
			t.Run(c.name+"/"+e.name, func(t *testing.T) { c.run(t, e) })
		}
	}
}

// TestCallFaults drives Call against every fault of internal/mcptest in
// each era it applies to, and holds each to its exact code.
func TestCallFaults(t *testing.T) {
	t.Run("every era", func(t *testing.T) {
		forEra(t, allEras, []callCase{
			{name: "wrong id on tools/call", faults: []mcptest.Fault{mcptest.WrongID("tools/call")},
				code: results.CodeMCPProtocol, message: `tools/call "get-weather": the response has id`},
			{name: "wrong id on tools/list", faults: []mcptest.Fault{mcptest.WrongID("tools/list")},
				code: results.CodeMCPProtocol, message: "tools/list: the response has id"},
			{name: "SSE that never ends", faults: []mcptest.Fault{mcptest.SSENeverEnds("tools/call")}, timeout: 500 * time.Millisecond,
				code: results.CodeTimeout, message: `tools/call "get-weather": timed out reading the response`},
			{name: "SSE garbage", faults: []mcptest.Fault{mcptest.SSEGarbage("tools/call")},
				code: results.CodeMCPProtocol, message: `tools/call "get-weather": an SSE event is not JSON-RPC`},
			{name: "SSE cut", faults: []mcptest.Fault{mcptest.SSECut("tools/call")},
				code: results.CodeConnectionReset, message: `tools/call "get-weather": the SSE stream ended before the response`},
			{name: "406", faults: []mcptest.Fault{mcptest.NotAcceptable("tools/call")},
				code: results.CodeMCPProtocol, message: `tools/call "get-weather": HTTP 406 Not Acceptable: the server refuses the transport's content types`},
			{name: "400 without JSON-RPC", faults: []mcptest.Fault{mcptest.PlainBadRequest("tools/call")},
				code: results.CodeMCPProtocol, message: `tools/call "get-weather": HTTP 400 Bad Request with Content-Type "text/plain; charset=utf-8", not a JSON-RPC error`},
			{name: "400 without JSON-RPC on tools/list", faults: []mcptest.Fault{mcptest.PlainBadRequest("tools/list")},
				code: results.CodeMCPProtocol, message: "tools/list: HTTP 400 Bad Request"},
			{name: "unknown tool as -32602", faults: []mcptest.Fault{mcptest.UnknownTool(mcptest.UnknownAsInvalidParams)},
				code: results.CodeToolMissing, message: `tools/call "get-weather": JSON-RPC error -32602 "Unknown tool: get-weather": the server says the tool does not exist`},
			{name: "unknown tool as -32601", faults: []mcptest.Fault{mcptest.UnknownTool(mcptest.UnknownAsMethodNotFound)},
				code: results.CodeToolMissing, message: "JSON-RPC error -32601"},
			{name: "unknown tool as an isError result", faults: []mcptest.Fault{mcptest.UnknownTool(mcptest.UnknownAsResult)},
				code: results.CodeToolMissing, message: `the result says the tool does not exist: "MCP error -32602: Tool get-weather not found"`},
			{name: "unknown tool as HTTP 400", faults: []mcptest.Fault{mcptest.UnknownTool(mcptest.UnknownAsHTTP400)},
				code: results.CodeToolMissing, message: `HTTP 400 Bad Request with JSON-RPC error -32602`},
			{name: "tool not listed", tool: "get-forecast",
				code: results.CodeToolMissing, message: `tools/list: no tool "get-forecast" among the 1 tool the server lists`},
			{name: "invalid input as -32602", faults: []mcptest.Fault{mcptest.InvalidInput()},
				code: results.CodeToolInput, message: `JSON-RPC error -32602 "Invalid params: invalid arguments for tool get-weather`},
			{name: "missing required argument", args: map[string]any{"city": "Oslo"},
				code: results.CodeToolInput, message: `requires argument \"location\"`},
			{name: "invalid input as an isError result", faults: []mcptest.Fault{mcptest.InvalidInputResult()},
				code: results.CodeToolInput, message: `the result rejects the arguments: "MCP error -32602: Input validation error`},
			{name: "isError", faults: []mcptest.Fault{mcptest.ToolError("upstream weather service down")},
				code: results.CodeToolError, message: `tools/call "get-weather": the result has isError: true: "upstream weather service down"`,
				check: func(t *testing.T, _ *mcptest.Server, a *mcpsdk.Answer) {
					if !a.IsError || a.Result == nil || string(a.Response) != `"upstream weather service down"` {
						t.Errorf("isError %v result %s response %s: the caller needs them to judge is_error", a.IsError, a.Result, a.Response)
					}
				}},
			{name: "structuredContent breaks outputSchema", faults: []mcptest.Fault{mcptest.StructuredMismatch()},
				code: results.CodeOutputSchema, message: `tools/call "get-weather": structuredContent does not match the outputSchema`},
			{name: "structuredContent missing", faults: []mcptest.Fault{mcptest.StructuredMissing()},
				code: results.CodeOutputSchema, message: "declares an outputSchema and the result has no structuredContent"},
			{name: "huge", faults: []mcptest.Fault{mcptest.Huge(4 << 20)}, limit: 256 << 10,
				code: results.CodeResponseTooLarge, message: `tools/call "get-weather": the answer exceeds max_body_bytes (262144)`},
			{name: "slow drip", faults: []mcptest.Fault{mcptest.Drip("tools/call", 20*time.Millisecond)}, timeout: 700 * time.Millisecond,
				code: results.CodeTimeout, message: `tools/call "get-weather": timed out reading the response`},
			{name: "sampling", faults: []mcptest.Fault{mcptest.AskSampling()},
				code: results.CodeNeedsInput, message: "sampling/createMessage"},
			{name: "elicitation", faults: []mcptest.Fault{mcptest.AskElicitation()},
				code: results.CodeNeedsInput, message: "elicitation/create"},
			{name: "internal error", faults: []mcptest.Fault{mcptest.InternalError("tools/call")},
				code: results.CodeToolServerError, message: `tools/call "get-weather": JSON-RPC error -32603 "Internal error"`},
			{name: "internal error on tools/list", faults: []mcptest.Fault{mcptest.InternalError("tools/list")},
				code: results.CodeToolServerError, message: "tools/list: JSON-RPC error -32603"},
			{name: "server error", faults: []mcptest.Fault{mcptest.ServerError("tools/call", -32001)},
				code: results.CodeToolServerError, message: "JSON-RPC error -32001"},
			{name: "no common version", faults: []mcptest.Fault{mcptest.NoCommonVersion()},
				code: results.CodeMCPProtocol, message: "no protocol version in common"},
			{name: "destructive", tools: []mcptest.Tool{destructive()},
				code: results.CodeDestructiveTool, message: `tools/call "get-weather" not made: tools/list annotates the tool destructiveHint: true`,
				check: func(t *testing.T, s *mcptest.Server, a *mcpsdk.Answer) {
					if n := len(s.Calls("tools/call")); n != 0 {
						t.Errorf("%d tools/call requests reached the server", n)
					}
					if len(a.Tool) == 0 || a.Result != nil {
						t.Errorf("tool %s result %s: want the definition and no result", a.Tool, a.Result)
					}
				}},
		})
	})

	t.Run("legacy eras", func(t *testing.T) {
		forEra(t, legacyEras, []callCase{
			{name: "wrong id on initialize", faults: []mcptest.Fault{mcptest.WrongID("initialize")},
				code: results.CodeMCPProtocol, message: "initialize: the response has id"},
			{name: "406 on initialize", faults: []mcptest.Fault{mcptest.NotAcceptable("initialize")},
				code: results.CodeMCPProtocol, message: "initialize: HTTP 406 Not Acceptable"},
			{name: "session forgotten at tools/call, 404", faults: []mcptest.Fault{mcptest.ForgetSession("tools/call", http.StatusNotFound)},
				code: results.CodeSessionLost, message: `tools/call "get-weather": the server forgot the session (HTTP 404 Not Found); again after one re-initialization`,
				check: sessions(2)},
			{name: "session forgotten at tools/call, 400", faults: []mcptest.Fault{mcptest.ForgetSession("tools/call", http.StatusBadRequest)},
				code: results.CodeSessionLost, message: `tools/call "get-weather": the server forgot the session (HTTP 400 Bad Request); again after one re-initialization`,
				check: sessions(2)},
			{name: "session forgotten at tools/list, 404", faults: []mcptest.Fault{mcptest.ForgetSession("tools/list", http.StatusNotFound)},
				code: results.CodeSessionLost, message: "tools/list: the server forgot the session", check: sessions(2)},
			{name: "session forgotten once at tools/call, 404", faults: []mcptest.Fault{mcptest.ForgetSession("tools/call", http.StatusNotFound).Once()},
				check: reinitialized},
			{name: "session forgotten once at tools/call, 400", faults: []mcptest.Fault{mcptest.ForgetSession("tools/call", http.StatusBadRequest).Once()},
				check: reinitialized},
			{name: "session forgotten once at tools/list, 400", faults: []mcptest.Fault{mcptest.ForgetSession("tools/list", http.StatusBadRequest).Once()},
				check: reinitialized},
		})
	})

	t.Run("stateless", func(t *testing.T) {
		forEra(t, []era{stateless}, []callCase{
			{name: "wrong id on server/discover", faults: []mcptest.Fault{mcptest.WrongID("server/discover")},
				code: results.CodeMCPProtocol, message: "server/discover: the response has id"},
			{name: "sampling asked as input_required", faults: []mcptest.Fault{mcptest.AskSampling()},
				code: results.CodeNeedsInput, message: `tools/call "get-weather": the server answered input_required, asking for sampling/createMessage`},
			{name: "406 on server/discover", faults: []mcptest.Fault{mcptest.NotAcceptable("server/discover")},
				code: results.CodeMCPProtocol, message: "initialize: HTTP 400 Bad Request with JSON-RPC error -32022"},
		})
	})
}

// sessions checks that the call opened n sessions and numbered them.
func sessions(n int) func(t *testing.T, s *mcptest.Server, a *mcpsdk.Answer) {
	return func(t *testing.T, s *mcptest.Server, a *mcpsdk.Answer) {
		t.Helper()
		if got := len(s.Calls("initialize")); got != n {
			t.Errorf("%d initialize requests, want %d", got, n)
		}
		if last := a.Exchanges[len(a.Exchanges)-1]; last.Session != n {
			t.Errorf("the last exchange is of session %d, want %d", last.Session, n)
		}
	}
}

func reinitialized(t *testing.T, s *mcptest.Server, a *mcpsdk.Answer) {
	t.Helper()
	sessions(2)(t, s, a)
	if !a.Reinitialized {
		t.Error("Reinitialized is false after a second session")
	}
}

func destructive() mcptest.Tool {
	tool := weather()
	tool.Annotations = &mcptest.Annotations{DestructiveHint: mcptest.Bool(true)}
	return tool
}

// TestCallPasses: usable answers in every era, and what the rules see.
func TestCallPasses(t *testing.T) {
	structured := func(t *testing.T, s *mcptest.Server, a *mcpsdk.Answer) {
		t.Helper()
		if string(a.Response) != `{"temperature":21.5}` {
			t.Errorf("response %s, want the structuredContent", a.Response)
		}
		var tool map[string]any
		if err := json.Unmarshal(a.Tool, &tool); err != nil || tool["name"] != "get-weather" || tool["outputSchema"] == nil || tool["description"] != "Current weather for a location" {
			t.Errorf("tool %s", a.Tool)
		}
		var result map[string]any
		if err := json.Unmarshal(a.Result, &result); err != nil || result["content"] == nil || result["structuredContent"] == nil {
			t.Errorf("result %s", a.Result)
		}
		if a.Headers["content-type"] == "" {
			t.Errorf("headers %v: want the tools/call exchange's, lower-cased", a.Headers)
		}
		for _, r := range s.Requests() {
			if r.Authorization != secretToken {
				t.Errorf("%s %s went without the configured Authorization header", r.HTTPMethod, r.Method)
			}
		}
	}
	response := func(want string) func(t *testing.T, _ *mcptest.Server, a *mcpsdk.Answer) {
		return func(t *testing.T, _ *mcptest.Server, a *mcpsdk.Answer) {
			t.Helper()
			if string(a.Response) != want {
				t.Errorf("response %s, want %s", a.Response, want)
			}
		}
	}
	many := []mcptest.Tool{plain("first", "1"), plain("second", "2"), weather(), plain("fourth", "4")}
	forEra(t, []era{legacyJSON, legacySSE, stateless, dualEra}, []callCase{
		{name: "outputSchema valid", check: structured},
		{name: "paging over 3 pages", tools: many, page: 1, check: func(t *testing.T, s *mcptest.Server, a *mcpsdk.Answer) {
			structured(t, s, a)
			if n := len(s.Calls("tools/list")); n != 3 {
				t.Errorf("%d tools/list requests, want 3: the tool is on the third page", n)
			}
		}},
		{name: "text holding JSON", tools: []mcptest.Tool{plain("get-weather", ` {"temperature": 3} `)}, check: response(`{"temperature": 3}`)},
		{name: "plain text", tools: []mcptest.Tool{plain("get-weather", "sunny, 21°C")}, check: response(`"sunny, 21°C"`)},
		{name: "destructive allowed", tools: []mcptest.Tool{destructive()}, allow: true, check: structured},
		{name: "drip within the deadline", faults: []mcptest.Fault{mcptest.Drip("tools/list", time.Millisecond)}, check: structured},
	})
}

// TestCallTransport: the transport codes of SPEC §1 at the first step.
func TestCallTransport(t *testing.T) {
	refused := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://user:hunter2@" + addr + "/mcp"
	}
	status := func(t *testing.T, code int, header ...string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for i := 0; i+1 < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			w.WriteHeader(code)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/mcp"
	}
	tests := []struct {
		name    string
		url     func(t *testing.T) string
		code    results.Code
		message string
		check   func(t *testing.T, a *mcpsdk.Answer)
	}{
		{"connection refused", refused, results.CodeConnectionRefused, "server/discover: dial tcp", nil},
		{"503 with Retry-After", func(t *testing.T) string { return status(t, 503, "Retry-After", "7") }, results.CodeServerError, "server/discover: HTTP 503 Service Unavailable",
			func(t *testing.T, a *mcpsdk.Answer) {
				if !a.RetryAfterSet || a.RetryAfter != 7*time.Second {
					t.Errorf("RetryAfter %s set %v, want 7s", a.RetryAfter, a.RetryAfterSet)
				}
			}},
		{"429", func(t *testing.T) string { return status(t, 429) }, results.CodeRateLimited, "server/discover: HTTP 429 Too Many Requests", nil},
		{"408", func(t *testing.T) string { return status(t, 408) }, results.CodeTimeout, "HTTP 408", nil},
		{"401", func(t *testing.T) string { return status(t, 401) }, results.CodeUnexpectedStatus, "initialize: HTTP 401 Unauthorized", nil},
		{"200 text/html", func(t *testing.T) string { return status(t, 200, "Content-Type", "text/html") }, results.CodeMCPProtocol,
			`server/discover: HTTP 200 with Content-Type "text/html", neither application/json nor text/event-stream`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(testkit.NoLeaks(t))
			a := call(t, tt.url(t), callCase{})
			t.Logf("%s", describe(a))
			checkAnswer(t, a, tt.code, tt.message)
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}
