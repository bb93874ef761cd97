package mcpsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/results"
)

// maxPages bounds how many tools/list pages a call follows (SPEC §10).
const maxPages = 10

// Request is one call of one MCP tool: the probe's mcp: settings, resolved.
type Request struct {
	// URL is the server's Streamable HTTP endpoint. Exactly one of URL and
	// Command is set.
	URL string
	// Command, when set, starts a stdio server for each session of the
	// call and ends it with the session (SPEC §10.1).
	Command *Command
	// Header is added to every HTTP request of the session (Authorization);
	// a header the transport sets itself (Mcp-Session-Id,
	// MCP-Protocol-Version, Content-Type, Accept) is never replaced. Values
	// are secrets: no message quotes them.
	Header http.Header
	// Tool is the tool's name as tools/list gives it.
	Tool string
	// Arguments are the tools/call arguments, the probe's fixture; nil
	// sends {}.
	Arguments map[string]any
	// AllowDestructive lets the call go to a tool whose annotations say
	// destructiveHint: true.
	AllowDestructive bool
	// MaxBodyBytes bounds each answer of the session; a larger one ends the
	// call as response_too_large. It must be positive.
	MaxBodyBytes int64
	// HTTPClient carries the TLS settings and the connection pool; its
	// Transport (http.DefaultTransport when nil) sends every exchange. The
	// call's deadline is the context's. Only a URL's call needs one.
	HTTPClient *http.Client
	// ClientName and ClientVersion are the clientInfo the session
	// announces; "toolpulse" and "dev" when empty.
	ClientName, ClientVersion string
	// Now is the clock exchanges are timed by; nil is time.Now.
	Now func() time.Time
	// Schemas keeps compiled outputSchemas from one call to the next; nil
	// compiles the tool's schema on every call.
	Schemas *Schemas
	// Watch names the listings besides tools/list the call reads, once the
	// tool is listed, for definition drift (watch.go).
	Watch Watch
	// Trace, unless it is the zero Trace, marks every HTTP request of the
	// session with a span of it: traceparent and tracestate headers, and
	// the same in a request's params._meta (SPEC §10.1). On a stdio
	// session, every request and notification carries them in _meta.
	Trace results.Trace
}

// Answer is what one Call got: a verdict, what a consumer's rules see, and
// every HTTP exchange of the session.
type Answer struct {
	// Err is why the call has no usable answer; nil when the tool answered
	// a result the rules may judge. Its code is one of SPEC §1 and §10. A
	// caller whose probe says is_error: unavailable counts
	// results.CodeToolError (IsError true) as unavailable.
	Err *results.Error
	// RetryAfter, when RetryAfterSet, is how long the server asked to be
	// left alone (Retry-After on the 429 or 503 that ended the call).
	RetryAfter    time.Duration
	RetryAfterSet bool

	// ProtocolVersion is the version the session negotiated, "" when the
	// handshake failed.
	ProtocolVersion string
	// Reinitialized is set when the server forgot the session once and the
	// call went on in a second one.
	Reinitialized bool

	// Tool is the tool's entry in tools/list as the server sent it, raw:
	// name, description, inputSchema, outputSchema, annotations. It is set
	// whenever the listing showed the tool, even when the call then failed,
	// so that definition drift can be judged on every run that got that
	// far. What rules see as tool is this value.
	Tool json.RawMessage
	// Server is what the server said of itself in the last handshake
	// (initialize, or server/discover): its serverInfo and instructions.
	// Zero when no handshake succeeded.
	Server ServerInfo
	// Prompts and Resources are the entries of prompts/list and
	// resources/list, every page, raw, when Request.Watch asks for them:
	// nil when the listing was not read (not watched, or the call ended
	// before it), empty when the server lists none or declares no such
	// capability.
	Prompts, Resources []json.RawMessage
	// Result is the tools/call result as the server sent it, raw (a
	// CallToolResult: content, structuredContent, isError); what rules see
	// as result. Nil when no result arrived.
	Result json.RawMessage
	// Response is what rules see as response: structuredContent when the
	// result has one; otherwise the first text content item, as the JSON
	// value it holds when it holds one and as a JSON string otherwise;
	// null when the result has neither. Nil when no result arrived.
	Response json.RawMessage
	// IsError is the result's isError.
	IsError bool
	// Status and Headers are those of the tools/call exchange (header names
	// lower-case, first value); 0 and nil when it did not happen, except
	// that Status is then the one of the exchange the call failed at (a
	// 401 to initialize), when that one got a response.
	Status  int
	Headers map[string]string

	// Exchanges are the session's HTTP exchanges, in the order they
	// started.
	Exchanges []Exchange
}

