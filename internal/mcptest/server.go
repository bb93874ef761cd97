package mcptest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Era is which revision of the Streamable HTTP transport a server speaks.
type Era int

const (
	// Legacy is 2025-03-26 … 2025-11-25: an initialize handshake, a session
	// in Mcp-Session-Id, notifications/initialized answered 202, DELETE to
	// end the session, 404 for a session the server no longer knows. A
	// request without a session (server/discover among them) gets 400 and
	// the TypeScript SDK's "-32000 Bad Request: Server not initialized",
	// as @modelcontextprotocol/server-everything answers it.
	Legacy Era = iota
	// Stateless is 2026-07-28: no handshake and no session; every request
	// carries its version in params._meta and in MCP-Protocol-Version, and
	// its method (and, for tools/call, the tool) in Mcp-Method and
	// Mcp-Name, which the server checks against the body (400, -32020
	// HeaderMismatch); an unsupported version gets 400 and -32022
	// UnsupportedProtocolVersionError; server/discover answers the
	// versions, capabilities and serverInfo; an unknown method gets 404
	// and -32601; GET and DELETE get 405; results carry resultType.
	Stateless
	// DualEra serves both on one endpoint: initialize selects Legacy for
	// that session, a request whose params._meta names a protocol version
	// is served Stateless.
	DualEra
)

// Encoding is how the server answers a request: one JSON object, or an
// SSE stream carrying the response as its one "message" event.
type Encoding int

const (
	JSON Encoding = iota
	SSE
)

// ModernVersion is the stateless revision's protocol version.
const ModernVersion = "2026-07-28"

// LatestLegacyVersion is what initialize answers a client that offers a
// version the server does not know.
const LatestLegacyVersion = "2025-11-25"

func legacyVersion(v string) bool {
	switch v {
	case "2025-11-25", "2025-06-18", "2025-03-26":
		return true
	}
	return false
}

// maxBody bounds what the server reads of one request.
const maxBody = 4 << 20

// Config says how a server behaves. The zero Config is a correct legacy
// server with no tools, answering in JSON.
type Config struct {
	Era      Era
	Encoding Encoding
	Tools    []Tool
	// PageSize is how many tools one tools/list page holds, with
	// nextCursor pointing at the next; 0 lists every tool on one page.
	PageSize int
	// UnknownTool is how tools/call answers a name the server does not
	// list.
	UnknownTool UnknownToolStyle
	Faults      []Fault
	// Name is serverInfo.name ("mcptest" if empty).
	Name string
}

// Request is one HTTP request the server received, recorded as it
// arrived, before it was answered.
type Request struct {
	HTTPMethod string
	// Method is the JSON-RPC method; "" for the client's response to a
	// server request, and for a body that is not JSON-RPC.
	Method string
	// ID is the JSON-RPC id as sent; nil for a notification.
	ID              json.RawMessage
	Header          http.Header
	Body            []byte
	SessionID       string // the Mcp-Session-Id header
	ProtocolVersion string // the MCP-Protocol-Version header
	Authorization   string // the Authorization header
	// Status is the HTTP status answered, 0 while the answer has not
	// started.
	Status int
	// Fault is the kind of fault applied to the answer, 0 for none.
	Fault FaultKind
}

// Server is an MCP server on a loopback port, serving the endpoint URL.
// It is safe for concurrent use; its tools and faults may change while it
// runs.
type Server struct {
	// URL is the MCP endpoint, http://127.0.0.1:PORT/mcp.
	URL string

	cfg       Config
	http      *httptest.Server
	closing   chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	tools    []Tool
	faults   []*faultState
	sessions map[string]bool
	requests []Request
	pending  map[string]chan message
	asked    int
}

type faultState struct {
	Fault
	hits int
}

// Start serves cfg on a loopback port until the test ends (or Close).
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	s := &Server{
		cfg:      cfg,
		closing:  make(chan struct{}),
		sessions: map[string]bool{},
		pending:  map[string]chan message{},
	}
	s.SetTools(cfg.Tools...)
	s.SetFaults(cfg.Faults...)
	s.http = httptest.NewServer(s)
	s.URL = s.http.URL + "/mcp"
	t.Cleanup(s.Close)
	return s
}

