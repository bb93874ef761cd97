package mcptest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/mcptest"
)

var weatherArgs = map[string]any{"name": "get-weather", "arguments": map[string]any{"location": "New York"}}

func callWeather(c *raw) answer { c.t.Helper(); return c.call("tools/call", copyMap(weatherArgs)) }

func copyMap(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// firstText returns the text of a result's first content item.
func firstText(a answer) string {
	content, _ := a.result()["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text
}

// TestFaultsOnTheWire drives each fault with plain requests and checks
// the bytes it puts on the wire.
func TestFaultsOnTheWire(t *testing.T) {
	tests := []struct {
		name     string
		cfg      mcptest.Config
		fault    mcptest.Fault
		noHandsh bool // the fault hits the handshake: send it by hand
		send     func(c *raw) answer
		check    func(t *testing.T, a answer)
	}{
		{
			name: "wrong id", fault: mcptest.WrongID("tools/list"),
			send: func(c *raw) answer { return c.call("tools/list", nil) },
			check: func(t *testing.T, a answer) {
				if id := a.messages[0]["id"]; id != float64(1002) {
					t.Errorf("id = %v, want the request's 2 plus 1000", id)
				}
				if a.result()["tools"] == nil {
					t.Errorf("the answer itself should be right: %s", a.body)
				}
			},
		},
		{
			name: "wrong id over SSE", cfg: mcptest.Config{Encoding: mcptest.SSE}, fault: mcptest.WrongID("tools/call"),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if id := a.messages[0]["id"]; id != float64(1002) {
					t.Errorf("id = %v, want 1002", id)
				}
			},
		},
		{
			name: "SSE garbage", fault: mcptest.SSEGarbage("tools/list"),
			send: func(c *raw) answer { return c.call("tools/list", nil) },
			check: func(t *testing.T, a answer) {
				if a.status != 200 || a.header.Get("Content-Type") != "text/event-stream" || len(a.body) == 0 {
					t.Fatalf("status %d, %q, %d bytes; want a 200 event stream with a body", a.status, a.header.Get("Content-Type"), len(a.body))
				}
				if len(sseData(a.body)) == 0 || len(a.messages) != 0 {
					t.Errorf("want events whose data is not JSON; got %d events, %d JSON messages: %q", len(sseData(a.body)), len(a.messages), a.body)
				}
			},
		},
		{
			name: "SSE cut after its priming event", fault: mcptest.SSECut("tools/call"),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if a.status != 200 || a.header.Get("Content-Type") != "text/event-stream" || string(a.body) != "id: mcptest-prime\ndata: \n\n" {
					t.Errorf("status %d %q body %q, want a 200 stream with one priming event and no response", a.status, a.header.Get("Content-Type"), a.body)
				}
			},
		},
		{
			name: "406", fault: mcptest.NotAcceptable("initialize"), noHandsh: true,
			send: func(c *raw) answer { return c.call("initialize", map[string]any{"protocolVersion": "2025-11-25"}) },
			check: func(t *testing.T, a answer) {
				if code, msg := a.rpcError(); a.status != 406 || code != -32000 || !strings.HasPrefix(msg, "Not Acceptable") {
					t.Errorf("status %d error %d %q, want 406 -32000 Not Acceptable… although Accept was right", a.status, code, msg)
				}
			},
		},
		{
			name: "400 without JSON-RPC", fault: mcptest.PlainBadRequest("tools/call"),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if a.status != 400 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") || len(a.messages) != 0 {
					t.Errorf("status %d %q body %q, want 400 text/plain that is not JSON", a.status, a.header.Get("Content-Type"), a.body)
				}
			},
		},
		{
			name: "listed tool called unknown, as a result", fault: mcptest.UnknownTool(mcptest.UnknownAsResult),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if a.result()["isError"] != true || firstText(a) != "MCP error -32602: Tool get-weather not found" {
					t.Errorf("got %s", a.body)
				}
			},
		},
		{
			name: "listed tool called unknown, HTTP 400", fault: mcptest.UnknownTool(mcptest.UnknownAsHTTP400),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if code, msg := a.rpcError(); a.status != 400 || code != -32602 || !strings.Contains(msg, "get-weather") {
					t.Errorf("status %d error %d %q", a.status, code, msg)
				}
			},
		},
		{
			name: "listed tool called unknown, -32601", fault: mcptest.UnknownTool(mcptest.UnknownAsMethodNotFound),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if code, msg := a.rpcError(); a.status != 200 || code != -32601 || msg != "Unknown tool: get-weather" {
					t.Errorf("status %d error %d %q", a.status, code, msg)
				}
			},
		},
		{
			name: "invalid input", fault: mcptest.InvalidInput(),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if code, msg := a.rpcError(); code != -32602 || !strings.Contains(msg, "get-weather") {
					t.Errorf("error %d %q, want -32602 naming the tool", code, msg)
				}
			},
		},
		{
			name: "invalid input as a result", fault: mcptest.InvalidInputResult(),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if a.result()["isError"] != true || !strings.Contains(firstText(a), "Input validation error") {
					t.Errorf("got %s", a.body)
				}
			},
		},
		{
			name: "isError", fault: mcptest.ToolError("upstream weather API returned 503"),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if a.result()["isError"] != true || firstText(a) != "upstream weather API returned 503" || a.result()["structuredContent"] != nil {
					t.Errorf("got %s", a.body)
				}
			},
		},
		{
			name: "structuredContent breaks outputSchema", fault: mcptest.StructuredMismatch(),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				sc, _ := a.result()["structuredContent"].(map[string]any)
				if _, ok := sc["temperature"].(float64); ok || sc["temperature"] == nil {
					t.Errorf("temperature = %#v, want present and not a number", sc["temperature"])
				}
				if _, ok := sc["unit"].(string); ok || sc["unit"] == nil {
					t.Errorf("unit = %#v, want present and not a string", sc["unit"])
				}
			},
		},
		{
			name: "structuredContent given", fault: mcptest.Fault{Kind: mcptest.KindStructuredMismatch, Method: "tools/call", Value: map[string]any{"temperature": "warm"}},
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if sc, _ := a.result()["structuredContent"].(map[string]any); len(sc) != 1 || sc["temperature"] != "warm" {
					t.Errorf("structuredContent = %v", sc)
				}
			},
		},
		{
			name: "structuredContent missing", fault: mcptest.StructuredMissing(),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if _, ok := a.result()["structuredContent"]; ok || firstText(a) == "" || a.result()["isError"] != nil {
					t.Errorf("got %s, want text content, no structuredContent, no isError", a.body)
				}
			},
		},
		{
			name: "huge", fault: mcptest.Huge(3 << 20),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if n := len(firstText(a)); n != 3<<20 {
					t.Errorf("text of %d bytes, want %d (body %d bytes)", n, 3<<20, len(a.body))
				}
			},
		},
		{
			name: "-32603", fault: mcptest.InternalError("tools/list"),
			send: func(c *raw) answer { return c.call("tools/list", nil) },
			check: func(t *testing.T, a answer) {
				if code, _ := a.rpcError(); a.status != 200 || code != -32603 {
					t.Errorf("status %d error %d, want 200 -32603", a.status, code)
				}
			},
		},
		{
			name: "-32001", fault: mcptest.ServerError("tools/call", -32001),
			send: callWeather,
			check: func(t *testing.T, a answer) {
				if code, _ := a.rpcError(); code != -32001 {
					t.Errorf("error %d, want -32001", code)
				}
			},
		},
		{
			name: "no version in common", fault: mcptest.NoCommonVersion(), noHandsh: true,
			send: func(c *raw) answer { return c.call("initialize", map[string]any{"protocolVersion": "2025-11-25"}) },
			check: func(t *testing.T, a answer) {
				if v := a.result()["protocolVersion"]; v != "1999-12-31" {
					t.Errorf("protocolVersion = %v, want 1999-12-31", v)
				}
			},
		},
		{
			name: "no version in common, stateless", cfg: mcptest.Config{Era: mcptest.Stateless}, fault: mcptest.NoCommonVersion(), noHandsh: true,
			send: func(c *raw) answer { c.modern = true; return c.call("server/discover", nil) },
			check: func(t *testing.T, a answer) {
				code, _ := a.rpcError()
				data, _ := a.messages[0]["error"].(map[string]any)["data"].(map[string]any)
				if a.status != 400 || code != -32022 || data["supported"].([]any)[0] != "1999-12-31" {
					t.Errorf("status %d error %d data %v", a.status, code, data)
				}
			},
		},
		{
			name: "fault scoped to its method", fault: mcptest.InternalError("tools/call"),
			send: func(c *raw) answer { return c.call("tools/list", nil) },
			check: func(t *testing.T, a answer) {
				if code, _ := a.rpcError(); code != 0 || a.result()["tools"] == nil {
					t.Errorf("tools/list hit by a tools/call fault: %s", a.body)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Tools = []mcptest.Tool{weather()}
			cfg.Faults = []mcptest.Fault{tt.fault}
			s, c := start(t, cfg)
			if !tt.noHandsh && cfg.Era == mcptest.Legacy {
				c.handshake()
			}
			tt.check(t, tt.send(c))
			last := s.Requests()[len(s.Requests())-1]
			if tt.name != "fault scoped to its method" && last.Fault != tt.fault.Kind {
				t.Errorf("the request was recorded with fault %v, want %v", last.Fault, tt.fault.Kind)
			}
		})
	}
}