// Exchange is one HTTP exchange of a call, as the attempt table shows it.
type Exchange struct {
	// Method is the JSON-RPC method of the request ("initialize",
	// "tools/call"…), "response" for the client's answer to a server
	// request, "GET tools/call (resumed)" for a GET that resumed a
	// request's stream with Last-Event-ID, "GET elicitation/create
	// (standalone stream)" for the standalone stream when a server request
	// on it ended the call, or the HTTP method of a request without a body
	// (DELETE).
	Method string
	// Session is 1, or 2 for the exchanges after a re-initialization.
	Session       int
	StartedAt     time.Time
	Duration      time.Duration // until the response arrived, or the exchange failed
	Status        int           // 0 when no response arrived
	RequestBytes  int64
	ResponseBytes int64
	// Code and Message are Answer.Err's on the exchange it was found in.
	// On the others, Code is session_lost where the server forgot the
	// first session of a call that went on in a second one, and otherwise
	// ""; Message then says why the exchange got no answer, "" when it got
	// one.
	Code    results.Code
	Message string
}

// Call makes one probe session against req.URL: a fresh client session
// (the SDK tries server/discover, then falls back to initialize), tools/list
// following nextCursor (at most 10 pages) until the tool shows, tools/call
// with req.Arguments, and the session's close. A session the server forgets
// is re-initialized once. Every exchange is bounded by ctx and every
// answer by req.MaxBodyBytes; Call returns when ctx ends, whatever the
// server does.
//
// Call's error is for the program: a Request it cannot use. Whatever the
// server did is in the Answer, which is never nil when the error is nil.
func Call(ctx context.Context, req Request) (*Answer, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	c := newCall(ctx, req)
	defer c.end()
	c.run()
	return c.answer(), nil
}

func (r Request) check() error {
	if r.Command != nil {
		return r.checkCommand()
	}
	switch {
	case r.URL == "":
		return errors.New("mcpsdk: Request.URL is empty")
	case r.Tool == "":
		return errors.New("mcpsdk: Request.Tool is empty")
	case r.MaxBodyBytes <= 0:
		return errors.New("mcpsdk: Request.MaxBodyBytes must be positive")
	case r.HTTPClient == nil:
		return errors.New("mcpsdk: Request.HTTPClient is nil")
	}
	if _, err := url.Parse(r.URL); err != nil {
		return errors.New("mcpsdk: Request.URL does not parse")
	}
	return nil
}

// call is the state of one Call.
type call struct {
	req    Request
	parent context.Context
	life   context.Context // every HTTP request is bound to it; ends with Call
	endAll context.CancelFunc
	op     context.Context // the SDK's operations; a wire fault cancels it
	stop   context.CancelCauseFunc
	rec    *recorder
	client *mcp.Client
	hc     *http.Client

	session int
	// What the call found.
	version       string
	reinitialized bool
	tool          json.RawMessage
	def           toolDef
	server        ServerInfo
	prompts       []json.RawMessage // watch.go; nil until read
	resources     []json.RawMessage
	result        json.RawMessage
	// response and isError are what rules see of result, once judgeResult
	// has read it (parsed); answer reads them from result otherwise.
	response json.RawMessage
	isError  bool
	parsed   bool
	callX    int // the tools/call exchange, -1 before it
	failure  *verdict
	// stdio is the server of the last session, for a call with a Command.
	stdio *stdioServer
	// lost is why the first session ended when the server forgot it and
	// the call went on in a second one.
	lost *verdict

	// listing, when set, makes the session a ListTools one: every page of
	// tools/list, no tools/call.
	listing *listing
	// drops hears the SDK's log, which is where it says why it dropped a
	// tool from a listing.
	drops *dropLog
}

