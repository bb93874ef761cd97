package mcpsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// The wire is watched from below the SDK: every HTTP exchange the SDK makes
// goes through a wireTripper, which adds the probe's headers, binds the
// request to the call, records the exchange and reads the answer as it
// passes to the SDK. The SDK hides what a probe must judge (it drops tools
// it finds invalid, ignores a response to an unknown id and waits, reports
// many failures as text), so the verdicts come from what the wire carried;
// the SDK's errors only fill gaps.
//
// A fault the wire shows for certain (an answer that is not JSON-RPC, a
// response to another id, a server asking for input, a body over the
// limit) ends the whole call at once through the recorder's stop function,
// with the fault as the context's cause: the SDK would otherwise wait for
// a response that never comes, or answer the server on the probe's behalf.

// exchange is one HTTP exchange as the wire carried it.
type exchange struct {
	httpMethod string
	stdio      bool            // a message on a stdio server's pipes, or its start or stop: no HTTP
	method     string          // the JSON-RPC method; "" for a response the client sent, DELETE, GET
	id         json.RawMessage // the request's id; nil for a notification or a response
	session    int             // which session of the call: 1, or 2 after a re-initialization
	hadSession bool            // the request carried Mcp-Session-Id
	started    time.Time
	duration   time.Duration
	done       bool
	reqBytes   int64

	status      int
	header      http.Header
	contentType string // the media type alone, lower-case
	bytes       int64  // response body bytes read

	err      error // the transport's, or reading the body's
	tooLarge bool
	ended    bool // the body was read to its end

	// body is what was kept of a body that is not an SSE stream (at most
	// the limit); response is the JSON-RPC response to the request, raw,
	// when one arrived, and result its result member, raw (nil without
	// one).
	body     []byte
	response json.RawMessage
	result   json.RawMessage

	// lastEventID and retry are the last id and retry fields of an SSE
	// stream (retry when retrySet): what a client resumes a stream cut
	// before its response with (a GET carrying Last-Event-ID, after
	// retry), as servers that poll (MCP 2025-11-25) ask it to.
	lastEventID string
	retry       time.Duration
	retrySet    bool
	// resumes is set on a GET that resumes the stream of exchange
	// resumeOf; it carries that exchange's method and id, and its stream
	// is judged as that request's answer. resumedBy is the GET that
	// resumed this exchange's stream, -1 for none.
	resumes   bool
	resumeOf  int
	resumedBy int
	// standalone is set on the GET of the session's standalone SSE
	// stream; method then names the server request for input it carried.
	standalone bool
}

// recorder holds the exchanges of one call.
type recorder struct {
	now   func() time.Time
	limit int64
	stop  context.CancelCauseFunc // ends the call with a wire fault

	mu        sync.Mutex
	exchanges []*exchange
	session   int
}

// setSession numbers the exchanges that follow.
func (r *recorder) setSession(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.session = n
}

// count is how many exchanges have started.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.exchanges)
}

// last returns the index of the last exchange for the JSON-RPC method
// among those from index from on, or -1.
func (r *recorder) last(method string, from int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.exchanges) - 1; i >= from && i >= 0; i-- {
		if r.exchanges[i].method == method && (r.exchanges[i].httpMethod == http.MethodPost || r.exchanges[i].stdio) {
			// A request whose stream was resumed got its answer, if any,
			// on the last GET that resumed it.
			for r.exchanges[i].resumedBy >= 0 {
				i = r.exchanges[i].resumedBy
			}
			return i
		}
	}
	return -1
}

// resumable returns the index of the last exchange whose SSE stream ended
// at event id without the response to its request, or -1.
func (r *recorder) resumable(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.exchanges) - 1; i >= 0; i-- {
		x := r.exchanges[i]
		if x.lastEventID == id && x.id != nil && x.response == nil && x.resumedBy < 0 {
			return i
		}
	}
	return -1
}

// get returns a copy of exchange i; the zero exchange for -1.
func (r *recorder) get(i int) exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i < 0 || i >= len(r.exchanges) {
		return exchange{}
	}
	return *r.exchanges[i]
}

// add records a new exchange and returns its index.
func (r *recorder) add(x *exchange) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	x.session = r.session
	r.exchanges = append(r.exchanges, x)
	return len(r.exchanges) - 1
}

// pending is the JSON-RPC method of the last request still waiting for
// its response, "" for none.
func (r *recorder) pending() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.exchanges) - 1; i >= 0; i-- {
		if x := r.exchanges[i]; x.id != nil && x.response == nil && x.httpMethod == http.MethodPost {
			return x.method
		}
	}
	return ""
}

