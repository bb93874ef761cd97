package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

// operation is the state of one run. retryablehttp calls its hooks on the
// goroutine that called Run, one attempt after another, so it needs no
// locking; each run has its own, which is why the retryablehttp.Client
// (whose hooks close over it) and the http.Client it drives are built per
// run, as parts of the operation, around the transport the probe shares.
type operation struct {
	e        *Executor
	p        *checks.Probe
	parent   context.Context // the caller's: its end means canceled
	ctx      context.Context // parent, bounded by the retry budget
	deadline time.Time       // the budget's end, by e.now

	client http.Client          // the probe's timeout and redirect policy
	retry  retryablehttp.Client // attempts, with the hooks below

	attempts []results.Attempt

	// The attempt in flight.
	inAttempt  bool
	number     int
	started    time.Time
	resp       *http.Response // set while its body may be open, for panic cleanup
	status     int
	statusCode results.Code // classify of status; "" when expected
	reading    bool         // readBody runs next and checkRetry is called again
	final      bool         // a transient status that will not be retried
	body       []byte
	header     http.Header
	redirect   string // redirectNote of the response, for its messages

	wait     time.Duration // planned by checkRetry, handed to retryablehttp by backoff
	sleeping bool          // between attempts: Do returning now means the sleep was cut short
	stopNote string        // why retries stopped before max_attempts, if they did
}

// Phases of an attempt, for messages.
const (
	phaseHeaders = "waiting for the response"
	phaseBody    = "reading the response body"
)

// maxMessage bounds a message built from an error's text.
const maxMessage = 300