// Close stops the server: answers that wait (a stream that never ends, a
// server request waiting for the client) give up, connections still
// being written to are closed, and Close returns once every handler has.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.http.CloseClientConnections()
		s.http.Close()
	})
}

// SetTools replaces the tools the server lists and answers.
func (s *Server) SetTools(tools ...Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools = append([]Tool(nil), tools...)
}

// SetFaults replaces the faults, with their counts started afresh.
func (s *Server) SetFaults(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
	for _, f := range faults {
		s.faults = append(s.faults, &faultState{Fault: f})
	}
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// Calls returns the requests received so far for the JSON-RPC method.
func (s *Server) Calls(method string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

// Sessions returns how many sessions the server holds now.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// message is a JSON-RPC message as the client sends it.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func (m message) call() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// metaVersion is the protocol version a stateless request carries in
// params._meta.
func (m message) metaVersion() string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(p.Meta["io.modelcontextprotocol/protocolVersion"], &v)
	return v
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func encode(id json.RawMessage, result any, rerr *rpcError) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(response{JSONRPC: "2.0", ID: id, Result: result, Error: rerr})
	if err != nil {
		// Only a handler's structuredContent can fail to marshal; say so
		// on the wire rather than hide it.
		b, _ = json.Marshal(response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: -32603, Message: "mcptest: " + err.Error()}})
	}
	return b
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	var msg message
	parseErr := json.Unmarshal(body, &msg)
	o := &out{w: w, ctx: r.Context(), closing: s.closing, sse: s.cfg.Encoding == SSE}
	idx := s.record(r, body, msg)
	defer func() { s.finish(idx, o.status) }()

	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		s.delete(o, r)
		return
	default:
		// No standalone SSE stream: the spec's answer to a GET is 405.
		w.Header().Set("Allow", "POST, DELETE")
		o.plain(http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		o.rpcHTTPError(http.StatusUnsupportedMediaType, nil, -32000, "Unsupported Media Type: Content-Type must be application/json", nil)
		return
	}
	if parseErr != nil || msg.JSONRPC != "2.0" {
		o.rpcHTTPError(http.StatusBadRequest, nil, -32700, "Parse error", nil)
		return
	}
	if msg.Method == "" {
		// The client's answer to a server request.
		s.deliver(msg)
		o.accepted()
		return
	}
	modern := s.modern(msg)
	f := s.take(msg, modern, r.Header.Get("Mcp-Session-Id"))
	s.noteFault(idx, f.Kind)
	switch f.Kind {
	case KindNotAcceptable:
		o.rpcHTTPError(http.StatusNotAcceptable, nil, -32000, "Not Acceptable: Client must accept both application/json and text/event-stream", nil)
		return
	case KindPlainBadRequest:
		o.plain(http.StatusBadRequest, "Bad Request")
		return
	case KindSSENeverEnds:
		o.sse = true
		o.start(http.StatusOK)
		o.flush()
		o.wait()
		return
	case KindSSECut:
		o.sse = true
		o.start(http.StatusOK)
		_, _ = io.WriteString(w, "id: mcptest-prime\ndata: \n\n")
		o.flush()
		return
	case KindSSEGarbage:
		o.sse = true
		o.start(http.StatusOK)
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\n\nevent: message\ndata: \x00\x01 not json at all }{\n\n")
		o.flush()
		return
	}
	if !acceptsBoth(r) {
		o.rpcHTTPError(http.StatusNotAcceptable, nil, -32000, "Not Acceptable: Client must accept both application/json and text/event-stream", nil)
		return
	}
	if f.Kind == KindDrip {
		o.drip = f.Every
		if o.drip <= 0 {
			o.drip = defaultDrip
		}
	}
	if modern {
		s.serveModern(o, r, msg, f)
	} else {
		s.serveLegacy(o, r, msg, f)
	}
}

func acceptsBoth(r *http.Request) bool {
	var j, e bool
	for _, part := range strings.Split(strings.Join(r.Header.Values("Accept"), ","), ",") {
		mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
		j = j || mt == "application/json" || mt == "application/*" || mt == "*/*"
		e = e || mt == "text/event-stream" || mt == "text/*" || mt == "*/*"
	}
	return j && e
}