func TestFaultCount(t *testing.T) {
	_, c := start(t, mcptest.Config{Faults: []mcptest.Fault{mcptest.InternalError("tools/list").Times(2)}})
	c.handshake()
	var codes []int
	for range 3 {
		code, _ := c.call("tools/list", nil).rpcError()
		codes = append(codes, code)
	}
	if codes[0] != -32603 || codes[1] != -32603 || codes[2] != 0 {
		t.Errorf("codes %v, want two -32603 then a success", codes)
	}
}

func TestSSENeverEnds(t *testing.T) {
	s, c := start(t, mcptest.Config{Tools: []mcptest.Tool{weather()}, Faults: []mcptest.Fault{mcptest.SSENeverEnds("tools/call")}})
	c.handshake()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	resp, err := c.stream(ctx, "tools/call", copyMap(weatherArgs))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %q, want a 200 event stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	began := time.Now()
	b, err := io.ReadAll(resp.Body)
	if len(b) != 0 || !errors.Is(err, context.DeadlineExceeded) || time.Since(began) < 200*time.Millisecond {
		t.Errorf("read %q, %v after %v; want nothing until the client gave up", b, err, time.Since(began))
	}
	// A stream still open does not hold up Close.
	resp2, err := c.stream(t.Context(), "tools/call", copyMap(weatherArgs))
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a stream that never ends")
	}
	if b, _ := io.ReadAll(resp2.Body); len(b) != 0 {
		t.Errorf("the never-ending stream carried %q before Close ended it; want nothing", b)
	}
}

