package mcpsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolpulse/toolpulse/results"
)

// verdict is why a step of a call failed: the code, a one-line message
// naming the JSON-RPC method (and the tool), and the exchange it was found
// in (-1 for none). It is also the cause a wire fault cancels the call
// with.
type verdict struct {
	code          results.Code
	message       string
	exchange      int
	sessionLost   bool
	retryAfter    time.Duration
	retryAfterSet bool
}

func (v *verdict) Error() string { return string(v.code) + ": " + v.message }

// JSON-RPC and MCP error codes the verdicts tell apart.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
	// The range JSON-RPC reserves for implementation-defined server errors,
	// and the codes MCP defines in it.
	rpcServerErrorLow         = -32099
	rpcServerErrorHigh        = -32000
	mcpHeaderMismatch         = -32020
	mcpMissingCapabilities    = -32021
	mcpUnsupportedVersion     = -32022
	mcpURLElicitationRequired = -32042
	rpcReservedLow            = -32768
)

// maxRetryAfter caps the wait a server's Retry-After asks for, whole
// seconds below 1<<62 nanoseconds.
const maxRetryAfter = time.Duration(1<<62) / time.Second * time.Second

// connectFailure judges a failed handshake. The SDK sends server/discover
// and, on any answer that is not a modern one, falls back to initialize:
// a legacy server's 400 to the discover is the normal way there and says
// nothing. What the discover met counts only when it was transient (the
// network, 408, 429, 5xx) and initialize failed too.
func (c *call) connectFailure(from int, err error) *verdict {
	if v := c.stopped("initialize"); v != nil {
		return v
	}
	disc, init := c.rec.last("server/discover", from), c.rec.last("initialize", from)
	switch {
	case init < 0:
		return c.stepFailure("server/discover", disc, err)
	case disc >= 0 && transient(c.rec.get(disc)):
		if v := c.judgeExchange("server/discover", disc); v != nil {
			return v
		}
	}
	if v := c.judgeExchange("initialize", init); v != nil {
		return v
	}
	if x := c.rec.get(init); x.response != nil && strings.Contains(err.Error(), "unsupported protocol version") {
		var m struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		_ = json.Unmarshal(x.response, &m)
		return &verdict{code: results.CodeMCPProtocol, exchange: init,
			message: fmt.Sprintf("initialize: no protocol version in common: the server answered %s, which this client does not speak", quote(m.Result.ProtocolVersion))}
	}
	if inited := c.rec.last("notifications/initialized", from); inited >= 0 {
		if v := c.judgeExchange("notifications/initialized", inited); v != nil {
			return v
		}
	}
	return c.sdkFailure("initialize", init, err)
}

// transient reports whether an exchange failed in a way another attempt
// might not.
func transient(x exchange) bool {
	if x.status == 0 {
		return x.err != nil
	}
	return results.TransientStatusCode(x.status) != ""
}

// stepFailure judges a step whose SDK call failed: a wire fault or the
// context first, then the step's exchange i, then the SDK's error.
func (c *call) stepFailure(method string, i int, err error) *verdict {
	if v := c.stopped(method); v != nil {
		return v
	}
	if v := c.judgeExchange(method, i); v != nil {
		return v
	}
	return c.sdkFailure(method, i, err)
}

// stopped is the verdict of a call whose context ended: the wire fault it
// was cancelled with, or the caller's deadline or cancellation.
func (c *call) stopped(method string) *verdict {
	var v *verdict
	if errors.As(context.Cause(c.op), &v) {
		return v
	}
	err := c.parent.Err()
	if err == nil {
		return nil
	}
	// The last request left without its response says where the time
	// went.
	i, phase := -1, "waiting for the response"
	xs := c.rec.snapshot()
	for j := len(xs) - 1; j >= 0; j-- {
		if xs[j].id != nil && xs[j].response == nil && xs[j].method != "" {
			i, method = j, xs[j].method
			if xs[j].status != 0 {
				phase = "reading the response"
			}
			break
		}
	}
	what := label(method, c.req.Tool)
	if errors.Is(err, context.Canceled) {
		return &verdict{code: results.CodeCanceled, exchange: i, message: "run canceled during " + what}
	}
	return &verdict{code: results.CodeTimeout, exchange: i, message: what + ": timed out " + phase}
}