// resume marks exchange i, a GET with Last-Event-ID id, as the
// resumption of the stream that ended at that id: it answers the same
// request.
func (r *recorder) resume(i int, id string) {
	j := r.resumable(id)
	if j < 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	x, from := r.exchanges[i], r.exchanges[j]
	x.method, x.id, x.resumes, x.resumeOf = from.method, from.id, true, j
	from.resumedBy = i
}

// update runs f on exchange i under the lock.
func (r *recorder) update(i int, f func(x *exchange)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.exchanges[i])
}

// finish ends exchange i's clock, once.
func (r *recorder) finish(i int) {
	now := r.now()
	r.update(i, func(x *exchange) {
		if !x.done {
			x.done, x.duration = true, now.Sub(x.started)
		}
	})
}

// snapshot returns copies of the exchanges recorded so far.
func (r *recorder) snapshot() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]exchange, len(r.exchanges))
	for i, x := range r.exchanges {
		out[i] = *x
	}
	return out
}

// fault stops the call with a verdict drawn from exchange i.
func (r *recorder) fault(i int, code results.Code, format string, args ...any) {
	r.stop(&verdict{code: code, message: fmt.Sprintf(format, args...), exchange: i})
}

// wireTripper is the RoundTripper the SDK's HTTP client uses.
type wireTripper struct {
	next   http.RoundTripper
	header http.Header
	host   string          // a Host header, which net/http takes from Request.Host
	life   context.Context // the call's: no request outlives it
	rec    *recorder
	tool   string // for messages
}

