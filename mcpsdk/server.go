package mcpsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerInfo is how a server introduces itself in the handshake: a
// Server of ours, or the one ListTools listed.
type ServerInfo struct {
	Name, Title, Version string
	// Instructions tell a client's model how to use the server's tools.
	Instructions string
}

// ServerTool is one tool of a Server, as data: what tools/list shows of it
// and the function that answers its tools/call.
type ServerTool struct {
	// Name is the tool's name: 1 to 128 of A-Z a-z 0-9 _ - . (the
	// protocol's rule).
	Name  string
	Title string
	// Description is what tells an agent what the tool does.
	Description string
	// InputSchema is the JSON Schema of the arguments; its type must be
	// "object". Arguments that do not validate against it are refused with
	// JSON-RPC error -32602 before Answer is called.
	InputSchema json.RawMessage
	// OutputSchema, when set, is the JSON Schema of structuredContent. The
	// server does not check Answer's value against it: a server that breaks
	// its own schema is something a probe must be able to meet.
	OutputSchema json.RawMessage
	Annotations  ToolAnnotations
	// Answer answers one call with its arguments, raw and validated. Its
	// value is the result's structuredContent (an object, when OutputSchema
	// is set) and, as JSON text, its one content item; an error is a result
	// with isError: true and the error's text.
	Answer func(ctx context.Context, arguments json.RawMessage) (any, error)
}

// ToolAnnotations are a tool's behaviour hints, as the protocol defines
// them. A nil DestructiveHint or OpenWorldHint is left out of the listing
// (the protocol's default for both is true).
type ToolAnnotations struct {
	Title           string
	ReadOnlyHint    bool
	DestructiveHint *bool
	IdempotentHint  bool
	OpenWorldHint   *bool
}

// Server is an MCP server of tools given as data, served over Streamable
// HTTP in the era most servers speak today: the initialize handshake,
// Mcp-Session-Id sessions and text/event-stream answers (protocol versions
// 2024-11-05 to 2025-11-25). A client that offers 2026-07-28 through
// server/discover is told the versions the server has, and falls back to
// initialize. Tools can be replaced while it serves, which is how a test or
// a demo makes a tool's definition drift. Idle sessions end after
// sessionIdle. It is safe for concurrent use.
type Server struct {
	srv     *mcp.Server
	handler http.Handler
}

// sessionIdle is how long a Server keeps a session nobody uses: a probe
// closes its own, a client that does not is forgotten after this.
const sessionIdle = 2 * time.Minute

// NewServer returns a Server of tools. A tool it cannot serve (see
// ServerTool) is an error that names it; so are two tools of one name.
func NewServer(info ServerInfo, tools ...ServerTool) (*Server, error) {
	if info.Name == "" {
		return nil, errors.New("mcpsdk: ServerInfo.Name is empty")
	}
	var legacy []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < "2026-07-28" {
			legacy = append(legacy, v)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: info.Name, Title: info.Title, Version: info.Version},
		&mcp.ServerOptions{Instructions: info.Instructions, SupportedProtocolVersions: legacy})
	s := &Server{srv: srv, handler: streamableHandler(srv, false)}
	seen := map[string]bool{}
	for _, t := range tools {
		if seen[t.Name] {
			return nil, fmt.Errorf("mcpsdk: two tools named %q", t.Name)
		}
		seen[t.Name] = true
		if err := s.SetTool(t); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SetTool adds t, or replaces the tool of its name; sessions open at the
// time are notified that the list changed. A tool it cannot serve is an
// error and changes nothing.
func (s *Server) SetTool(t ServerTool) error {
	tool, handler, err := t.compile()
	if err != nil {
		return err
	}
	s.srv.AddTool(tool, handler)
	return nil
}

// ServeHTTP serves the MCP endpoint: POST, GET and DELETE on one path. The
// SDK's DNS-rebinding protection is on: a request that reached a loopback
// address with another Host is refused.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close ends every open session. The Server still serves new ones.
func (s *Server) Close() {
	for ss := range s.srv.Sessions() {
		_ = ss.Close()
	}
}

// streamableHandler serves srv over Streamable HTTP with what toolpulse's
// servers share: a small request body limit (their tools take a few short
// arguments) and the SDK's DNS-rebinding protection. Stateless is
// toolpulse's own endpoint: no session, one JSON answer per request.
// Otherwise sessions live until closed or idle for sessionIdle, and
// answers are event streams.
func streamableHandler(srv *mcp.Server, stateless bool) http.Handler {
	opts := &mcp.StreamableHTTPOptions{Stateless: stateless, JSONResponse: stateless, MaxRequestBodyBytes: 64 << 10}
	if !stateless {
		opts.SessionTimeout = sessionIdle
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)
}

// compile checks t and turns it into the SDK's tool and handler. It checks
// everything the SDK's AddTool would otherwise panic on.
func (t ServerTool) compile() (*mcp.Tool, mcp.ToolHandler, error) {
	fail := func(format string, args ...any) (*mcp.Tool, mcp.ToolHandler, error) {
		return nil, nil, fmt.Errorf("mcpsdk: tool %q: %s", t.Name, fmt.Sprintf(format, args...))
	}
	if err := checkToolName(t.Name); err != nil {
		return fail("%v", err)
	}
	if t.Answer == nil {
		return fail("Answer is nil")
	}
	input, err := compileSchema(t.InputSchema)
	if err != nil {
		return fail("inputSchema %v", err)
	}
	if input.Schema().Type != "object" {
		return fail(`inputSchema: the type must be "object"`)
	}
	if hasKey(t.InputSchema, "x-mcp-header") {
		return fail("inputSchema: x-mcp-header is not supported")
	}
	tool := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
		Annotations: &mcp.ToolAnnotations{Title: t.Annotations.Title, ReadOnlyHint: t.Annotations.ReadOnlyHint,
			DestructiveHint: t.Annotations.DestructiveHint, IdempotentHint: t.Annotations.IdempotentHint,
			OpenWorldHint: t.Annotations.OpenWorldHint}}
	if len(t.OutputSchema) > 0 {
		if _, err := compileSchema(t.OutputSchema); err != nil {
			return fail("outputSchema %v", err)
		}
		tool.OutputSchema = t.OutputSchema
	}
	answer := t.Answer
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		var v any
		if err := json.Unmarshal(args, &v); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid arguments: not JSON"}
		}
		if err := input.Validate(v); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid arguments: " + firstLine(err.Error())}
		}
		out, err := answer(ctx, args)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		text, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("the tool's answer does not marshal: %w", err)
		}
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(text), Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, nil
	}
	return tool, handler, nil
}

// checkToolName applies the protocol's rule for tool names.
func checkToolName(name string) error {
	if name == "" || len(name) > 128 {
		return errors.New("the name must be 1 to 128 characters")
	}
	if i := strings.IndexFunc(name, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}); i >= 0 {
		r, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Errorf("the name has %q, outside A-Z a-z 0-9 _ - .", r)
	}
	return nil
}

// hasKey reports whether key names a member of any object in the JSON
// value raw.
func hasKey(raw json.RawMessage, key string) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v[key]; ok {
				return true
			}
			for _, m := range v {
				if walk(m) {
					return true
				}
			}
		case []any:
			return slices.ContainsFunc(v, walk)
		}
		return false
	}
	return walk(v)
}
