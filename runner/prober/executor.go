// Package prober runs one probe once. One operation sends a probe's known fixture
// with bounded retries (the attempt loop, around an exchange such as an
// HTTP request through go-retryablehttp), classifies every failure into a
// stable code, runs the consumer's own rules on the answer and returns a
// typed results.Result: a provider that fails is data, never a Go error.
package prober

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/oauth"
	"github.com/toolpulse/toolpulse/results"
)

// Options are an Executor's dependencies. Every field is optional.
type Options struct {
	Logger *slog.Logger // nil: discard
	// Clock stamps runs and attempts; nil: the real clock. The waits and
	// timeouts of an attempt are real time whatever it is: they bound real
	// network I/O.
	Clock clockwork.Clock
	// Rand returns a number in [0,1) for back-off jitter. Runs call it
	// concurrently, so it must be safe for concurrent use. nil: math/rand/v2.
	Rand     func() float64
	NewID    func() string     // operation ids; nil: UUIDs of version 7 (see newOperationID)
	Redactor *results.Redactor // scrubs secrets from messages and samples; nil scrubs nothing
	// Version is sent in the User-Agent as toolpulse/<Version>. "": the
	// binary's own (results.ReadBuild().Label()).
	Version string
	// TraceRand is where trace and span ids come from (SPEC §10.1); it must
	// be safe for concurrent use. nil: crypto/rand, read a block at a time.
	TraceRand io.Reader
}

// Executor runs operations. It keeps the HTTP transports that probes with
// the same TLS settings share (see transportPool), so that runs reuse
// connections without a pool per probe, and the fingerprint of each
// probe's last passing shape, so that only a pass that shows a new shape
// carries a sample of it. It is safe for concurrent use.
type Executor struct {
	logger    *slog.Logger
	now       func() time.Time
	rand      func() float64
	newID     func() string
	traceRand io.Reader
	redactor  atomic.Pointer[results.Redactor]
	userAgent string
	// mcpVersion is the clientInfo.version an MCP session announces: the
	// build's, read once rather than on every attempt.
	mcpVersion string
	// schemas keeps the outputSchemas MCP probes' tools declare,
	// compiled, so that a run does not compile its tool's schema again.
	schemas mcpsdk.Schemas

	transports transportPool
	// bodies holds read buffers for bodies of unknown length, see
	// readBody.
	bodies sync.Pool

	mu sync.Mutex
	// shapes holds the fingerprint of each probe's last passing run. It is
	// keyed by the probe value and forgotten by CloseIdleConnections, so
	// the first run after a start or a reload carries a sample: the store
	// keeps one per fingerprint, and a new process cannot know whether its
	// shape already has one.
	shapes map[*checks.Probe]string
	// sources holds the OAuth token source of each call with client
	// credentials, forgotten by CloseIdleConnections as shapes are: the
	// probes of a reloaded config are new values, their credentials may
	// have changed.
	sources map[sourceKey]*oauth.Source
}

// SetRedactor replaces the redactor, for a reloaded config whose secrets
// changed; runs in flight finish with either one.
func (e *Executor) SetRedactor(r *results.Redactor) { e.redactor.Store(r) }

// NewExecutor returns an Executor with opts' dependencies, defaulting the
// ones left nil.
func NewExecutor(opts Options) *Executor {
	e := &Executor{
		logger:  opts.Logger,
		rand:    opts.Rand,
		newID:   opts.NewID,
		shapes:  map[*checks.Probe]string{},
		sources: map[sourceKey]*oauth.Source{},

		traceRand: opts.TraceRand,
	}
	random := newRandomSource()
	if e.traceRand == nil {
		e.traceRand = random
	}
	e.redactor.Store(opts.Redactor)
	if e.logger == nil {
		e.logger = slog.New(slog.DiscardHandler)
	}
	e.now = time.Now
	if opts.Clock != nil {
		e.now = opts.Clock.Now
	}
	if e.rand == nil {
		e.rand = rand.Float64
	}
	if e.newID == nil {
		e.newID = func() string { return newOperationID(random) }
	}
	version := opts.Version
	if version == "" {
		version = results.ReadBuild().Label()
	}
	e.userAgent = "toolpulse/" + version
	e.mcpVersion = results.ReadBuild().Version
	return e
}

// CloseIdleConnections closes the idle connections of every transport,
// forgets the transports no run is using and forgets the probes' last
// shapes; the next run of a probe carries a sample of its shape. Call it
// after a config reload, whose probes are new values, and at shutdown,
// once no run is in flight: a connection handed back by a run still in
// flight is closed by the next call.
func (e *Executor) CloseIdleConnections() {
	e.mu.Lock()
	e.shapes = map[*checks.Probe]string{}
	e.sources = map[sourceKey]*oauth.Source{}
	e.mu.Unlock()
	e.transports.closeIdle()
}

// newShape records fingerprint as p's last shape and reports whether it
// differs from the one before, as it does on p's first run with a shape.
func (e *Executor) newShape(p *checks.Probe, fingerprint string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if last, ok := e.shapes[p]; ok && last == fingerprint {
		return false
	}
	e.shapes[p] = fingerprint
	return true
}