func TestDrip(t *testing.T) {
	_, c := start(t, mcptest.Config{Tools: []mcptest.Tool{weather()}, Faults: []mcptest.Fault{mcptest.Drip("tools/call", 2*time.Millisecond)}})
	c.handshake()
	resp, err := c.stream(t.Context(), "tools/call", copyMap(weatherArgs))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	began := time.Now()
	var reads int
	var body []byte
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			reads++
			body = append(body, buf[:n]...)
		}
		if err != nil {
			break
		}
	}
	elapsed := time.Since(began)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m["result"] == nil {
		t.Fatalf("the dripped answer is not the right one: %v %q", err, body)
	}
	if min := time.Duration(len(body)-1) * 2 * time.Millisecond; elapsed < min || reads < len(body)/4 {
		t.Errorf("%d bytes in %d reads over %v; want about one read per byte over at least %v", len(body), reads, elapsed, min)
	}
}

func TestForgetSession(t *testing.T) {
	tests := []struct {
		name        string
		fault       mcptest.Fault
		status      int
		code        int
		afterReinit int // the status of tools/call after a new initialize
	}{
		{"404 once", mcptest.ForgetSession("tools/call", 404).Once(), 404, -32001, 200},
		{"400 once", mcptest.ForgetSession("tools/call", 400).Once(), 400, -32000, 200},
		{"404 always", mcptest.ForgetSession("tools/call", 404), 404, -32001, 404},
		{"400 always", mcptest.ForgetSession("tools/call", 400), 400, -32000, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, mcptest.Config{Tools: []mcptest.Tool{weather()}, Faults: []mcptest.Fault{tt.fault}})
			c.handshake()
			if a := c.call("tools/list", nil); a.status != 200 {
				t.Fatalf("tools/list before the fault: %d", a.status)
			}
			a := callWeather(c)
			code, _ := a.rpcError()
			if a.status != tt.status || code != tt.code || a.messages[0]["id"] != nil {
				t.Errorf("status %d error %d id %v, want %d %d and a null id", a.status, code, a.messages[0]["id"], tt.status, tt.code)
			}
			if s.Sessions() != 0 {
				t.Errorf("%d sessions after the server forgot its one", s.Sessions())
			}
			if again := c.call("tools/list", nil); again.status != 404 {
				t.Errorf("the forgotten session answered %d on tools/list, want 404", again.status)
			}
			c.session = ""
			c.handshake()
			if a := callWeather(c); a.status != tt.afterReinit {
				t.Errorf("after a new initialize tools/call answered %d, want %d", a.status, tt.afterReinit)
			}
		})
	}
}

