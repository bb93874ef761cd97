package mcptest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/testkit"
)

// start checks for leaked goroutines once the server and the client have
// stopped, then starts cfg and a client for it.
func start(t *testing.T, cfg mcptest.Config) (*mcptest.Server, *raw) {
	t.Helper()
	t.Cleanup(testkit.NoLeaks(t))
	s := mcptest.Start(t, cfg)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return s, &raw{t: t, url: s.URL, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// raw speaks the transport by hand, so a test sees every byte.
type raw struct {
	t       *testing.T
	url     string
	hc      *http.Client
	session string
	version string // the MCP-Protocol-Version header to send, "" for none
	modern  bool   // send the 2026-07-28 _meta and headers
	id      int
}

// answer is one HTTP answer, its body and the JSON-RPC messages in it.
type answer struct {
	status   int
	header   http.Header
	body     []byte
	messages []map[string]any
}

// rpcError returns the answer's last message's error code and message,
// or 0 and "" when it has none.
func (a answer) rpcError() (int, string) {
	if len(a.messages) == 0 {
		return 0, ""
	}
	e, _ := a.messages[len(a.messages)-1]["error"].(map[string]any)
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	return int(code), msg
}

// result returns the answer's last message's result.
func (a answer) result() map[string]any {
	if len(a.messages) == 0 {
		return nil
	}
	r, _ := a.messages[len(a.messages)-1]["result"].(map[string]any)
	return r
}

// call sends a request and returns its answer.
func (c *raw) call(method string, params map[string]any) answer {
	c.t.Helper()
	c.id++
	return c.send(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": c.params(params)}, method, params)
}

// notify sends a notification.
func (c *raw) notify(method string) answer {
	c.t.Helper()
	return c.send(map[string]any{"jsonrpc": "2.0", "method": method}, method, nil)
}

func (c *raw) params(p map[string]any) map[string]any {
	if p == nil {
		p = map[string]any{}
	}
	if c.modern {
		p["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": mcptest.ModernVersion, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	}
	return p
}

func (c *raw) send(msg map[string]any, method string, params map[string]any) answer {
	c.t.Helper()
	body, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		h.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		h.Set("MCP-Protocol-Version", c.version)
	}
	if c.modern {
		h.Set("MCP-Protocol-Version", mcptest.ModernVersion)
		h.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok {
			h.Set("Mcp-Name", name)
		}
	}
	return c.do(http.MethodPost, body, h)
}

func (c *raw) do(method string, body []byte, h http.Header) answer {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.url, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header = h
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("reading the answer to %s: %v", body, err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: b}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			a.messages = append(a.messages, m)
		}
	case "text/event-stream":
		for _, data := range sseData(b) {
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) == nil {
				a.messages = append(a.messages, m)
			}
		}
	}
	return a
}

// sseData returns the data of each event in an SSE body.
func sseData(b []byte) []string {
	var out []string
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != nil {
				out = append(out, strings.Join(data, "\n"))
			}
			data = nil
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return out
}

// handshake runs initialize and notifications/initialized and keeps the
// session.
func (c *raw) handshake() answer {
	c.t.Helper()
	a := c.call("initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "raw", "version": "1"},
	})
	if a.status != http.StatusOK {
		c.t.Fatalf("initialize: status %d, body %s", a.status, a.body)
	}
	c.session = a.header.Get("Mcp-Session-Id")
	if v, ok := a.result()["protocolVersion"].(string); ok {
		c.version = v
	}
	if n := c.notify("notifications/initialized"); n.status != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: status %d, want 202", n.status)
	}
	return a
}

// stream opens a POST whose answer the test reads itself, for answers
// that never end or end slowly.
func (c *raw) stream(ctx context.Context, method string, params map[string]any) (*http.Response, error) {
	c.id++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": c.params(params)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.modern {
		req.Header.Set("MCP-Protocol-Version", mcptest.ModernVersion)
		req.Header.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok {
			req.Header.Set("Mcp-Name", name)
		}
	}
	return c.hc.Do(req)
}
