package runner

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

// operation is the state of one run: the probe's exchange, the attempt
// loop that drives it, and what the last attempt received. Each run has
// its own, on the goroutine that called Executor.Run, so it needs no
// locking.
type operation struct {
	e      *Executor
	p      *checks.Probe
	parent context.Context // the caller's: its end means canceled

	loop    *attemptLoop // nil until the attempts begin
	payload []byte       // the last attempt's answer, for the rules and the failure sample
	// replay is the whole answer the rules saw, for the shape sample that
	// `toolpulse test --from-db` replays: the payload of an HTTP probe, the
	// whole CallToolResult of an MCP probe (its response derives from it,
	// and a rule may read result).
	replay []byte
}

// maxMessage bounds a message built from an error's text.
const maxMessage = 300

// run makes the probe's exchange under its retry policy, then judges the
// last answer. It fills res's outcome and the fields only it knows.
func (op *operation) run(res *results.Result) {
	st := op.e.transports.acquire(op.p.TLS)
	defer op.e.transports.release(st)
	var ex exchange
	if op.p.MCP != nil {
		ex = newMCPExchange(op.e, op.p, st.front)
	} else {
		hx, err := newHTTPExchange(op.e, op.p, st.front)
		if err != nil {
			res.Fail(results.NewError(results.CodeInternalError, "building the request: %v", err))
			return
		}
		ex = hx
	}
	loop, cancel := newAttemptLoop(op.e, op.p, op.parent, res.StartedAt)
	defer cancel()
	op.loop = loop
	failure := loop.run(ex)
	payload, meta := ex.answer()
	op.payload, op.replay = payload, payload
	if op.p.MCP != nil {
		op.replay = meta.result
		// Whatever the outcome after the listing: definition drift is
		// judged on every run that got that far.
		res.Tool = toolDefinitionOf(meta.tool)
	}
	if failure != nil {
		res.Fail(failure)
		return
	}
	op.judge(res, meta)
}

// judge runs the consumer on the payload of a usable answer.
func (op *operation) judge(res *results.Result, meta answerMeta) {
	v, err := consumers.DecodeJSON(op.payload)
	if err != nil {
		jerr := &jsonError{err: err, contentType: meta.headers["content-type"]}
		res.Fail(results.NewError(classify(jerr, 0, nil), "%s", truncate(jerr.Error())))
		return
	}
	res.Shape = shapeOf(v)

	in := consumers.Input{
		Response: v,
		Status:   meta.status,
		Headers:  meta.headers,
		Request:  consumers.Request{JSON: op.p.Request.JSON, Query: op.p.Request.Query},
		Probe:    op.p.Name,
	}
	if op.p.MCP != nil {
		in.Request = consumers.Request{JSON: op.p.MCP.Arguments}
		// Decoding result costs about what decoding the response did:
		// rules that cannot see it do not pay for it.
		if op.p.Consumer.ReadsInput("result") {
			in.Result = ruleObject(meta.result)
		}
		if op.p.Consumer.ReadsInput("tool") {
			in.Tool = ruleObject(meta.tool)
		}
	}
	verdict := op.p.Consumer.Apply(in, op.p.Expect.MinResults)
	res.SelectedCount, res.ValidatedCount = verdict.Selected, verdict.Validated
	if verdict.Err != nil {
		failure := *verdict.Err
		failure.Retryable = failure.Code.Retryable()
		res.Fail(&failure)
		return
	}
	res.Outcome = results.Pass
}

// ruleObject decodes raw JSON that mcpsdk checked is an object into a
// rule value; nil when there is none.
func ruleObject(raw []byte) map[string]any {
	if len(raw) == 0 {
		return nil
	}
	v, err := consumers.DecodeJSON(raw)
	if err != nil {
		return nil
	}
	m, _ := v.(map[string]any)
	return m
}

// attempts is what the run's attempts were, nil before they began.
func (op *operation) attempts() []results.Attempt {
	if op.loop == nil {
		return nil
	}
	return op.loop.attempts
}

// errorText is the useful part of a transport error: without the url.Error
// wrapper, which only repeats the method and URL the probe already names.
func errorText(err error) string {
	if err == nil {
		return "no error"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "connection closed before the response was complete: " + msg
	}
	return truncate(msg)
}

// truncate bounds a message, cutting on a rune boundary.
func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage], "") + "…"
}
