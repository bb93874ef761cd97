package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// With --kind mcp the provider serves probe i's tool at /p/i as an MCP
// server instead: a minimal Streamable HTTP endpoint written here with
// net/http and encoding/json, since the MCP test server (internal/mcptest)
// is for tests only and toolpulse has no server of its own to offer but
// its read-only health endpoint. It speaks exactly what a probe's session
// needs, every answer one JSON object:
//
//   - legacy era (2025-11-25, what servers on npm speak today): the
//     client's server/discover is refused with 400, as those servers refuse
//     it; initialize opens a session (Mcp-Session-Id);
//     notifications/initialized gets 202; tools/list; tools/call; DELETE
//     ends the session.
//   - stateless era (2026-07-28): server/discover, tools/list and
//     tools/call, each result with resultType, and no session.
//
// It checks no session ids or protocol headers: the daemon's client is
// the one under test elsewhere; here only its cost is measured. The tool,
// search, answers what the HTTP provider would, as structuredContent and
// as the text item beside it (as SDK servers answer a typed tool); a 503
// and a closed connection hit tools/call. A session's first request
// (server/discover, in both eras) is the run's arrival.

// MCP eras the provider speaks (--mcp-era).
const (
	mcpLegacy    = "legacy"
	mcpStateless = "stateless"
)

// Protocol versions of the two eras.
const (
	mcpLegacyVersion = "2025-11-25"
	mcpModernVersion = "2026-07-28"
)

// benchToolName is the tool every MCP probe calls.
const benchToolName = "search"

// mcpEndpoint is the provider's MCP side, answers encoded once.
type mcpEndpoint struct {
	stateless bool
	// results are the tools/call results by answer kind; nil for the
	// kinds that are not a result (503, closed).
	results  [answerKinds][]byte
	list     []byte // the tools/list result
	discover []byte // server/discover's: the stateless era's result, or the legacy era's refusal body
	sessions atomic.Int64
}

func newMCPEndpoint(era string, answers [answerKinds]cannedAnswer) *mcpEndpoint {
	m := &mcpEndpoint{stateless: era == mcpStateless}
	complete := ""
	if m.stateless {
		complete = `"resultType":"complete",`
	}
	for kind, a := range answers {
		if a.status != http.StatusOK {
			continue
		}
		text, _ := json.Marshal(string(a.body))
		m.results[kind] = []byte(`{` + complete + `"content":[{"type":"text","text":` + string(text) + `}],"structuredContent":` + string(a.body) + `,"isError":false}`)
	}
	m.list = []byte(`{` + complete + `"tools":[{"name":"` + benchToolName + `","description":"Search the docs.",` +
		`"inputSchema":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]},` +
		`"annotations":{"readOnlyHint":true}}]}`)
	if m.stateless {
		m.discover = []byte(`{"resultType":"complete","supportedVersions":["` + mcpModernVersion + `"],"capabilities":{"tools":{}},` +
			`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"toolpulse-bench","version":"1.0.0"}}}`)
	} else {
		m.discover = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`)
	}
	return m
}

// mcpMessage is a JSON-RPC message from the client.
type mcpMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Name            string `json:"name"`
	} `json:"params"`
}

// serveMCP answers one request of probe i's session.
func (p *provider) serveMCP(w http.ResponseWriter, r *http.Request, i int, pp *providerProbe) {
	m := p.mcp
	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		if m.stateless {
			w.Header().Set("Allow", "POST")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	default:
		// No stream of server-initiated messages.
		w.Header().Set("Allow", "POST, DELETE")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var msg mcpMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		writeRPC(w, http.StatusBadRequest, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`))
		return
	}
	if len(msg.ID) == 0 || string(msg.ID) == "null" {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	switch msg.Method {
	case "server/discover":
		now := time.Now().UnixNano()
		pp.mu.Lock()
		pp.arrivals = append(pp.arrivals, now)
		pp.mu.Unlock()
		if m.stateless {
			writeRPC(w, http.StatusOK, rpcResult(msg.ID, m.discover))
		} else {
			writeRPC(w, http.StatusBadRequest, m.discover)
		}
	case "initialize":
		version := mcpLegacyVersion
		switch msg.Params.ProtocolVersion {
		case "2025-11-25", "2025-06-18", "2025-03-26":
			version = msg.Params.ProtocolVersion
		}
		w.Header().Set("Mcp-Session-Id", "bench-"+strconv.FormatInt(m.sessions.Add(1), 10))
		writeRPC(w, http.StatusOK, rpcResult(msg.ID, []byte(`{"protocolVersion":"`+version+
			`","capabilities":{"tools":{}},"serverInfo":{"name":"toolpulse-bench","version":"1.0.0"}}`)))
	case "tools/list":
		writeRPC(w, http.StatusOK, rpcResult(msg.ID, m.list))
	case "tools/call":
		if msg.Params.Name != benchToolName {
			writeRPC(w, http.StatusOK, rpcError(msg.ID, -32602, "Unknown tool: "+msg.Params.Name))
			return
		}
		p.callTool(w, i, pp, msg.ID)
	case "ping":
		writeRPC(w, http.StatusOK, rpcResult(msg.ID, []byte(`{}`)))
	default:
		writeRPC(w, http.StatusOK, rpcError(msg.ID, -32601, "Method not found: "+msg.Method))
	}
}

// callTool answers tools/call with the probe's answer of the moment, as
// ServeHTTP picks it for an HTTP probe.
func (p *provider) callTool(w http.ResponseWriter, i int, pp *providerProbe, id json.RawMessage) {
	pp.mu.Lock()
	seq := pp.requests
	pp.requests++
	pp.mu.Unlock()
	kind, open := p.decide(w, i, pp, seq, time.Now().UnixNano())
	if !open {
		return
	}
	result := p.mcp.results[kind]
	if result == nil {
		a := &p.answers[kind]
		writeRPC(w, a.status, a.body)
		return
	}
	writeRPC(w, http.StatusOK, rpcResult(id, result))
}

// rpcResult is the JSON-RPC response to id carrying result.
func rpcResult(id json.RawMessage, result []byte) []byte {
	b := make([]byte, 0, len(result)+len(id)+32)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// rpcError is the JSON-RPC error response to id.
func rpcError(id json.RawMessage, code int, message string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
	return b
}

func writeRPC(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
