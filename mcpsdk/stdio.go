package mcpsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/results"
)

// The stdio side (SPEC §10.1): a Request with a Command starts the server
// for each session and speaks MCP over its stdin and stdout through the
// SDK's CommandTransport. The wire is watched as the HTTP side watches it,
// one level up: every JSON-RPC message the SDK writes or reads passes a
// stdioConn, which records it as an exchange (no HTTP status) and faults
// the call on what the SDK would hide or wait out: a server that ends
// (server_exited), bytes on stdout that are not JSON-RPC (mcp_protocol), a
// response to no request, a server asking for input.

// DefaultGrace is how long a stdio server gets to exit after its stdin is
// closed, and again after SIGTERM, before it is killed.
const DefaultGrace = 2 * time.Second

// Command is a stdio MCP server a session starts: the program and its
// arguments (no shell), the environment added to a small inherited one,
// and the working directory.
type Command struct {
	// Argv is the program and its arguments; never empty.
	Argv []string
	// Env is added to the server's environment. Values are secrets: every
	// message the call returns has them replaced by <redacted>.
	Env map[string]string
	// Dir is the working directory; "" is the caller's.
	Dir string
	// Grace is DefaultGrace when zero.
	Grace time.Duration
}

// inheritedEnv are the variables of toolpulse's own environment a stdio
// server gets: what a program needs to be found and to run (npx needs
// HOME for its cache), and nothing else. toolpulse's environment holds
// the secrets of every probe and receiver; a package under watch for a
// rug pull must not be handed them.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ"}

// stderrTail bounds what a server's stderr keeps, and stderrLines how many
// of its last lines go into a message.
const (
	stderrTail  = 4 << 10
	stderrLines = 5
)

// stdioServer is one started server, the process of one session.
type stdioServer struct {
	cmd    *exec.Cmd
	grace  time.Duration
	stderr *tailWriter

	mu     sync.Mutex
	exited bool // it ended, or closed its stdout, before the session was done
}

// stdioTransport starts c.req.Command's server for one session.
type stdioTransport struct {
	c *call
}

func (c *call) stdioTransport() mcp.Transport { return &stdioTransport{c: c} }

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c := t.c
	spec := c.req.Command
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = serverEnv(spec.Env)
	srv := &stdioServer{cmd: cmd, grace: spec.Grace, stderr: &tailWriter{limit: stderrTail}}
	if srv.grace <= 0 {
		srv.grace = DefaultGrace
	}
	cmd.Stderr = srv.stderr
	// The pipes are the server's; a child that keeps one open after the
	// server ended cannot hold Wait, and so the session, past the grace.
	cmd.WaitDelay = srv.grace
	ownGroup(cmd)
	c.stdio = srv

	i := c.rec.add(&exchange{method: "start server", stdio: true, resumedBy: -1, started: c.rec.now()})
	var conn mcp.Connection
	err := dirProblem(spec.Dir)
	if err == nil {
		conn, err = (&mcp.CommandTransport{Command: cmd, TerminateDuration: srv.grace}).Connect(ctx)
	}
	c.rec.finish(i)
	if err != nil {
		c.rec.update(i, func(x *exchange) { x.err = err })
		c.rec.fault(i, results.CodeServerExited, "starting the server: %s", firstLine(err.Error()))
		return nil, err
	}
	return &stdioConn{inner: conn, srv: srv, rec: c.rec, tool: c.req.Tool, trace: c.req.Trace, pending: map[string]int{}, closed: make(chan struct{})}, nil
}

// dirProblem says what is wrong with a server's working directory: Go
// reports a missing one as the program's ("fork/exec PROGRAM: no such
// file or directory"), which sends the operator after the wrong path.
func dirProblem(dir string) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("dir %s: %w", dir, errors.Unwrap(err))
	case !st.IsDir():
		return fmt.Errorf("dir %s is not a directory", dir)
	}
	return nil
}

// serverEnv is a server's environment: inheritedEnv from toolpulse's, then
// the probe's env.
func serverEnv(extra map[string]string) []string {
	env := make([]string, 0, len(inheritedEnv)+len(extra))
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			if _, override := extra[k]; !override {
				env = append(env, k+"="+v)
			}
		}
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// stdioConn is the SDK's stdio connection, watched.
type stdioConn struct {
	inner mcp.Connection
	srv   *stdioServer
	rec   *recorder
	tool  string
	trace results.Trace // the zero Trace: messages go unmarked

	mu      sync.Mutex
	pending map[string]int // request id → its exchange

	closing   atomic.Bool
	closeOnce sync.Once
	closed    chan struct{}
}

func (s *stdioConn) SessionID() string { return "" }