func newCall(ctx context.Context, req Request) *call {
	now := req.Now
	if now == nil {
		now = time.Now
	}
	life, endAll := context.WithCancel(ctx)
	op, stop := context.WithCancelCause(life)
	c := &call{req: req, parent: ctx, life: life, endAll: endAll, op: op, stop: stop, callX: -1, drops: &dropLog{}}
	c.rec = &recorder{now: now, limit: req.MaxBodyBytes, stop: stop}

	if req.HTTPClient != nil {
		header := req.Header.Clone()
		host := header.Get("Host")
		header.Del("Host")
		next := req.HTTPClient.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		hc := *req.HTTPClient
		hc.Transport = &wireTripper{next: next, header: header, host: host, life: life, rec: c.rec, tool: req.Tool}
		if req.Trace.On() {
			hc.Transport = &traceTripper{next: hc.Transport, trace: req.Trace}
		}
		c.hc = &hc
	}

	name, version := req.ClientName, req.ClientVersion
	if name == "" {
		name = "toolpulse"
	}
	if version == "" {
		version = "dev"
	}
	c.client = mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, &mcp.ClientOptions{
		// A probe offers no roots, sampling or elicitation: a server that
		// needs them gets needs_input, not an answer made up for it.
		Capabilities: &mcp.ClientCapabilities{},
		// An input_required result comes back as it is, to be judged,
		// instead of being answered from handlers a probe does not have.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		Logger:         slog.New(c.drops),
	})
	return c
}

func (c *call) end() {
	c.stop(nil)
	c.endAll()
}

// run makes the session, and a second one if the server forgets the first.
func (c *call) run() {
	for c.session = 1; c.session <= 2; c.session++ {
		c.rec.setSession(c.session)
		v := c.once()
		if v == nil {
			c.failure = nil
			return
		}
		if v.sessionLost && c.session == 1 {
			c.reinitialized, c.lost = true, v
			continue
		}
		if v.sessionLost {
			v.message += "; again after one re-initialization"
		} else if c.lost != nil {
			v.message += "; in a second session, after " + c.lost.message
		}
		c.failure = v
		return
	}
}

// once makes one session: connect, list (unless an earlier session found
// the tool), call, close.
func (c *call) once() *verdict {
	from := c.rec.count()
	var t mcp.Transport
	if c.req.Command != nil {
		t = c.stdioTransport()
	} else {
		ht := Transport(c.req.URL, c.hc)
		ht.MaxEventSize = maxEventSize(c.req.MaxBodyBytes)
		// A server may ask for input on the standalone stream, out of band
		// of the call (the TypeScript SDK's elicitInput); a probe listens
		// there so that such a call ends as needs_input, not a timeout. A
		// listing calls nothing.
		ht.DisableStandaloneSSE = c.listing != nil
		t = ht
	}
	cs, err := c.client.Connect(c.op, t, nil)
	if err != nil {
		return c.connectFailure(from, err)
	}
	defer func() { _ = cs.Close() }()
	if init := cs.InitializeResult(); init != nil {
		c.version = init.ProtocolVersion
	}
	c.server = serverOf(cs)
	if c.listing != nil {
		return c.listAll(cs)
	}
	if c.tool == nil {
		if v := c.list(cs); v != nil {
			return v
		}
	}
	if v := c.watch(cs); v != nil {
		return v
	}
	if c.def.destructive() && !c.req.AllowDestructive {
		return &verdict{code: results.CodeDestructiveTool, exchange: -1,
			message: "tools/call " + quote(c.req.Tool) + " not made: tools/list annotates the tool destructiveHint: true and the probe does not set allow_destructive"}
	}
	if c.def.taskSupport() == "required" {
		// The server refuses a plain call of such a tool (the TypeScript
		// SDK with "method not found"), which would read as a tool that
		// does not exist.
		return &verdict{code: results.CodeNeedsInput, exchange: -1,
			message: "tools/call " + quote(c.req.Tool) + " not made: tools/list says execution.taskSupport: \"required\" (the tool runs only as a task, which the client must ask for), and a probe makes plain calls"}
	}
	return c.call(cs)
}