// judgeExchange judges exchange i of a step for method from what the wire
// carried; nil when the wire shows nothing wrong.
func (c *call) judgeExchange(method string, i int) *verdict {
	if i < 0 {
		return nil
	}
	x := c.rec.get(i)
	what := label(method, c.req.Tool)
	if x.resumes {
		what += " (resumed with Last-Event-ID)"
	}
	switch {
	case x.tooLarge:
		return &verdict{code: results.CodeResponseTooLarge, exchange: i, message: fmt.Sprintf("%s: the answer exceeds max_body_bytes (%d)", what, c.req.MaxBodyBytes)}
	case x.status == 0 && x.err != nil:
		return &verdict{code: results.TransportCode(x.err), exchange: i, message: what + ": " + errorText(x.err)}
	case x.status/100 != 2 && !x.stdio:
		return c.judgeStatus(method, i, x)
	case x.err != nil && x.response == nil:
		return &verdict{code: results.TransportCode(x.err), exchange: i, message: what + ": reading the answer: " + errorText(x.err)}
	case x.response != nil:
		if code, msg, data, ok := rpcErrorOf(x.response); ok {
			return c.judgeRPCError(method, i, code, msg, data, "")
		}
	case x.contentType == "text/event-stream" && x.ended:
		return &verdict{code: results.CodeConnectionReset, exchange: i, message: what + ": the SSE stream ended before the response"}
	}
	return nil
}

// judgeStatus judges an HTTP status outside 2xx.
func (c *call) judgeStatus(method string, i int, x exchange) *verdict {
	what := label(method, c.req.Tool)
	status := fmt.Sprintf("HTTP %d", x.status)
	if t := http.StatusText(x.status); t != "" {
		status += " " + t
	}
	code, msg, data, isRPC := rpcErrorOf(x.body)
	// A server that forgot the session: 404, as the spec says, or 400 with
	// a JSON-RPC error about the session, as the TypeScript SDK's servers
	// answer.
	if x.hadSession && method != "initialize" &&
		(x.status == http.StatusNotFound || (x.status == http.StatusBadRequest && isRPC && strings.Contains(strings.ToLower(msg), "session"))) {
		return &verdict{code: results.CodeSessionLost, exchange: i, sessionLost: true, message: what + ": the server forgot the session (" + status + ")"}
	}
	if code := results.TransientStatusCode(x.status); code != "" {
		v := &verdict{code: code, exchange: i, message: what + ": " + status}
		if x.status == http.StatusTooManyRequests || x.status == http.StatusServiceUnavailable {
			v.retryAfter, v.retryAfterSet = results.ParseRetryAfter(x.header.Get("Retry-After"), c.rec.now())
			v.retryAfter = min(v.retryAfter, maxRetryAfter)
		}
		return v
	}
	if x.resumes {
		// The stream was cut before the response and the server does not
		// give it back: the response is lost, as on a stream cut without
		// an id.
		return &verdict{code: results.CodeConnectionReset, exchange: i,
			message: what + ": the SSE stream ended before the response, and resuming it with Last-Event-ID got " + status + rpcSays(isRPC, msg)}
	}
	switch {
	case x.status == http.StatusNotAcceptable || x.status == http.StatusUnsupportedMediaType:
		return &verdict{code: results.CodeMCPProtocol, exchange: i, message: what + ": " + status + ": the server refuses the transport's content types" + rpcSays(isRPC, msg)}
	case isRPC && (x.status == http.StatusBadRequest || x.status == http.StatusNotFound):
		return c.judgeRPCError(method, i, code, msg, data, status)
	case x.status == http.StatusBadRequest:
		return &verdict{code: results.CodeMCPProtocol, exchange: i, message: what + ": " + status + " with " + describeType(x.header.Get("Content-Type")) + ", not a JSON-RPC error"}
	}
	if x.status == http.StatusUnauthorized || x.status == http.StatusForbidden {
		return &verdict{code: results.CodeUnexpectedStatus, exchange: i,
			message: what + ": " + status + authSays(x.header.Values("WWW-Authenticate")) + rpcSays(isRPC, msg) + bodySays(isRPC, x)}
	}
	return &verdict{code: results.CodeUnexpectedStatus, exchange: i, message: what + ": " + status + rpcSays(isRPC, msg)}
}