func (s *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	msg = s.traced(msg)
	x := &exchange{stdio: true, resumedBy: -1, started: s.rec.now()}
	var key string
	switch m := msg.(type) {
	case *jsonrpc.Request:
		x.method = m.Method
		if m.IsCall() {
			x.id, _ = json.Marshal(m.ID.Raw())
			key = string(x.id)
		}
	}
	if data, err := jsonrpc.EncodeMessage(msg); err == nil {
		x.reqBytes = int64(len(data)) + 1
	}
	i := s.rec.add(x)
	if key != "" {
		s.mu.Lock()
		s.pending[key] = i
		s.mu.Unlock()
	}
	err := s.inner.Write(ctx, msg)
	if err != nil {
		s.rec.update(i, func(x *exchange) { x.err = err })
		s.rec.finish(i)
		if ctx.Err() == nil && !s.closing.Load() {
			s.srv.setExited()
			s.rec.fault(i, results.CodeServerExited, "%s: the server no longer reads its stdin: %s", label(x.method, s.tool), firstLine(err.Error()))
		}
		return err
	}
	if key == "" {
		s.rec.finish(i) // a notification or a response: done once written
	}
	return nil
}

// traced is msg with the run's trace in params._meta when it is a request
// or a notification (SPEC §10.1): a stdio message has no headers, so _meta
// is its only carrier, as it is for the messages an HTTP stream carries
// (traceTripper). Each message is a span of its own. A response, or a
// message the trace cannot be placed in, goes as it is.
func (s *stdioConn) traced(msg jsonrpc.Message) jsonrpc.Message {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !s.trace.On() {
		return msg
	}
	parent, err := s.trace.Traceparent()
	if err != nil {
		return msg // no random bytes: unmarked rather than not sent
	}
	data, err := jsonrpc.EncodeMessage(req)
	if err != nil {
		return msg
	}
	data, ok = traceMeta(data, parent, s.trace.State)
	if !ok {
		return msg
	}
	out, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return msg
	}
	marked, ok := out.(*jsonrpc.Request)
	if !ok {
		return msg
	}
	marked.Extra = req.Extra
	return marked
}

func (s *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := s.inner.Read(ctx)
	if err != nil {
		if ctx.Err() == nil && !s.closing.Load() {
			s.readFailed(err)
		}
		return nil, err
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		s.response(m)
	case *jsonrpc.Request:
		if askedInput(m.Method) {
			i := s.lastPending()
			s.rec.fault(i, results.CodeNeedsInput, "%s: the server asked the client for %s, which a probe cannot give", label(s.rec.get(i).method, s.tool), m.Method)
		}
	}
	return msg, nil
}

// response records a response on its request's exchange.
func (s *stdioConn) response(m *jsonrpc.Response) {
	id, _ := json.Marshal(m.ID.Raw())
	s.mu.Lock()
	i, ok := s.pending[string(id)]
	delete(s.pending, string(id))
	s.mu.Unlock()
	data, err := jsonrpc.EncodeMessage(m)
	if !ok || err != nil {
		s.rec.fault(s.lastPending(), results.CodeMCPProtocol, "stdout: a response with id %s, which no request of the session had", rawID(id))
		return
	}
	s.rec.update(i, func(x *exchange) { x.response, x.result, x.bytes = data, m.Result, int64(len(data))+1 })
	s.rec.finish(i)
	if int64(len(data)) > s.rec.limit {
		s.rec.update(i, func(x *exchange) { x.tooLarge = true })
		s.rec.fault(i, results.CodeResponseTooLarge, "%s: the answer exceeds max_body_bytes (%d)", label(s.rec.get(i).method, s.tool), s.rec.limit)
	}
}

// readFailed judges the end of the server's stdout while the session still
// wanted it: the server ended, or wrote what is not JSON-RPC.
func (s *stdioConn) readFailed(err error) {
	i := s.lastPending()
	what := "the session"
	if i >= 0 {
		what = label(s.rec.get(i).method, s.tool)
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, os.ErrClosed):
		s.srv.setExited()
		s.rec.fault(i, results.CodeServerExited, "%s: the server exited, or closed its stdout, before answering", what)
	case strings.Contains(err.Error(), "maximum line length"):
		s.rec.fault(i, results.CodeResponseTooLarge, "%s: a message on stdout exceeds the SDK's line limit", what)
	default:
		s.rec.fault(i, results.CodeMCPProtocol, "%s: the server wrote something other than JSON-RPC to stdout: %s", what, firstLine(err.Error()))
	}
}

// lastPending is the exchange of the last request still without a
// response; -1 when none is.
func (s *stdioConn) lastPending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := -1
	for _, i := range s.pending {
		last = max(last, i)
	}
	return last
}

