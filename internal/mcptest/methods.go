package mcptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

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