// modern reports whether msg is served in the stateless era.
func (s *Server) modern(msg message) bool {
	switch s.cfg.Era {
	case Stateless:
		return true
	case DualEra:
		return msg.Method != "initialize" && msg.metaVersion() != ""
	}
	return false
}

// take returns the fault that hits msg (the zero Fault for none) and
// spends one of its hits.
func (s *Server) take(msg message, modern bool, session string) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		if f.Count > 0 && f.hits >= f.Count {
			continue
		}
		if !f.applies(msg.Method, msg.call()) {
			continue
		}
		switch f.Kind {
		case KindForgetSession:
			if modern || msg.Method == "initialize" || !s.sessions[session] {
				continue
			}
		case KindNoCommonVersion:
			if !modern && msg.Method != "initialize" {
				continue
			}
		}
		f.hits++
		return f.Fault
	}
	return Fault{}
}

func (s *Server) record(r *http.Request, body []byte, msg message) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	req := Request{
		HTTPMethod:      r.Method,
		Method:          msg.Method,
		Header:          r.Header.Clone(),
		Body:            body,
		SessionID:       r.Header.Get("Mcp-Session-Id"),
		ProtocolVersion: r.Header.Get("MCP-Protocol-Version"),
		Authorization:   r.Header.Get("Authorization"),
	}
	if msg.call() {
		req.ID = msg.ID
	}
	s.requests = append(s.requests, req)
	return len(s.requests) - 1
}

func (s *Server) finish(idx, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[idx].Status = status
}

func (s *Server) noteFault(idx int, kind FaultKind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[idx].Fault = kind
}

func (s *Server) delete(o *out, r *http.Request) {
	if s.cfg.Era == Stateless {
		o.w.Header().Set("Allow", "POST")
		o.plain(http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		o.rpcHTTPError(http.StatusBadRequest, nil, -32000, "Bad Request: Mcp-Session-Id header is required", nil)
		return
	}
	s.mu.Lock()
	known := s.sessions[sid]
	delete(s.sessions, sid)
	s.mu.Unlock()
	if !known {
		o.rpcHTTPError(http.StatusNotFound, nil, -32001, "Session not found", nil)
		return
	}
	o.start(http.StatusOK)
}

func (s *Server) serveLegacy(o *out, r *http.Request, msg message, f Fault) {
	if msg.Method == "initialize" {
		s.initialize(o, msg, f)
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		o.rpcHTTPError(http.StatusBadRequest, nil, -32000, "Bad Request: Server not initialized", nil)
		return
	}
	s.mu.Lock()
	known := s.sessions[sid]
	if f.Kind == KindForgetSession {
		delete(s.sessions, sid)
	}
	s.mu.Unlock()
	switch {
	case f.Kind == KindForgetSession && f.Status == http.StatusBadRequest:
		o.rpcHTTPError(http.StatusBadRequest, nil, -32000, "Bad Request: No valid session ID provided", nil)
		return
	case f.Kind == KindForgetSession, !known:
		o.rpcHTTPError(http.StatusNotFound, nil, -32001, "Session not found", nil)
		return
	}
	if pv := r.Header.Get("MCP-Protocol-Version"); pv != "" && !legacyVersion(pv) {
		o.rpcHTTPError(http.StatusBadRequest, nil, -32000, "Bad Request: Unsupported protocol version: "+pv, nil)
		return
	}
	if !msg.call() {
		o.accepted()
		return
	}
	s.dispatch(o, r, msg, f, false)
}

func (s *Server) initialize(o *out, msg message, f Fault) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	version := LatestLegacyVersion
	if legacyVersion(p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	if f.Kind == KindNoCommonVersion {
		version = f.Version
	}
	sid := newSessionID()
	s.mu.Lock()
	s.sessions[sid] = true
	s.mu.Unlock()
	o.w.Header().Set("Mcp-Session-Id", sid)
	s.reply(o, msg.ID, map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{}},
		"serverInfo":      s.serverInfo(),
	}, nil, f)
}

