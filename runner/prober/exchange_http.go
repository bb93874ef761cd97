package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// httpExchange is a probe's request: one attempt is one HTTP request and
// its response, body included, bounded by the attempt's context.
//
// go-retryablehttp carries each attempt with its own retrying off
// (RetryMax 0, a CheckRetry that always says no, so one Do is one
// request): the attempt loop owns the policy, the budget and the records.
// Do rewinds the []byte body for every attempt, runs readBody inside Do
// with the body open, and with PassthroughErrorHandler returns the real
// cause for codeOf, not a "giving up after" text.
type httpExchange struct {
	e       *Executor
	s       *checks.Step
	maxBody int64 // the probe's max_body_bytes
	req     *retryablehttp.Request
	client  http.Client          // the redirect policy around the probe's shared transport and its guarded ones
	retry   retryablehttp.Client // one request per Do, see above
	auth    *bearer              // the OAuth client credentials; nil without

	// What the last attempt received.
	status   int
	header   http.Header
	body     []byte
	redirect string // redirectNote of the response, for its messages
}

// newHTTPExchange builds s's request around the shared transport t.
// With auth, every attempt carries its OAuth token.
func newHTTPExchange(e *Executor, s *checks.Step, maxBody int64, t http.RoundTripper, auth *bearer) (*httpExchange, error) {
	req, err := newRequest(s.Request, e.userAgent)
	if err != nil {
		return nil, err
	}
	x := &httpExchange{e: e, s: s, maxBody: maxBody, req: req, auth: auth}
	req.SetResponseHandler(x.readBody)
	// Every transport leaves DisableCompression false on purpose: it then
	// asks for gzip and decodes it, and max_body_bytes counts decoded bytes.
	// The per-attempt timeout is the attempt's context, which covers the
	// body too, since the body is read inside the attempt.
	// The client has no Timeout, so a RoundTripper of our own in front of
	// the shared transport costs nothing (see newSharedTransport).
	x.client = http.Client{
		Transport:     &redirectTransport{pool: &e.transports, first: t, host: req.URL.Hostname()},
		CheckRedirect: redirectPolicy(s.Request),
	}
	x.retry = retryablehttp.Client{
		HTTPClient:   &x.client,
		Logger:       nil, // its own logging would print every request to stderr
		RetryMax:     0,
		CheckRetry:   func(_ context.Context, _ *http.Response, _ error) (bool, error) { return false, nil },
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	return x, nil
}

// attempt sends the request once and reads the response, judging the
// status by expect.status. A status that fails keeps the body read for the
// sample, and decides the code whatever happened to the body.
func (x *httpExchange) attempt(a *attempt) attemptResult {
	if x.auth == nil {
		return x.send(a)
	}
	return x.auth.attempt(a, func(token string) sent {
		if token == "" {
			x.req.Header.Del("Authorization")
		} else {
			x.req.Header.Set("Authorization", "Bearer "+token)
		}
		res := x.send(a)
		return sent{method: x.req.Method, res: res, unauthorized: x.status == http.StatusUnauthorized, challenges: x.header.Values("WWW-Authenticate")}
	})
}

// send sends the request once, as it stands.
func (x *httpExchange) send(a *attempt) attemptResult {
	x.status, x.header, x.body, x.redirect = 0, nil, nil, ""
	resp, err := x.retry.Do(x.req.WithContext(a.ctx))
	if resp != nil {
		resp.Body.Close() // readBody closed it already; a failure before it may not have
		x.status, x.header = resp.StatusCode, resp.Header
		x.redirect = redirectNote(resp, x.s.Request.NoRedirects)
	}
	res := attemptResult{httpStatus: x.status}
	if resp != nil {
		if code := codeOf(nil, x.status, x.s.Expect.Status); code != "" {
			res.code, res.message = code, x.statusText(code)
			res.retryAfter, res.retryAfterSet = retryAfter(resp, x.e.now())
			return res
		}
	}
	if err != nil {
		phase := phaseHeaders
		if resp != nil {
			phase = phaseBody
		}
		res.code, res.message = a.failure(err, phase)
	}
	return res
}

// answer is the last response's body, status and headers.
func (x *httpExchange) answer() ([]byte, answerMeta) {
	return x.body, answerMeta{status: x.status, headers: lowerHeaders(x.header)}
}

// newRequest builds request r: URL with the query merged, the JSON
// fixture or raw body, and the configured headers.
func newRequest(r checks.Request, userAgent string) (*retryablehttp.Request, error) {
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
	req, err := retryablehttp.NewRequest(method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
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

// readBody is the request's response handler: retryablehttp calls it within
// the attempt, so the attempt's timeout covers the body and a slow body is
// a timeout of that attempt. It keeps at most max_body_bytes decoded bytes.
func (x *httpExchange) readBody(resp *http.Response) error {
	defer resp.Body.Close()
	limit := x.maxBody
	if resp.ContentLength > limit {
		return &tooLargeError{limit: limit, declared: resp.ContentLength}
	}
	body, err := x.e.readCapped(resp.Body, limit, resp.ContentLength)
	x.body = body
	if err != nil {
		return err
	}
	if int64(len(body)) > limit {
		x.body = body[:limit]
		return &tooLargeError{limit: limit, declared: -1}
	}
	return nil
}

// statusText describes the attempt's HTTP status, which codeOf judged
// as code.
func (x *httpExchange) statusText(code results.Code) string {
	text := fmt.Sprintf("HTTP %d", x.status)
	if s := http.StatusText(x.status); s != "" {
		text += " " + s
	}
	text += x.redirect
	if code == results.CodeUnexpectedStatus {
		text += fmt.Sprintf("; expect.status is %v", x.s.Expect.Status)
	}
	return text
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
