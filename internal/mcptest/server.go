package mcptest

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
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