// list pages through tools/list until the tool shows.
func (c *call) list(cs *mcp.ClientSession) *verdict {
	cursor, seen := "", 0
	for page := 1; page <= maxPages; page++ {
		from := c.rec.count()
		_, err := cs.ListTools(c.op, &mcp.ListToolsParams{Cursor: cursor})
		i := c.rec.last("tools/list", from)
		if err != nil {
			return c.stepFailure("tools/list", i, err)
		}
		x := c.rec.get(i)
		p, perr := parsePage(x.response)
		if perr != nil {
			return &verdict{code: results.CodeMCPProtocol, exchange: i, message: "tools/list: " + perr.Error()}
		}
		seen += len(p.tools)
		for _, raw := range p.tools {
			def, ok := parseTool(raw)
			if ok && def.Name == c.req.Tool {
				c.tool, c.def = raw, def
				return nil
			}
		}
		if p.next == "" {
			return &verdict{code: results.CodeToolMissing, exchange: i,
				message: "tools/list: no tool " + quote(c.req.Tool) + " among the " + plural(seen, "tool") + " the server lists"}
		}
		cursor = p.next
	}
	return &verdict{code: results.CodeToolMissing, exchange: c.rec.last("tools/list", 0),
		message: "tools/list: no tool " + quote(c.req.Tool) + " among the " + plural(seen, "tool") + " of the first 10 pages; the listing goes on"}
}

// call makes the tools/call and judges its result.
func (c *call) call(cs *mcp.ClientSession) *verdict {
	args := c.req.Arguments
	if args == nil {
		args = map[string]any{}
	}
	from := c.rec.count()
	_, err := cs.CallTool(c.op, &mcp.CallToolParams{Name: c.req.Tool, Arguments: args})
	i := c.rec.last("tools/call", from)
	c.callX = i
	if err != nil {
		if v := c.stepFailure("tools/call", i, err); v != nil {
			return v
		}
	}
	x := c.rec.get(i)
	if x.response == nil || isNull(x.result) || !isObject(x.result) {
		return &verdict{code: results.CodeMCPProtocol, exchange: i, message: "tools/call " + quote(c.req.Tool) + ": the answer has no CallToolResult"}
	}
	c.result = x.result
	return c.judgeResult(i)
}