func (s *Server) serverInfo() map[string]string {
	name := s.cfg.Name
	if name == "" {
		name = "mcptest"
	}
	return map[string]string{"name": name, "version": "1.0.0"}
}

func (s *Server) serveModern(o *out, r *http.Request, msg message, f Fault) {
	if !msg.call() {
		o.accepted()
		return
	}
	supported := []string{ModernVersion}
	if f.Kind == KindNoCommonVersion {
		supported = []string{f.Version}
	}
	if msg.Method == "initialize" {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		o.rpcHTTPError(http.StatusBadRequest, msg.ID, -32022, "Unsupported protocol version: this server speaks "+strings.Join(supported, ", ")+" and has no initialize",
			map[string]any{"supported": supported, "requested": p.ProtocolVersion})
		return
	}
	header, meta := r.Header.Get("MCP-Protocol-Version"), msg.metaVersion()
	switch {
	case header == "" || meta == "":
		o.rpcHTTPError(http.StatusBadRequest, msg.ID, -32020, "Header mismatch: MCP-Protocol-Version header and params._meta protocolVersion are required", nil)
		return
	case header != meta:
		o.rpcHTTPError(http.StatusBadRequest, msg.ID, -32020, fmt.Sprintf("Header mismatch: MCP-Protocol-Version header value %q does not match body value %q", header, meta), nil)
		return
	case header != supported[0]:
		o.rpcHTTPError(http.StatusBadRequest, msg.ID, -32022, "Unsupported protocol version", map[string]any{"supported": supported, "requested": header})
		return
	case r.Header.Get("Mcp-Method") != msg.Method:
		o.rpcHTTPError(http.StatusBadRequest, msg.ID, -32020, fmt.Sprintf("Header mismatch: Mcp-Method header value %q does not match body value %q", r.Header.Get("Mcp-Method"), msg.Method), nil)
		return
	}
	if msg.Method == "tools/call" {
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		if got := decodeHeaderValue(r.Header.Get("Mcp-Name")); got != p.Name {
			o.rpcHTTPError(http.StatusBadRequest, msg.ID, -32020, fmt.Sprintf("Header mismatch: Mcp-Name header value %q does not match body value %q", got, p.Name), nil)
			return
		}
	}
	if msg.Method == "server/discover" {
		s.reply(o, msg.ID, map[string]any{
			"resultType":        "complete",
			"supportedVersions": supported,
			"capabilities":      map[string]any{"tools": map[string]any{}},
			"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": s.serverInfo()},
		}, nil, f)
		return
	}
	s.dispatch(o, r, msg, f, true)
}

// decodeHeaderValue undoes the 2026-07-28 Base64 sentinel encoding
// (=?base64?…?=) of a header that mirrors a body value.
func decodeHeaderValue(v string) string {
	if strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=") && len(v) >= len("=?base64??=") {
		if b, err := base64.StdEncoding.DecodeString(v[len("=?base64?") : len(v)-len("?=")]); err == nil {
			return string(b)
		}
	}
	return v
}

// dispatch answers a request both eras share.
func (s *Server) dispatch(o *out, r *http.Request, msg message, f Fault, modern bool) {
	if f.Kind == KindRPCError {
		s.reply(o, msg.ID, nil, &rpcError{Code: f.Code, Message: f.Text}, f)
		return
	}
	switch msg.Method {
	case "ping":
		if modern {
			s.reply(o, msg.ID, map[string]any{"resultType": "complete"}, nil, f)
		} else {
			s.reply(o, msg.ID, map[string]any{}, nil, f)
		}
	case "tools/list":
		result, rerr := s.list(msg.Params, modern)
		s.reply(o, msg.ID, result, rerr, f)
	case "tools/call":
		s.call(o, r, msg, f, modern)
	default:
		rerr := &rpcError{Code: -32601, Message: "Method not found: " + msg.Method}
		if modern {
			o.rpcHTTPError(http.StatusNotFound, msg.ID, rerr.Code, rerr.Message, nil)
			return
		}
		s.reply(o, msg.ID, nil, rerr, f)
	}
}