// readEvent reads one SSE event's data.
func readEvent(t *testing.T, r *bufio.Reader) map[string]any {
	t.Helper()
	var data string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading an event: %v (so far %q)", err, data)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" && data != "" {
			break
		}
		if strings.HasPrefix(line, "data: ") {
			data += strings.TrimPrefix(line, "data: ")
		}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatalf("event data %q: %v", data, err)
	}
	return m
}

func TestAskOnTheStream(t *testing.T) {
	tests := []struct {
		name    string
		fault   mcptest.Fault
		method  string
		reply   string // the client's JSON-RPC response, %s its id
		isError bool
	}{
		{"sampling refused", mcptest.AskSampling(), "sampling/createMessage",
			`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, true},
		{"elicitation answered", mcptest.AskElicitation(), "elicitation/create",
			`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"confirm":true}}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// JSON is asked for: a server request forces a stream anyway.
			s, c := start(t, mcptest.Config{Tools: []mcptest.Tool{weather()}, Faults: []mcptest.Fault{tt.fault}})
			c.handshake()
			resp, err := c.stream(t.Context(), "tools/call", copyMap(weatherArgs))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("Content-Type %q, want an event stream", resp.Header.Get("Content-Type"))
			}
			r := bufio.NewReader(resp.Body)
			ask := readEvent(t, r)
			if ask["method"] != tt.method || ask["id"] == nil || ask["result"] != nil {
				t.Fatalf("first event %v, want a %s request", ask, tt.method)
			}
			id, _ := json.Marshal(ask["id"])
			if a := c.do(http.MethodPost, []byte(strings.Replace(tt.reply, "%s", string(id), 1)), http.Header{
				"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Mcp-Session-Id": {c.session},
			}); a.status != http.StatusAccepted {
				t.Errorf("the client's response got %d, want 202", a.status)
			}
			final := readEvent(t, r)
			res, _ := final["result"].(map[string]any)
			if final["id"] != float64(c.id) || (res["isError"] == true) != tt.isError {
				t.Errorf("final event %v, want the tools/call answer with isError %v", final, tt.isError)
			}
			if n := len(s.Calls("")); n != 1 {
				t.Errorf("%d client responses recorded, want 1", n)
			}
		})
	}
}

func TestAskWaitsAndCloses(t *testing.T) {
	s, c := start(t, mcptest.Config{Tools: []mcptest.Tool{weather()}, Faults: []mcptest.Fault{mcptest.AskSampling()}})
	c.handshake()
	resp, err := c.stream(t.Context(), "tools/call", copyMap(weatherArgs))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	readEvent(t, bufio.NewReader(resp.Body))
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a server request waiting for its answer")
	}
}

func TestAskStateless(t *testing.T) {
	_, c := start(t, mcptest.Config{Era: mcptest.Stateless, Tools: []mcptest.Tool{weather()}, Faults: []mcptest.Fault{mcptest.AskElicitation()}})
	c.modern = true
	a := callWeather(c)
	r := a.result()
	ask, _ := r["inputRequests"].(map[string]any)["ask"].(map[string]any)
	if r["resultType"] != "input_required" || ask["method"] != "elicitation/create" || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %s, want an input_required result asking for elicitation/create", a.body)
	}
	args := copyMap(weatherArgs)
	args["inputResponses"] = map[string]any{"ask": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}
	args["requestState"] = r["requestState"]
	if again := c.call("tools/call", args).result(); again["resultType"] != "complete" || again["structuredContent"] == nil {
		t.Errorf("the retry with inputResponses got %v, want the tool's result", again)
	}
}

// TestHugeByDefault streams the default 50 MB and counts it rather than
// decoding it: what a client makes of it is the client's test.
func TestHugeByDefault(t *testing.T) {
	_, c := start(t, mcptest.Config{Encoding: mcptest.SSE, Tools: []mcptest.Tool{weather()}, Faults: []mcptest.Fault{mcptest.Huge(0)}})
	c.handshake()
	resp, err := c.stream(t.Context(), "tools/call", copyMap(weatherArgs))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	head := make([]byte, 200)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	rest, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	prefix := `event: message` + "\n" + `data: {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"`
	suffix := `"}]}}` + "\n\n"
	if !strings.HasPrefix(string(head), prefix) {
		t.Errorf("the stream begins %q, want %q", head, prefix)
	}
	if got, want := int64(len(head))+rest, int64(len(prefix)+50<<20+len(suffix)); got != want {
		t.Errorf("streamed %d bytes, want %d (50 MB of text)", got, want)
	}
}