// Run runs one operation of p: the request with its retries, then the
// consumer's rules on the answer. It never panics and never returns a Go
// error: every failure, toolpulse's own included, is a typed outcome in the
// result. ctx ending (shutdown) stops the run as unavailable/canceled.
func (e *Executor) Run(ctx context.Context, p *checks.Probe) (res results.Result) {
	op := &operation{e: e, p: p, parent: ctx}
	defer func() {
		// Recovering here, around everything, keeps one bad probe or a bug
		// of ours from taking the daemon down; the result says what happened.
		if v := recover(); v != nil {
			op.recovered(&res, v)
		}
		e.complete(&res, op)
	}()
	res.StartedAt = e.now()
	res.OperationID = e.newID()
	res.Probe = p.Name
	res.Kind, res.MCP = p.Kind(), p.MCPTarget()
	if c := p.Call(); c != nil {
		res.Consumer = c.Consumer.Ref()
	}
	op.startTrace(&res)
	op.run(&res)
	return res
}

// complete fills what every result carries whatever happened (duration,
// attempts, final status, samples) and scrubs secrets from it. A panic in
// here leaves a bare internal_error rather than escaping Run.
func (e *Executor) complete(res *results.Result, op *operation) {
	redactor := e.redactor.Load()
	defer func() {
		if v := recover(); v != nil {
			res.Fail(results.NewError(results.CodeInternalError, "panic while completing the result: %v", v))
			res.ResponseSample = ""
			if res.Shape != nil {
				res.Shape.Sample = ""
			}
			redactor.RedactResult(res)
		}
	}()
	redactor = op.redactor()
	if !res.Outcome.Valid() {
		res.Fail(results.NewError(results.CodeInternalError, "operation ended without an outcome"))
	}
	res.Duration = e.now().Sub(res.StartedAt)
	res.Attempts = op.allAttempts()
	res.Steps = op.steps
	if len(res.Attempts) > 0 {
		// The deciding call's last try's status, not its last row's: an
		// MCP session ends with the DELETE that closes it.
		res.HTTPStatus = op.lastStatus
		if op.loop != nil {
			// A panic cut a loop short: its attempt in flight is the last.
			res.HTTPStatus = res.Attempts[len(res.Attempts)-1].HTTPStatus
		}
	}
	if res.Outcome != results.Pass && op.payload != nil {
		res.ResponseSample = sample(redactor.Redact(string(op.payload)))
	}
	redactor.RedactResult(res)
	redactDefinition(res.Tool, redactor.Redact)
	if res.Shape != nil {
		// Keys are not secrets, but a provider that echoes a token as a key
		// must not get it stored; the fingerprint stays as computed. The
		// structure holds the keys as they came: drop it, and drift
		// detection reads the scrubbed text instead.
		if scrubbed := redactor.Redact(res.Shape.Canonical); scrubbed != res.Shape.Canonical {
			res.Shape.Canonical, res.Shape.Structure = scrubbed, nil
		}
	}
	for _, s := range res.Steps {
		if s.Shape != nil {
			if scrubbed := redactor.Redact(s.Shape.Canonical); scrubbed != s.Shape.Canonical {
				s.Shape.Canonical, s.Shape.Structure = scrubbed, nil
			}
		}
	}
	if res.Outcome != results.Pass {
		e.logger.Debug("probe run failed", "probe", res.Probe, "operation_id", res.OperationID,
			"outcome", res.Outcome, "code", res.Code(), "message", res.Error.Message,
			"attempts", res.AttemptCount())
	}
	// Last, so that nothing after it can panic and drop a sample the
	// probe's memory already counts as sent. A steady probe pays one
	// locked map lookup here; only a new shape pays for scrubbing the
	// whole body.
	// Only a pass: `toolpulse test --mutate --from-db` mutates the sample and
	// needs a body the consumer accepted.
	if res.Shape != nil && res.Outcome == results.Pass && e.newShape(op.p, res.Shape.Fingerprint) {
		res.Shape.Sample = shapeSample(redactor.Redact(string(op.replay)))
	}
}

// sampleBytes bounds the response sample kept for a failed run.
const sampleBytes = 4 << 10

// sample returns the first sampleBytes of body as valid UTF-8, cut on a
// rune boundary. body must already be redacted: cutting first could leave
// the start of a secret at the end of the sample.
func sample(body string) string {
	if len(body) > sampleBytes {
		cut := sampleBytes
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		body = body[:cut]
	}
	return strings.ToValidUTF8(body, "\uFFFD")
}

// shapeSample is a body, already redacted, as Shape.Sample keeps it: whole,
// or "" when it does not fit in results.ShapeSampleBytes. Invalid UTF-8,
// which a body that decoded can hold only inside strings, becomes U+FFFD
// as in the failure sample: the sample is valid text and keeps its shape.
func shapeSample(body string) string {
	body = strings.ToValidUTF8(body, "\uFFFD")
	if len(body) > results.ShapeSampleBytes {
		return ""
	}
	return body
}

// recovered turns a panic inside Run into a recorded internal_error. The
// attempt in flight, if any, is recorded with it; an exchange closes what
// it opened in its own defers.
func (op *operation) recovered(res *results.Result, v any) {
	err := &panicError{value: v}
	msg := err.Error()
	defer func() {
		// Recording uses the injected clock and logger, which may be what
		// panicked in the first place.
		if recover() != nil {
			res.Fail(results.NewError(codeOf(err, 0, nil), "%s", msg))
		}
	}()
	if op.loop != nil {
		op.loop.recordPanic(codeOf(err, 0, nil), msg)
	}
	res.Fail(results.NewError(codeOf(err, 0, nil), "%s", msg))
	op.e.logger.Error("panic in probe run", "probe", res.Probe, "operation_id", res.OperationID,
		"panic", op.e.redactor.Load().Redact(fmt.Sprint(v)), "stack", string(debug.Stack()))
}