// run performs the HTTP exchange with retries, then judges the last
// response. It fills res's outcome and the fields only it knows.
func (op *operation) run(res *results.Result) {
	p := op.p
	op.deadline = res.StartedAt.Add(p.Retries.Budget)
	ctx, cancel := context.WithTimeout(op.parent, p.Retries.Budget)
	defer cancel()
	op.ctx = ctx

	req, err := op.newRequest()
	if err != nil {
		res.Fail(results.NewError(results.CodeInternalError, "building the request: %v", err))
		return
	}
	req.SetResponseHandler(op.readBody)
	st := op.e.transports.acquire(p.TLS)
	defer op.e.transports.release(st)
	// The client's Timeout is the per-attempt limit and, because the body
	// is read inside the attempt, it covers reading the body too. Every
	// transport leaves DisableCompression false on purpose: it then asks
	// for gzip and decodes it, and max_body_bytes counts decoded bytes.
	op.client = http.Client{Transport: st.front, Timeout: p.Timeout, CheckRedirect: redirectPolicy(p)}
	op.retry = retryablehttp.Client{
		HTTPClient:     &op.client,
		Logger:         nil, // its own logging would print every request to stderr
		RetryMax:       max(p.Retries.MaxAttempts, 1) - 1,
		RequestLogHook: op.begin,
		CheckRetry:     op.checkRetry,
		Backoff:        op.backoff,
		// Without it, retryablehttp drains the last response and replaces
		// the cause with a "giving up" error; our attempts already hold the
		// real cause, and we close the body ourselves.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	resp, err := op.retry.Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	op.resp = nil

	if failure := op.exchangeFailure(err); failure != nil {
		res.Fail(failure)
		return
	}
	op.judge(res)
}

// exchangeFailure says why the exchange gave no usable response, or nil
// when the last attempt got one. The cause is always the recorded attempt's,
// never the error Do returns: that is a "giving up" text or a bare context
// error that says nothing about the provider.
func (op *operation) exchangeFailure(doErr error) *results.Error {
	var last *results.Attempt
	if n := len(op.attempts); n > 0 {
		last = &op.attempts[n-1]
	}
	if op.sleeping && last != nil {
		// The wait was abandoned, so no attempt follows this one.
		last.Wait = 0
	}
	switch {
	case op.sleeping && op.parent.Err() != nil:
		return results.NewError(results.CodeCanceled, "run canceled during back-off after %d attempt(s)", len(op.attempts))
	case op.sleeping && last != nil:
		// Only the budget ends a sleep otherwise; plan() avoids that, but a
		// clock that disagrees with the context's could still get here.
		return results.NewError(last.Code, "%s; the retry budget ran out during back-off", last.Message)
	case last == nil:
		code := classify(op.cause(doErr), 0, nil)
		if doErr == nil {
			code = results.CodeInternalError
		}
		return results.NewError(code, "no attempt was made: %s", errorText(doErr))
	case last.Code != "":
		return results.NewError(last.Code, "%s%s", last.Message, op.stopNote)
	}
	return nil
}

// judge runs the consumer on the body of a usable response.
func (op *operation) judge(res *results.Result) {
	v, err := consumers.DecodeJSON(op.body)
	if err != nil {
		jerr := &jsonError{err: err}
		res.Fail(results.NewError(classify(jerr, 0, nil), "%s", truncate(jerr.Error())))
		return
	}
	res.Shape = shapeOf(v)

	in := consumers.Input{
		Response: v,
		Status:   op.status,
		Headers:  lowerHeaders(op.header),
		Request:  consumers.Request{JSON: op.p.Request.JSON, Query: op.p.Request.Query},
		Probe:    op.p.Name,
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

// newRequest builds the probe's request: URL with the query merged, the
// JSON fixture or raw body, and the configured headers.
func (op *operation) newRequest() (*retryablehttp.Request, error) {
	r := op.p.Request
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, err
	}
	if len(r.Query) > 0 {
		q := u.Query()
		for k, v := range r.Query {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
	}
	// body stays a nil interface when there is none: a typed nil []byte
	// would make retryablehttp send an empty chunked body.
	var body any
	contentType := ""
	switch {
	case r.HasJSON:
		b, err := json.Marshal(r.JSON)
		if err != nil {
			return nil, fmt.Errorf("encoding the json fixture: %w", err)
		}
		body, contentType = b, "application/json"
	case r.Body != "":
		body = []byte(r.Body)
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := retryablehttp.NewRequestWithContext(op.ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", op.e.userAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range r.Headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v.Reveal() // net/http ignores a Host entry in Header
			continue
		}
		req.Header.Set(k, v.Reveal())
	}
	return req, nil
}

// begin is retryablehttp's RequestLogHook: it runs just before each attempt
// is sent, so it starts the attempt's clock and clears its state.
func (op *operation) begin(_ retryablehttp.Logger, _ *http.Request, retry int) {
	op.inAttempt = true
	op.number = retry + 1
	op.started = op.e.now()
	op.resp, op.status, op.statusCode, op.header, op.body, op.redirect = nil, 0, "", nil, nil, ""
	op.reading, op.final, op.sleeping = false, false, false
}

// checkRetry is retryablehttp's CheckRetry. It sees each attempt once with
// what the transport returned and, when the attempt got a response whose
// body we read, once more with readBody's error. It records every attempt
// and decides on retries itself: only unavailable causes are retried, and
// only while another attempt fits in the budget.
func (op *operation) checkRetry(_ context.Context, resp *http.Response, err error) (bool, error) {
	if op.reading {
		op.reading, op.resp = false, nil
		return op.settle(resp, err, phaseBody)
	}
	if err != nil || resp == nil {
		return op.settle(nil, err, phaseHeaders)
	}
	op.resp, op.status, op.header = resp, resp.StatusCode, resp.Header
	op.redirect = redirectNote(resp)
	op.statusCode = classify(nil, resp.StatusCode, op.p.Expect.Status)
	if op.statusCode.Retryable() {
		if wait, ok := op.plan(resp); ok {
			// retryablehttp drains and closes this body: an intermediate
			// failure's body is not worth the time to read.
			op.record(op.statusCode, op.statusText(), wait)
			return true, nil
		}
		op.final = true
	}
	// Read the body inside this attempt, under its timeout: retryablehttp
	// calls readBody next and then checkRetry again with its error.
	op.reading = true
	return false, nil
}

// settle ends the attempt in flight: it finds its code, plans a retry when
// the code allows one, and records it.
func (op *operation) settle(resp *http.Response, err error, phase string) (bool, error) {
	var code results.Code
	switch {
	case op.statusCode != "":
		// The status decides; the body was only read for the sample.
		code = op.statusCode
	case err != nil:
		code = classify(op.cause(err), 0, nil)
	case resp == nil:
		code = classify(op.cause(errors.New("no response and no error")), 0, nil)
	}
	msg := ""
	if code != "" {
		msg = op.describe(code, err, phase)
	}
	if code.Retryable() && !op.final {
		if wait, ok := op.plan(resp); ok {
			op.record(code, msg, wait)
			return true, nil
		}
	}
	op.record(code, msg, 0)
	return false, nil
}

// cause is err as classify should see it: once the caller's context has
// ended, whatever the transport says, toolpulse stopped the attempt.
func (op *operation) cause(err error) error {
	if op.parent.Err() != nil {
		return fmt.Errorf("%w: %w", errCanceled, op.parent.Err())
	}
	return err
}

// plan decides whether another attempt follows and how long to wait before
// it. It stops at max_attempts, and when the wait plus a whole attempt
// (up to its timeout) would overrun the budget: an attempt cut short by the
// budget would report a timeout the provider did not cause.
func (op *operation) plan(resp *http.Response) (time.Duration, bool) {
	r := op.p.Retries
	if op.number >= r.MaxAttempts {
		return 0, false
	}
	if op.ctx.Err() != nil {
		return 0, false // the budget is spent, and the attempt's message says so
	}
	now := op.e.now()
	remaining := op.deadline.Sub(now)
	wait := backoff(r, op.number-1, resp, now, remaining, op.e.rand)
	if wait+op.p.Timeout > remaining {
		if ra, ok := retryAfter(resp, now); ok && ra > remaining-op.p.Timeout {
			op.stopNote = fmt.Sprintf("; not retried: Retry-After %s leaves no room for another attempt in the %s budget",
				ra, r.Budget)
		} else {
			op.stopNote = fmt.Sprintf("; not retried: another attempt would not fit in the %s budget", r.Budget)
		}
		return 0, false
	}
	op.wait = wait
	return wait, true
}

// backoff is retryablehttp's Backoff: it hands over the wait plan() chose,
// so that the wait recorded is the wait slept.
func (op *operation) backoff(_, _ time.Duration, _ int, _ *http.Response) time.Duration {
	op.sleeping = true
	return op.wait
}

// record appends the attempt in flight.
func (op *operation) record(code results.Code, msg string, wait time.Duration) {
	op.attempts = append(op.attempts, results.Attempt{
		Number:     op.number,
		StartedAt:  op.started,
		Duration:   op.e.now().Sub(op.started),
		HTTPStatus: op.status,
		Code:       code,
		Message:    msg,
		Wait:       wait,
	})
	op.inAttempt = false
	if code != "" {
		op.e.logger.Debug("attempt failed", "probe", op.p.Name, "attempt", op.number, "code", code,
			"message", op.e.redactor.Load().Redact(msg), "wait", wait)
	}
}

// readBody is the request's response handler: retryablehttp calls it within
// the attempt, so the per-attempt timeout covers the body and a slow body is
// a timeout of that attempt. It keeps at most max_body_bytes decoded bytes.
func (op *operation) readBody(resp *http.Response) error {
	defer resp.Body.Close()
	limit := op.p.MaxBodyBytes
	if resp.ContentLength > limit {
		return &tooLargeError{limit: limit, declared: resp.ContentLength}
	}
	body, err := op.e.readCapped(resp.Body, limit, resp.ContentLength)
	op.body = body
	if err != nil {
		return err
	}
	if int64(len(body)) > limit {
		op.body = body[:limit]
		return &tooLargeError{limit: limit, declared: -1}
	}
	return nil
}

// Read buffers for bodies of unknown length (chunked, or decoded from
// gzip): a body is read into a reused buffer and copied out at its exact
// size, so that it costs one allocation of its own size instead of a
// doubling series that allocates up to four times as much. A buffer
// starts at pooledBodyStart and keeps what it grew to, so the pool
// settles at the sizes the providers send; one that grew past
// maxPooledBody (a rare large body) is left to the collector rather than
// kept.
const (
	pooledBodyStart = 4 << 10
	maxPooledBody   = 256 << 10
)

// readCapped reads r to the end, but never more than limit+1 bytes: one
// byte over the limit proves the body too large, and a gzip bomb never gets
// to inflate further. sizeHint (Content-Length, or -1) sizes the buffer.
// What was read before an error is returned with it.
func (e *Executor) readCapped(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	if sizeHint >= 0 && sizeHint <= limit {
		// The extra byte lets the final Read report EOF without growing.
		return readAll(make([]byte, 0, sizeHint+1), r, limit)
	}
	bp, _ := e.bodies.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 0, pooledBodyStart)
		bp = &b
	}
	buf, err := readAll((*bp)[:0], r, limit)
	body := append(make([]byte, 0, len(buf)), buf...)
	if cap(buf) <= maxPooledBody {
		*bp = buf[:0]
		e.bodies.Put(bp)
	}
	return body, err
}

// readAll appends r to buf until EOF or limit+1 bytes, growing buf as
// needed.
func readAll(buf []byte, r io.Reader, limit int64) ([]byte, error) {
	lr := io.LimitedReader{R: r, N: limit + 1}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// describe is the message of an attempt that failed with code.
func (op *operation) describe(code results.Code, err error, phase string) string {
	switch {
	case err == nil || code == op.statusCode:
		return op.statusText()
	case code == results.CodeCanceled:
		return "run canceled before the attempt finished"
	case code == results.CodeTimeout:
		if op.parent.Err() == nil && errors.Is(op.ctx.Err(), context.DeadlineExceeded) {
			return fmt.Sprintf("retry budget of %s exhausted %s", op.p.Retries.Budget, phase)
		}
		return fmt.Sprintf("timed out after %s %s", op.p.Timeout, phase)
	}
	return errorText(err)
}

// statusText describes the attempt's HTTP status.
func (op *operation) statusText() string {
	text := fmt.Sprintf("HTTP %d", op.status)
	if s := http.StatusText(op.status); s != "" {
		text += " " + s
	}
	text += op.redirect
	if op.statusCode == results.CodeUnexpectedStatus {
		text += fmt.Sprintf("; expect.status is %v", op.p.Expect.Status)
	}
	return text
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

// lowerHeaders is a response's headers as rules see them: lower-case names,
// first value.
func lowerHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			out[strings.ToLower(k)] = v[0]
		}
	}
	return out
}
