package mcptest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

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

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