func (t *wireTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.life.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(req.Context())
	stopBinding := context.AfterFunc(t.life, cancel)
	release := func() { stopBinding(); cancel() }
	req = req.Clone(ctx)
	for k, vs := range t.header {
		// The transport's own headers (the session, the protocol version)
		// are the protocol's; a configured header never replaces them.
		if len(req.Header.Values(k)) == 0 {
			req.Header[k] = vs
		}
	}
	if t.host != "" {
		req.Host = t.host
	}

	x := &exchange{httpMethod: req.Method, hadSession: req.Header.Get("Mcp-Session-Id") != "", resumedBy: -1}
	if req.Method == http.MethodPost {
		x.method, x.id, x.reqBytes = requestMessage(req)
	}
	x.started = t.rec.now()
	i := t.rec.add(x)
	if id := req.Header.Get("Last-Event-ID"); req.Method == http.MethodGet && id != "" {
		t.rec.resume(i, id)
	}
	standalone := req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") == ""
	if standalone {
		t.rec.update(i, func(x *exchange) { x.standalone = true })
		return t.standalone(req, i, cancel, release)
	}

	resp, err := t.next.RoundTrip(req)
	if err != nil {
		t.rec.update(i, func(x *exchange) { x.err = err })
		t.rec.finish(i)
		release()
		return nil, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	ct = strings.ToLower(ct)
	call := (x.httpMethod == http.MethodPost || x.resumes) && x.id != nil
	t.rec.update(i, func(x *exchange) {
		x.status, x.header, x.contentType = resp.StatusCode, resp.Header.Clone(), ct
	})
	if resp.ContentLength > t.rec.limit {
		resp.Body.Close()
		release()
		t.rec.update(i, func(x *exchange) { x.tooLarge = true })
		t.rec.finish(i)
		t.rec.fault(i, results.CodeResponseTooLarge, "%s: Content-Length %d exceeds max_body_bytes (%d)", label(x.method, t.tool), resp.ContentLength, t.rec.limit)
		return nil, errTooLarge
	}
	b := &wireBody{rc: resp.Body, t: t, i: i, release: release, method: x.method, id: x.id}
	switch {
	case !call:
		b.kind = bodyIgnored
	case resp.StatusCode/100 == 2 && ct == "text/event-stream":
		b.kind = bodySSE
	case resp.StatusCode/100 == 2 && ct != "application/json":
		// The SDK refuses it too; the verdict says why in the protocol's
		// terms.
		t.rec.fault(i, results.CodeMCPProtocol, "%s: HTTP %d with %s, neither application/json nor text/event-stream", label(x.method, t.tool), resp.StatusCode, describeType(resp.Header.Get("Content-Type")))
		b.kind = bodyKept
	default:
		b.kind = bodyKept
	}
	resp.Body = b
	return resp, nil
}

// standaloneWait bounds how long the standalone stream's GET may take to
// answer: the SDK opens it inside the handshake and waits for it there.
const standaloneWait = time.Second

// standalone makes the GET of the session's standalone SSE stream, the
// one where a server sends requests unrelated to a call (an elicitation a
// tool asks for out of band). The stream is optional and a probe only
// listens on it, so nothing it does may fail the session: a GET that
// fails, answers late or answers anything but a 2xx event stream reaches
// the SDK as the 405 of a server without one, and a stream the server
// ends stays open to the SDK until the call ends, so that it does not
// reconnect. A server request for input on it ends the call as
// needs_input.
func (t *wireTripper) standalone(req *http.Request, i int, cancel context.CancelFunc, release func()) (*http.Response, error) {
	slow := time.AfterFunc(standaloneWait, cancel)
	resp, err := t.next.RoundTrip(req)
	late := !slow.Stop()
	if err == nil && (late || resp.StatusCode/100 != 2 || !strings.EqualFold(baseType(resp.Header.Get("Content-Type")), "text/event-stream")) {
		t.rec.update(i, func(x *exchange) { x.status, x.header = resp.StatusCode, resp.Header.Clone() })
		resp.Body.Close()
	}
	if err != nil || late || resp.StatusCode/100 != 2 || !strings.EqualFold(baseType(resp.Header.Get("Content-Type")), "text/event-stream") {
		if err != nil {
			t.rec.update(i, func(x *exchange) { x.err = err })
		}
		t.rec.finish(i)
		release()
		return &http.Response{Status: "405 Method Not Allowed", StatusCode: http.StatusMethodNotAllowed, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	}
	t.rec.update(i, func(x *exchange) {
		x.status, x.header, x.contentType = resp.StatusCode, resp.Header.Clone(), "text/event-stream"
	})
	resp.Body = &wireBody{rc: resp.Body, t: t, i: i, release: release, kind: bodyStandalone, ctx: req.Context()}
	return resp, nil
}

// baseType is a Content-Type's media type alone.
func baseType(ct string) string {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt
}

// errTooLarge is what the SDK gets for a body over the limit; the verdict
// is the recorder's.
var errTooLarge = errors.New("response exceeds max_body_bytes")

// requestMessage reads the JSON-RPC method and id of a POST's body. The
// Mcp-Method header of the 2026-07-28 transport names the method too, but
// the body is the truth the server reads.
func requestMessage(req *http.Request) (method string, id json.RawMessage, size int64) {
	if req.GetBody == nil {
		return req.Header.Get("Mcp-Method"), nil, req.ContentLength
	}
	body, err := req.GetBody()
	if err != nil {
		return req.Header.Get("Mcp-Method"), nil, req.ContentLength
	}
	defer body.Close()
	data, _ := io.ReadAll(io.LimitReader(body, 1<<20))
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(data, &m)
	if m.Method == "" {
		m.Method = req.Header.Get("Mcp-Method")
	}
	if string(m.ID) == "null" || m.Method == "" {
		m.ID = nil // a notification, or the client's response to a server request
	}
	return m.Method, m.ID, int64(len(data))
}

// How a wireBody treats what it reads.
const (
	bodyIgnored    = iota // not the answer to a request: counted only
	bodyKept              // one JSON message or an error page: kept, judged at its end
	bodySSE               // an SSE stream: judged event by event
	bodyStandalone        // the standalone SSE stream: watched for requests for input
)

// wireBody is a response body on its way to the SDK.
type wireBody struct {
	rc      io.ReadCloser
	t       *wireTripper
	i       int
	kind    int
	release func()
	method  string
	id      json.RawMessage
	ctx     context.Context // the request's, for a standalone stream

	mu     sync.Mutex
	n      int64
	kept   bytes.Buffer
	sse    sseParser
	closed bool
	over   bool
	answer bool // the response to the request has been seen
}

func (b *wireBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	over := b.over
	b.mu.Unlock()
	if over {
		return 0, errTooLarge
	}
	// Not under the lock: Close, from another goroutine, must be able to
	// interrupt a Read that waits for the network.
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > 0 {
		b.n += int64(n)
		if b.n > b.t.rec.limit {
			b.over = true
			b.t.rec.update(b.i, func(x *exchange) { x.tooLarge, x.bytes = true, b.n })
			b.t.rec.finish(b.i)
			b.t.rec.fault(b.i, results.CodeResponseTooLarge, "%s: the answer exceeds max_body_bytes (%d)", label(b.method, b.t.tool), b.t.rec.limit)
			return 0, errTooLarge
		}
		switch b.kind {
		case bodyKept:
			b.kept.Write(p[:n])
		case bodyStandalone:
			for _, ev := range b.sse.feed(p[:n]) {
				b.standaloneEvent(ev)
			}
		case bodySSE:
			for _, ev := range b.sse.feed(p[:n]) {
				b.event(ev)
			}
			id, retry, retrySet := b.sse.lastID, b.sse.retry, b.sse.retrySet
			b.t.rec.update(b.i, func(x *exchange) { x.lastEventID, x.retry, x.retrySet = id, retry, retrySet })
		}
	}
	bytesRead := b.n
	b.t.rec.update(b.i, func(x *exchange) { x.bytes = bytesRead })
	if err == io.EOF && b.kind == bodyStandalone {
		// Held open: an ended stream would make the SDK reconnect, and
		// fail the session when that does not help.
		b.mu.Unlock()
		<-b.ctx.Done()
		b.mu.Lock()
		err = b.ctx.Err()
	}
	switch {
	case err == io.EOF:
		b.end()
	case err != nil:
		b.t.rec.update(b.i, func(x *exchange) {
			if x.err == nil {
				x.err = err
			}
		})
		b.t.rec.finish(b.i)
	}
	return n, err
}

// end judges a body read to its end.
func (b *wireBody) end() {
	// An SSE event the stream ended before dispatching is discarded, as
	// the SSE specification (and the SDK) do.
	b.t.rec.update(b.i, func(x *exchange) { x.ended = true })
	if b.kind == bodySSE && !b.answer && b.sse.lastID != "" && b.sse.retrySet {
		// The server asks to be polled again after retry: a wait the
		// call cannot afford is a timeout now, not later.
		if d, ok := b.t.life.Deadline(); ok && b.t.rec.now().Add(b.sse.retry).After(d) {
			b.t.rec.fault(b.i, results.CodeTimeout, "%s: the server closed the SSE stream before the response and asks to resume it after %s (retry: %d), beyond what is left of the attempt's time",
				label(b.method, b.t.tool), b.sse.retry, b.sse.retry.Milliseconds())
		}
	}
	if b.kind == bodyKept {
		body := append([]byte(nil), b.kept.Bytes()...)
		b.t.rec.update(b.i, func(x *exchange) { x.body = body })
		var status int
		b.t.rec.update(b.i, func(x *exchange) { status = x.status })
		if status/100 == 2 {
			b.message(bytes.TrimSpace(body), "the body")
		}
	}
	b.t.rec.finish(b.i)
}

// event judges one SSE event of a call's stream.
func (b *wireBody) event(ev sseEvent) {
	if len(ev.data) == 0 || (ev.name != "" && ev.name != "message") {
		return // a priming event, or one the transport does not define
	}
	b.message(ev.data, "an SSE event")
}

// standaloneEvent judges one event of the standalone stream: a server
// request for input ends the call, as it does on a call's own stream.
func (b *wireBody) standaloneEvent(ev sseEvent) {
	if len(ev.data) == 0 || (ev.name != "" && ev.name != "message") {
		return
	}
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(ev.data, &m) != nil || !askedInput(m.Method) || isNull(m.ID) {
		return
	}
	b.t.rec.update(b.i, func(x *exchange) { x.method = m.Method })
	b.t.rec.fault(b.i, results.CodeNeedsInput, "%s: the server asked the client for %s on its standalone SSE stream, which a probe cannot give",
		label(b.t.rec.pending(), b.t.tool), m.Method)
}

// message judges one JSON-RPC message the server sent on the request's
// answer: where names where it came from, for messages.
func (b *wireBody) message(data []byte, where string) {
	what := label(b.method, b.t.tool)
	if b.answer {
		return // the SDK stops at the response; so does the judgement
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		b.t.rec.fault(b.i, results.CodeMCPProtocol, "%s: %s is not JSON-RPC: %s", what, where, excerpt(data))
		return
	}
	if m.JSONRPC != "2.0" {
		b.t.rec.fault(b.i, results.CodeMCPProtocol, "%s: %s is not JSON-RPC 2.0: %s", what, where, excerpt(data))
		return
	}
	if m.Method != "" {
		// A request or notification from the server, before the response.
		if askedInput(m.Method) {
			b.t.rec.fault(b.i, results.CodeNeedsInput, "%s: the server asked the client for %s, which a probe cannot give", what, m.Method)
		}
		return
	}
	if m.Result == nil && m.Error == nil {
		b.t.rec.fault(b.i, results.CodeMCPProtocol, "%s: %s is a JSON-RPC message with neither result nor error", what, where)
		return
	}
	if !sameID(m.ID, b.id) && !(m.Error != nil && isNull(m.ID)) {
		b.t.rec.fault(b.i, results.CodeMCPProtocol, "%s: the response has id %s, the request had id %s", what, rawID(m.ID), b.id)
		return
	}
	b.answer = true
	// data is the body's own copy (end) or the event's (lineDone), never
	// written again: it is kept as it is.
	b.t.rec.update(b.i, func(x *exchange) { x.response, x.result = data, m.Result })
	b.t.rec.finish(b.i)
}

func (b *wireBody) Close() error {
	b.mu.Lock()
	closed := b.closed
	b.closed = true
	b.mu.Unlock()
	if closed {
		return nil
	}
	err := b.rc.Close()
	b.t.rec.finish(b.i)
	b.release()
	return err
}

// askedInput reports whether a server request asks for what only a person
// or a model could give.
func askedInput(method string) bool {
	return method == "sampling/createMessage" || method == "elicitation/create"
}

// sameID reports whether two JSON-RPC ids are equal: 1 and 1.0 are, 1 and
// "1" are not.
func sameID(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	switch x.(type) {
	case float64, string:
		return x == y
	}
	return false
}

// rawID shows an id as it was sent, cut short.
func rawID(id json.RawMessage) string {
	if len(id) > 40 || !json.Valid(id) {
		return excerpt(id)
	}
	return string(id)
}

func isNull(id json.RawMessage) bool {
	s := strings.TrimSpace(string(id))
	return s == "" || s == "null"
}

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	name string
	data []byte
}

// sseParser splits a text/event-stream into events as bytes arrive
// (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
// lines end in LF, CRLF or CR; data lines join with LF; a blank line
// dispatches; lines starting with a colon are comments.
type sseParser struct {
	// lastID is the last event id the stream set, and retry its last
	// reconnection time (when retrySet): what resuming it needs.
	lastID   string
	retry    time.Duration
	retrySet bool

	line    []byte
	name    string
	data    []byte
	hasData bool
	lastCR  bool // the previous chunk ended in CR: an LF first in this one belongs to it
}

// feed consumes p and returns the events it completed.
func (s *sseParser) feed(p []byte) []sseEvent {
	var out []sseEvent
	for _, c := range p {
		if s.lastCR {
			s.lastCR = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\r':
			s.lastCR = true
			fallthrough
		case '\n':
			if ev, ok := s.lineDone(); ok {
				out = append(out, ev)
			}
		default:
			s.line = append(s.line, c)
		}
	}
	return out
}

func (s *sseParser) lineDone() (sseEvent, bool) {
	line := s.line
	s.line = s.line[:0]
	if len(line) == 0 {
		if !s.hasData && s.name == "" {
			return sseEvent{}, false
		}
		ev := sseEvent{name: s.name, data: append([]byte(nil), s.data...)}
		s.name, s.data, s.hasData = "", s.data[:0], false
		return ev, true
	}
	if line[0] == ':' {
		return sseEvent{}, false
	}
	field, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "event":
		s.name = string(value)
	case "id":
		if !bytes.ContainsRune(value, 0) {
			s.lastID = string(value)
		}
	case "retry":
		if n, err := strconv.ParseInt(string(value), 10, 64); err == nil && n >= 0 && n <= math.MaxInt64/int64(time.Millisecond) {
			s.retry, s.retrySet = time.Duration(n)*time.Millisecond, true
		}
	case "data":
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
	}
	return sseEvent{}, false
}

// label names a step for messages: the JSON-RPC method, and the tool for
// tools/call.
func label(method, tool string) string {
	switch method {
	case "tools/call":
		return fmt.Sprintf("tools/call %q", tool)
	case "":
		return "the session"
	}
	return method
}

// maxExcerpt bounds, in characters, what a message quotes of the server's
// text.
const maxExcerpt = 200

// excerpt quotes b on one line, shortened as results.Shorten does: a
// server says what it rejects at the end ("missing properties:
// [\"location\"]", a validation error's path), so the middle is cut.
func excerpt(b []byte) string {
	return fmt.Sprintf("%q", results.Shorten(strings.ToValidUTF8(string(b), "?"), maxExcerpt))
}

// describeType names a Content-Type for a message.
func describeType(ct string) string {
	if ct == "" {
		return "no Content-Type"
	}
	if len(ct) > 60 {
		ct = ct[:60]
	}
	return fmt.Sprintf("Content-Type %q", ct)
}