// answer assembles what the call got.
func (c *call) answer() *Answer {
	a := &Answer{ProtocolVersion: c.version, Reinitialized: c.reinitialized, Tool: c.tool, Result: c.result,
		Server: c.server, Prompts: c.prompts, Resources: c.resources}
	xs := c.rec.snapshot()
	switch {
	case c.callX >= 0 && c.callX < len(xs):
		a.Status, a.Headers = xs[c.callX].status, lowerHeaders(xs[c.callX].header)
	case c.failure != nil && c.failure.exchange >= 0 && c.failure.exchange < len(xs):
		// The call failed before tools/call: the status it failed at (a
		// 401 to initialize) is the run's.
		a.Status = xs[c.failure.exchange].status
	}
	switch {
	case c.parsed:
		a.Response, a.IsError = c.response, c.isError
	case c.result != nil:
		a.Response, a.IsError = ResponseOf(c.result)
	}
	if v := c.failure; v != nil {
		a.Err = results.NewError(v.code, "%s", c.failureText(v))
		a.RetryAfter, a.RetryAfterSet = v.retryAfter, v.retryAfterSet
	}
	for i, x := range xs {
		if x.standalone && (c.failure == nil || c.failure.exchange != i) {
			// The stream a probe only listens on is a row when it
			// carried what ended the call.
			continue
		}
		e := Exchange{
			Method:        x.method,
			Session:       x.session,
			StartedAt:     x.started,
			Duration:      x.duration,
			Status:        x.status,
			RequestBytes:  x.reqBytes,
			ResponseBytes: x.bytes,
		}
		if !x.done {
			e.Duration = c.rec.now().Sub(x.started)
		}
		switch {
		case x.stdio:
			if e.Method == "" {
				e.Method = "response"
			}
		case x.standalone:
			e.Method = "GET " + x.method + " (standalone stream)"
		case x.resumes:
			e.Method = "GET " + x.method + " (resumed)"
		case x.httpMethod != http.MethodPost:
			e.Method = x.httpMethod
		case e.Method == "":
			e.Method = "response"
		}
		switch {
		case a.Err != nil && c.failure.exchange == i:
			e.Code, e.Message = a.Err.Code, a.Err.Message
		case c.lost != nil && c.lost.exchange == i:
			e.Code, e.Message = c.lost.code, c.scrub(c.lost.message)+"; the call went on in a new session"
		default:
			e.Message = c.scrub(unanswered(x, c.req.Tool))
		}
		a.Exchanges = append(a.Exchanges, e)
	}
	return a
}

// unanswered says why exchange x, which no verdict names, got no answer;
// "" when it got one. A request (one with an id) was answered when its
// response arrived, anything else when an HTTP response did.
func unanswered(x exchange, tool string) string {
	what := label(x.method, tool)
	if x.stdio {
		// A stdio exchange has no HTTP status: only a request still
		// waiting for its response went unanswered.
		if x.id != nil && x.response == nil {
			if x.err != nil {
				return what + ": no response: " + errorText(x.err)
			}
			return what + ": no response before the call ended"
		}
		return ""
	}
	if x.httpMethod != http.MethodPost {
		what = x.httpMethod
		if x.resumes {
			what = "GET " + label(x.method, tool)
		}
	}
	switch {
	case x.resumedBy >= 0:
		return fmt.Sprintf("%s: no response: the server closed the SSE stream after event id %s, and the client resumed it", what, excerpt([]byte(x.lastEventID)))
	case x.status == 0 && x.err != nil:
		return what + ": no response: " + errorText(x.err)
	case x.status == 0:
		return what + ": no response before the call ended"
	case x.id != nil && x.response == nil && x.status/100 == 2:
		return what + ": no response to the request before the call ended"
	}
	return ""
}

// scrub removes the endpoint's credentials from a message: the SDK's error
// texts quote the URL.
func (c *call) scrub(s string) string {
	u, err := url.Parse(c.req.URL)
	if err != nil || u.User == nil {
		return s
	}
	s = strings.ReplaceAll(s, c.req.URL, u.Redacted())
	if p, ok := u.User.Password(); ok && p != "" {
		s = strings.ReplaceAll(s, p, "xxxxx")
	}
	return s
}

// maxEventSize is the SDK's bound on one SSE event: above the body limit,
// so that the limit, which the wire enforces, is the one a call meets.
func maxEventSize(limit int64) int {
	if limit >= math.MaxInt32 {
		return -1
	}
	return int(limit) + 1
}

// lowerHeaders is a response's headers as rules see them: lower-case names,
// first value.
func lowerHeaders(h http.Header) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			out[strings.ToLower(k)] = v[0]
		}
	}
	return out
}