func (s *Server) list(params json.RawMessage, modern bool) (any, *rpcError) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	_ = json.Unmarshal(params, &p)
	s.mu.Lock()
	tools := append([]Tool(nil), s.tools...)
	s.mu.Unlock()
	start := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(p.Cursor, "page-"))
		if err != nil || !strings.HasPrefix(p.Cursor, "page-") || n < 0 || n > len(tools) {
			return nil, &rpcError{Code: -32602, Message: "Invalid params: unknown cursor " + strconv.Quote(p.Cursor)}
		}
		start = n
	}
	end := len(tools)
	if s.cfg.PageSize > 0 && start+s.cfg.PageSize < end {
		end = start + s.cfg.PageSize
	}
	listing := make([]listed, 0, end-start)
	for _, t := range tools[start:end] {
		listing = append(listing, t.listing())
	}
	result := map[string]any{"tools": listing}
	if end < len(tools) {
		result["nextCursor"] = "page-" + strconv.Itoa(end)
	}
	if modern {
		result["resultType"] = "complete"
	}
	return result, nil
}

func (s *Server) tool(name string) (Tool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

func (s *Server) call(o *out, r *http.Request, msg message, f Fault, modern bool) {
	var p struct {
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments"`
		InputResponses json.RawMessage `json:"inputResponses"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.Name == "" {
		s.reply(o, msg.ID, nil, &rpcError{Code: -32602, Message: "Invalid params: tools/call needs a tool name"}, f)
		return
	}
	if len(p.Arguments) == 0 || string(p.Arguments) == "null" {
		p.Arguments = json.RawMessage("{}")
	}
	tool, ok := s.tool(p.Name)
	if !ok || f.Kind == KindUnknownTool {
		style := s.cfg.UnknownTool
		if f.Kind == KindUnknownTool {
			style = f.Style
		}
		s.unknownTool(o, msg.ID, p.Name, style, f, modern)
		return
	}
	switch f.Kind {
	case KindInvalidInput:
		s.reply(o, msg.ID, nil, &rpcError{Code: -32602, Message: fmt.Sprintf("Invalid params: invalid arguments for tool %s: argument does not match inputSchema", p.Name)}, f)
		return
	case KindInvalidInputResult:
		s.reply(o, msg.ID, s.result(Result{IsError: true, Content: []Content{Text(fmt.Sprintf("MCP error -32602: Input validation error: Invalid arguments for tool %s: argument does not match inputSchema", p.Name))}}, modern), nil, f)
		return
	}
	if name, missing := tool.missingRequired(p.Arguments); missing {
		s.reply(o, msg.ID, nil, &rpcError{Code: -32602, Message: fmt.Sprintf("Invalid params: tool %s requires argument %q", p.Name, name)}, f)
		return
	}
	if f.Kind == KindAskSampling || f.Kind == KindAskElicitation {
		method, params := askRequest(f.Kind, p.Name)
		if modern {
			if len(p.InputResponses) == 0 {
				s.reply(o, msg.ID, map[string]any{
					"resultType":    "input_required",
					"inputRequests": map[string]any{"ask": map[string]any{"method": method, "params": params}},
					"requestState":  "mcptest",
				}, nil, f)
				return
			}
		} else {
			answer, ok := s.ask(o, method, params)
			if !ok {
				return
			}
			if len(answer.Error) > 0 {
				var e rpcError
				_ = json.Unmarshal(answer.Error, &e)
				s.reply(o, msg.ID, s.result(Result{IsError: true, Content: []Content{Text(fmt.Sprintf("%s failed: MCP error %d: %s", method, e.Code, e.Message))}}, modern), nil, f)
				return
			}
		}
	}
	res := tool.call(r.Context(), p.Arguments)
	switch f.Kind {
	case KindToolError:
		res = Result{IsError: true, Content: []Content{Text(f.Text)}}
	case KindStructuredMismatch:
		if f.Value != nil {
			res.StructuredContent = f.Value
		} else {
			res.StructuredContent = breakStructured(tool.OutputSchema)
		}
	case KindStructuredMissing:
		res.StructuredContent = nil
	case KindHuge:
		s.huge(o, msg.ID, f, modern)
		return
	}
	s.reply(o, msg.ID, s.result(res, modern), nil, f)
}

func (s *Server) result(res Result, modern bool) callResult {
	w := res.wire()
	if modern {
		w.ResultType = "complete"
	}
	return w
}

func (s *Server) unknownTool(o *out, id json.RawMessage, name string, style UnknownToolStyle, f Fault, modern bool) {
	switch style {
	case UnknownAsMethodNotFound:
		s.reply(o, id, nil, &rpcError{Code: -32601, Message: "Unknown tool: " + name}, f)
	case UnknownAsResult:
		s.reply(o, id, s.result(Result{IsError: true, Content: []Content{Text(fmt.Sprintf("MCP error -32602: Tool %s not found", name))}}, modern), nil, f)
	case UnknownAsHTTP400:
		o.rpcHTTPError(http.StatusBadRequest, id, -32602, "unknown tool "+strconv.Quote(name), nil)
	default:
		s.reply(o, id, nil, &rpcError{Code: -32602, Message: "Unknown tool: " + name}, f)
	}
}

func askRequest(kind FaultKind, tool string) (string, map[string]any) {
	if kind == KindAskElicitation {
		return "elicitation/create", map[string]any{
			"mode":    "form",
			"message": "Confirm that " + tool + " may proceed",
			"requestedSchema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"confirm": map[string]any{"type": "boolean"}},
				"required":   []string{"confirm"},
			},
		}
	}
	return "sampling/createMessage", map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Summarise the input of " + tool}}},
		"maxTokens": 100,
	}
}

// ask sends a server request on the answer's SSE stream and waits for the
// client's response to it; false means the client or the server went away
// first.
func (s *Server) ask(o *out, method string, params any) (message, bool) {
	s.mu.Lock()
	s.asked++
	id := "mcptest-ask-" + strconv.Itoa(s.asked)
	ch := make(chan message, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	o.sse = true
	if o.event(b) != nil {
		return message{}, false
	}
	select {
	case m := <-ch:
		return m, true
	case <-o.ctx.Done():
	case <-s.closing:
	}
	return message{}, false
}

// deliver hands the client's response to the ask waiting for it.
func (s *Server) deliver(msg message) {
	var id string
	if json.Unmarshal(msg.ID, &id) != nil {
		return
	}
	s.mu.Lock()
	ch := s.pending[id]
	s.mu.Unlock()
	if ch != nil {
		select {
		case ch <- msg:
		default:
		}
	}
}

// reply writes the response to id, with the fault's id or pace.
func (s *Server) reply(o *out, id json.RawMessage, result any, rerr *rpcError, f Fault) {
	if f.Kind == KindWrongID {
		id = otherID(id)
	}
	_ = o.event(encode(id, result, rerr))
}

// otherID returns an id that is not id.
func otherID(id json.RawMessage) json.RawMessage {
	var n json.Number
	if json.Unmarshal(id, &n) == nil {
		if i, err := n.Int64(); err == nil {
			return json.RawMessage(strconv.FormatInt(i+1000, 10))
		}
	}
	var str string
	if json.Unmarshal(id, &str) == nil {
		b, _ := json.Marshal(str + "-other")
		return b
	}
	return json.RawMessage("1000")
}

// defaultHuge is the size of a Huge answer whose Size is 0.
const defaultHuge = 50 << 20

// huge streams a CallToolResult whose one text item is f.Size bytes.
func (s *Server) huge(o *out, id json.RawMessage, f Fault, modern bool) {
	size := f.Size
	if size <= 0 {
		size = defaultHuge
	}
	resultType := ""
	if modern {
		resultType = `"resultType":"complete",`
	}
	prefix := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{%s"content":[{"type":"text","text":"`, id, resultType)
	_ = o.stream(prefix, size, `"}]}}`)
}

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// closed reports whether ctx or the server is done.
func closed(ctx context.Context, closing <-chan struct{}) bool {
	select {
	case <-ctx.Done():
		return true
	case <-closing:
		return true
	default:
		return false
	}
}