// Close ends the server as the SDK's CommandTransport does (stdin closed,
// a grace period, SIGTERM, a grace period, SIGKILL), and sends the same
// signals to its whole process group: `npx` runs the server as a child,
// which a signal to npx alone would leave behind. Whatever of the group
// outlives the server is killed. Close returns once the server is reaped
// (or the SDK gave up on it, three grace periods at most) and may be
// called any number of times, concurrently.
func (s *stdioConn) Close() error {
	s.closeOnce.Do(func() {
		defer close(s.closed)
		s.closing.Store(true)
		i := s.rec.add(&exchange{method: "stop server", stdio: true, resumedBy: -1, started: s.rec.now()})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = s.inner.Close()
		}()
		g := s.srv.grace
		t := time.NewTimer(g)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			signalGroup(s.srv.cmd, syscall.SIGTERM)
			t.Reset(g)
			select {
			case <-done:
			case <-t.C:
				signalGroup(s.srv.cmd, syscall.SIGKILL)
				<-done
			}
		}
		signalGroup(s.srv.cmd, syscall.SIGKILL)
		s.rec.finish(i)
	})
	<-s.closed
	return nil
}

func (v *stdioServer) setExited() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.exited = true
}

// note is what a failed call's message adds about the server: how it
// exited when it ended on its own, and the last lines of its stderr,
// redacted.
func (v *stdioServer) note(redact func(string) string) string {
	v.mu.Lock()
	exited := v.exited
	v.mu.Unlock()
	var parts []string
	if st := v.cmd.ProcessState; exited && st != nil {
		parts = append(parts, "the server "+exitText(st))
	}
	if tail := v.stderr.lastLines(stderrLines); tail != "" {
		parts = append(parts, "its stderr ends: "+redact(tail))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

func exitText(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by " + ws.Signal().String()
	}
	return "exited with status " + strconv.Itoa(st.ExitCode())
}

// tailWriter keeps the last limit bytes written to it: a server's stderr.
type tailWriter struct {
	limit int
	mu    sync.Mutex
	buf   []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.limit; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

// lastLines is the last n non-blank lines (after the last line that
// names an error when they do not), each cut at 200 bytes, joined
// by " | ", valid UTF-8 without control characters.
func (w *tailWriter) lastLines(n int) string {
	w.mu.Lock()
	text := string(w.buf)
	w.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r", "\n"), "\n") {
		l = strings.TrimSpace(strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return ' '
			}
			return r
		}, strings.ToValidUTF8(l, "")))
		if l == "" {
			continue
		}
		if len(l) > 200 {
			l = strings.ToValidUTF8(l[:200], "") + "…"
		}
		lines = append(lines, l)
	}
	if len(lines) <= n {
		return strings.Join(lines, " | ")
	}
	tail := lines[len(lines)-n:]
	// A stack trace's last lines are frames; the line that says what went
	// wrong comes before them, and goes first.
	if !slices.ContainsFunc(tail, saysError) {
		for i := len(lines) - n - 1; i >= 0; i-- {
			if saysError(lines[i]) {
				return lines[i] + " … " + strings.Join(tail, " | ")
			}
		}
	}
	return strings.Join(tail, " | ")
}

func saysError(line string) bool {
	l := strings.ToLower(line)
	return strings.Contains(l, "error") || strings.Contains(l, "fatal") || strings.Contains(l, "panic") || strings.Contains(l, "exception")
}

// redactEnv replaces the values of the server's env in s.
func (c *call) redactEnv(s string) string {
	if c.req.Command == nil {
		return s
	}
	for _, v := range c.req.Command.Env {
		if len(strings.TrimSpace(v)) > 0 {
			s = strings.ReplaceAll(s, v, "<redacted>")
		}
	}
	return s
}

// failureText is a failed call's message as it leaves the package: the
// verdict's, with what the stdio server left behind, redacted.
func (c *call) failureText(v *verdict) string {
	msg := v.message
	if c.stdio != nil {
		msg += c.stdio.note(c.redactEnv)
	}
	return c.scrub(c.redactEnv(msg))
}

// checkCommand checks a Request for a stdio server.
func (r Request) checkCommand() error {
	switch {
	case r.URL != "":
		return errors.New("mcpsdk: Request has both URL and Command")
	case len(r.Command.Argv) == 0 || r.Command.Argv[0] == "":
		return errors.New("mcpsdk: Request.Command.Argv names no program")
	case r.Tool == "":
		return errors.New("mcpsdk: Request.Tool is empty")
	case r.MaxBodyBytes <= 0:
		return errors.New("mcpsdk: Request.MaxBodyBytes must be positive")
	}
	return nil
}