// authSays is what a 401 or 403's WWW-Authenticate challenges ask for: a
// Bearer challenge with resource_metadata (RFC 9728) is a server that wants
// OAuth, and says where its protected resource metadata is; the error
// and scope it names say which token it would take.
func authSays(values []string) string {
	for _, ch := range results.ParseChallenges(values) {
		if !ch.Is("Bearer") {
			continue
		}
		p := ch.Params
		var parts []string
		if p["resource_metadata"] != "" {
			parts = append(parts, "the server wants an OAuth access token (WWW-Authenticate: Bearer; its protected resource metadata is at "+quote(clip(p["resource_metadata"], 200))+")")
		} else {
			parts = append(parts, "the server wants a bearer token (WWW-Authenticate: Bearer)")
		}
		if p["error"] != "" {
			parts = append(parts, "error "+quote(clip(p["error"], 60)))
		}
		if p["scope"] != "" {
			parts = append(parts, "scope "+quote(clip(p["scope"], 120)))
		}
		return ": " + strings.Join(parts, ", ")
	}
	return ""
}

// bodySays quotes the body of a refusal that is not a JSON-RPC error when
// it is text a person wrote (text/plain, or JSON), bounded: a gateway's
// 403 often names the fix ("the key lacks the docs:read scope").
func bodySays(isRPC bool, x exchange) string {
	if isRPC || len(bytes.TrimSpace(x.body)) == 0 {
		return ""
	}
	switch x.contentType {
	case "text/plain", "application/json", "application/problem+json", "":
		// Its start, where a person puts what to do, on one line.
		r := []rune(strings.Join(strings.Fields(strings.ToValidUTF8(string(x.body), "?")), " "))
		if len(r) > maxBodyQuote {
			r = append(r[:maxBodyQuote], '…')
		}
		return ": the body says " + quote(string(r))
	}
	return ""
}

// maxBodyQuote bounds, in characters, what a message quotes of a refusal's
// body.
const maxBodyQuote = 300

// clip cuts s to n bytes of valid UTF-8, marked "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

func rpcSays(isRPC bool, msg string) string {
	if !isRPC {
		return ""
	}
	return " (" + excerpt([]byte(msg)) + ")"
}

// judgeRPCError judges a JSON-RPC error the server answered the step for
// method with; status is the HTTP status that carried it when not 2xx.
func (c *call) judgeRPCError(method string, i int, code int, msg string, data json.RawMessage, status string) *verdict {
	what := label(method, c.req.Tool)
	text := fmt.Sprintf("%s: JSON-RPC error %d %s", what, code, excerpt([]byte(msg)))
	if status != "" {
		text = fmt.Sprintf("%s: %s with JSON-RPC error %d %s", what, status, code, excerpt([]byte(msg)))
	}
	v := &verdict{exchange: i, message: text}
	switch {
	case code == mcpURLElicitationRequired || code == mcpMissingCapabilities:
		v.code = results.CodeNeedsInput
		v.message += ": the server needs input a probe cannot give"
	case code == mcpUnsupportedVersion:
		v.code = results.CodeMCPProtocol
		v.message += ": no protocol version in common" + supportedVersions(data)
	case method == "tools/call" && code == rpcMethodNotFound,
		method == "tools/call" && code == rpcInvalidParams && unknownTool(msg, c.req.Tool):
		v.code = results.CodeToolMissing
		v.message += ": the server says the tool does not exist"
	case method == "tools/call" && code == rpcInvalidParams:
		v.code = results.CodeToolInput
		v.message = c.rejected(text, msg) + ": the server rejects the arguments"
	case method == "tools/list" && code == rpcMethodNotFound:
		v.code = results.CodeToolMissing
		v.message += ": the server lists no tools"
	case code == mcpHeaderMismatch, code == rpcParseError, code == rpcInvalidRequest,
		code == rpcMethodNotFound, code == rpcInvalidParams:
		v.code = results.CodeMCPProtocol
	case code == rpcInternalError, code >= rpcServerErrorLow && code <= rpcServerErrorHigh,
		code < rpcReservedLow || code > rpcServerErrorHigh:
		// A server-defined error, or an application's own code outside
		// the range JSON-RPC reserves: the server failed.
		v.code = results.CodeToolServerError
	default:
		// A code JSON-RPC reserves and defines no meaning for.
		v.code = results.CodeMCPProtocol
	}
	return v
}

// sdkFailure judges a step the wire shows nothing wrong with from the SDK's
// error: a JSON-RPC error it decoded, or what it could not make of the
// answer.
func (c *call) sdkFailure(method string, i int, err error) *verdict {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return c.judgeRPCError(method, i, int(rpcErr.Code), rpcErr.Message, rpcErr.Data, "")
	}
	what := label(method, c.req.Tool)
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	if x := c.rec.get(i); i >= 0 && x.response != nil {
		return &verdict{code: results.CodeMCPProtocol, exchange: i, message: what + ": the client cannot use the answer: " + firstLine(err.Error())}
	}
	return &verdict{code: results.CodeMCPProtocol, exchange: i, message: what + ": " + firstLine(err.Error())}
}

// judgeResult judges the CallToolResult of exchange i.
func (c *call) judgeResult(i int) *verdict {
	what := label("tools/call", c.req.Tool)
	var r struct {
		ResultType        string          `json:"resultType"`
		Content           []content       `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
		InputRequests     map[string]struct {
			Method string `json:"method"`
		} `json:"inputRequests"`
	}
	if err := json.Unmarshal(c.result, &r); err != nil {
		return &verdict{code: results.CodeMCPProtocol, exchange: i, message: what + ": the result is not a CallToolResult: " + firstLine(err.Error())}
	}
	// What rules see, from this one reading of the result rather than a
	// second (ResponseOf's).
	c.response, c.isError, c.parsed = responseFrom(r.Content, r.StructuredContent), r.IsError, true
	if r.ResultType == "input_required" || len(r.InputRequests) > 0 {
		var asked []string
		for _, ir := range r.InputRequests {
			if ir.Method != "" && !contains(asked, ir.Method) {
				asked = append(asked, ir.Method)
			}
		}
		sortStrings(asked)
		asking := "input"
		if len(asked) > 0 {
			asking = strings.Join(asked, ", ")
		}
		return &verdict{code: results.CodeNeedsInput, exchange: i,
			message: what + ": the server answered input_required, asking for " + asking + ", which a probe cannot give"}
	}
	if r.IsError {
		text := firstText(r.Content)
		switch {
		case unknownTool(text, c.req.Tool):
			return &verdict{code: results.CodeToolMissing, exchange: i, message: what + ": the result says the tool does not exist: " + excerpt([]byte(text))}
		case inputUnsupported(text):
			return &verdict{code: results.CodeNeedsInput, exchange: i, message: what + ": the result says the tool needs input the client does not offer, which a probe cannot give: " + excerpt([]byte(text))}
		case invalidInput(text):
			return &verdict{code: results.CodeToolInput, exchange: i, message: what + ": the result rejects the arguments: " + c.inputExcerpt(text)}
		}
		return &verdict{code: results.CodeToolError, exchange: i, message: what + ": the result has isError: true: " + excerpt([]byte(text))}
	}
	if c.def.hasOutputSchema() {
		if isNull(r.StructuredContent) {
			return &verdict{code: results.CodeOutputSchema, exchange: i, message: what + ": the tool declares an outputSchema and the result has no structuredContent"}
		}
		if err := validateOutput(c.req.Schemas, c.def.OutputSchema, r.StructuredContent); err != nil {
			return &verdict{code: results.CodeOutputSchema, exchange: i, message: what + ": structuredContent does not match the outputSchema: " + err.Error()}
		}
	}
	return nil
}

// unknownTool reports whether a server's text says that the tool does not
// exist, in the words servers use: "Unknown tool: x" (the spec's example),
// "unknown tool \"x\"" (the go-sdk), "Tool x not found" (the TypeScript
// SDK), "no such tool".
func unknownTool(text, tool string) bool {
	t := strings.ToLower(text)
	if strings.Contains(t, "unknown tool") || strings.Contains(t, "no such tool") || strings.Contains(t, "tool not found") {
		return true
	}
	re := regexp.MustCompile(`(?i)\btool\s+["'` + "`" + `]?` + regexp.QuoteMeta(tool) + `["'` + "`" + `]?\s+(not found|does not exist|is unknown|is not available|not available)`)
	return re.MatchString(text)
}

// invalidInput reports whether an isError text says the arguments were
// rejected: the TypeScript SDK's "MCP error -32602: Input validation error:
// …", the go-sdk's `validating "arguments": …`, and their kin.
func invalidInput(text string) bool {
	t := strings.ToLower(text)
	return strings.Contains(t, "input validation error") || strings.Contains(t, "mcp error -32602") ||
		strings.Contains(t, "invalid arguments") || strings.HasPrefix(strings.TrimSpace(t), `validating "arguments"`)
}

// inputUnsupported reports whether an isError text says the tool needed
// a client capability a probe does not declare: the TypeScript SDK's
// "Client does not support form elicitation." (elicitInput) and its kin
// for sampling and roots.
func inputUnsupported(text string) bool {
	t := strings.ToLower(text)
	if !strings.Contains(t, "client does not support") {
		return false
	}
	return strings.Contains(t, "elicitation") || strings.Contains(t, "sampling") || strings.Contains(t, "roots")
}

// rejected rewrites the message text of a JSON-RPC error that rejects the
// arguments so that its quote of msg is cut around the argument it names.
func (c *call) rejected(text, msg string) string {
	return strings.Replace(text, excerpt([]byte(msg)), c.inputExcerpt(msg), 1)
}

// inputExcerpt quotes a server's refusal of the arguments on one line,
// at most about maxExcerpt characters: whole when it fits; otherwise its
// start and the stretch around the last mention of an argument's name (one
// the call sent or the tool's inputSchema declares), which is where
// validators say what is wrong (`missing properties: ["location"]`,
// `"path": [ "location" ]`, `/properties/units: enum: …`); without such a
// mention, its start and end.
func (c *call) inputExcerpt(text string) string {
	r := []rune(strings.Join(strings.Fields(strings.ToValidUTF8(text, "?")), " "))
	if len(r) <= maxExcerpt {
		return excerpt([]byte(text))
	}
	names := c.def.inputNames()
	for name := range c.req.Arguments {
		names = append(names, name)
	}
	at := -1
	for _, name := range names {
		if i := lastWord(r, []rune(name)); i > at {
			at = i
		}
	}
	if at < 0 {
		return excerpt([]byte(text))
	}
	const head, before = maxExcerpt / 4, maxExcerpt / 4
	start := max(at-before, head)
	end := min(start+maxExcerpt-head, len(r))
	out := string(r[:head]) + "…" + string(r[start:end])
	if start == head {
		out = string(r[:end])
	}
	if end < len(r) {
		out += "…"
	}
	return fmt.Sprintf("%q", out)
}

// lastWord is the rune index of the last occurrence of name in r that is a
// whole word (not inside a longer identifier), or -1.
func lastWord(r, name []rune) int {
	if len(name) == 0 {
		return -1
	}
	isWord := func(c rune) bool {
		return c == '_' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
	}
	for i := len(r) - len(name); i >= 0; i-- {
		if string(r[i:i+len(name)]) != string(name) {
			continue
		}
		if (i > 0 && isWord(r[i-1])) || (i+len(name) < len(r) && isWord(r[i+len(name)])) {
			continue
		}
		return i
	}
	return -1
}

// rpcErrorOf decodes a JSON-RPC error response.
func rpcErrorOf(body []byte) (code int, msg string, data json.RawMessage, ok bool) {
	var m struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &m) != nil || m.JSONRPC != "2.0" || m.Error == nil {
		return 0, "", nil, false
	}
	return m.Error.Code, m.Error.Message, m.Error.Data, true
}

// supportedVersions names the versions an UnsupportedProtocolVersionError
// lists.
func supportedVersions(data json.RawMessage) string {
	var d struct {
		Supported []string `json:"supported"`
	}
	if json.Unmarshal(data, &d) != nil || len(d.Supported) == 0 {
		return ""
	}
	return " (the server speaks " + strings.Join(d.Supported, ", ") + ")"
}

// errorText describes a transport error without the request's URL.
func errorText(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return firstLine(err.Error())
}

// firstLine is s up to its first newline, cut at 300 bytes and marked "…".
// The text may carry a server's raw bytes: the cut also drops invalid UTF-8
// from what it keeps, which results.ClipBytes would not.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}
