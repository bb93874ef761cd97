package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	goslack "github.com/slack-go/slack"
)

// maxReasonBody is how much of a refusal's body is kept: enough for Slack's
// one-word reasons and {"ok":false,"error":"..."}, never a whole HTML page.
const maxReasonBody = 1024

// answer is what the receiver sent back to the last request of one Send.
// status is 0 when no response arrived.
type answer struct {
	status int
	header http.Header
	body   []byte // the start of a non-2xx body
}

// recorder is a RoundTripper that remembers the answer and lets the body
// flow on untouched to slack-go.
type recorder struct {
	base   http.RoundTripper
	answer answer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	r.answer = answer{status: resp.StatusCode, header: resp.Header.Clone()}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxReasonBody))
		r.answer.body = b
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	}
	return resp, nil
}

// transientReasons are ok:false errors of the Web API that say "not now"
// rather than "never": Slack's own troubles, not the message's.
var transientReasons = map[string]bool{
	"ratelimited":         true,
	"rate_limited":        true,
	"internal_error":      true,
	"fatal_error":         true,
	"service_unavailable": true,
	"request_timeout":     true,
}

// classify turns the result of one delivery into the Sender contract: done,
// worth another attempt (and when), or refused for good. It is the only
// place that decides what is retried.
//
//	2xx                                   delivered
//	429                                   retry, after Slack's Retry-After
//	408, 5xx, timeout, connection error   retry
//	other 4xx, ok:false (invalid_blocks,
//	channel_not_found, invalid_auth…)     refused: the same message would fail again
func (n *Notifier) classify(err error, ans answer) (retry bool, retryAfter time.Duration, _ error) {
	if err == nil {
		return false, 0, nil
	}
	status := ans.status
	if sce, ok := errors.AsType[goslack.StatusCodeError](err); ok {
		status = sce.Code
	}
	if rl, ok := errors.AsType[*goslack.RateLimitedError](err); ok {
		return true, max(rl.RetryAfter, 0), n.fail(nil, "rate limited (HTTP 429), retry after %s", rl.RetryAfter)
	}
	if ser, ok := errors.AsType[goslack.SlackErrorResponse](err); ok {
		// The Web API answers HTTP 200 with ok:false, for its own troubles too.
		if transientReasons[ser.Err] {
			return true, 0, n.fail(nil, "Slack failed: %s", ser.Err)
		}
		return false, 0, n.fail(nil, "Slack refused the message: %s", ser.Err)
	}
	why := reason(ans.body)
	switch {
	case status/100 == 2:
		if _, ok := errors.AsType[goslack.StatusCodeError](err); ok {
			return false, 0, nil // slack-go wants exactly 200; a 204 delivered too
		}
		// The message most likely arrived; a retry could post it twice.
		return false, 0, n.fail(nil, "HTTP %d with an unreadable answer: %s", status, detail(err))
	case status == http.StatusTooManyRequests:
		return true, retryAfterHeader(ans.header), n.fail(nil, "rate limited (HTTP 429)%s", why)
	case status == http.StatusRequestTimeout || status >= 500:
		return true, retryAfterHeader(ans.header), n.fail(nil, "HTTP %d%s", status, why)
	case status != 0:
		return false, 0, n.fail(nil, "Slack refused the message: HTTP %d%s", status, why)
	}
	// No answer arrived.
	switch {
	case errors.Is(err, context.Canceled):
		// toolpulse is stopping: the alert stays in the outbox for later.
		return true, 0, n.fail(context.Canceled, "canceled before Slack answered")
	case isTimeout(err):
		return true, 0, n.fail(context.DeadlineExceeded, "timeout: %s", detail(err))
	}
	_, isURL := errors.AsType[*url.Error](err)
	_, isNet := errors.AsType[net.Error](err)
	if isURL || isNet {
		return true, 0, n.fail(nil, "connection error: %s", detail(err))
	}
	// The request could not even be built: the same alert would fail again.
	return false, 0, n.fail(nil, "%s", detail(err))
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return errors.Is(err, context.DeadlineExceeded) || ok && ne.Timeout()
}

// detail is the cause of err without the request URL, which net/http puts
// in every *url.Error and which, for a webhook, is the credential itself.
func detail(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

var reasonPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,79}$`)

// reason is Slack's one-word reason in a refusal's body ("invalid_payload",
// or the error of {"ok":false,"error":"invalid_auth"}), as " reason"; ""
// for anything else, so an HTML error page never lands in an alert's log.
func reason(body []byte) string {
	b := bytes.TrimSpace(body)
	var j struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &j) == nil && j.Error != "" {
		b = []byte(j.Error)
	}
	if !reasonPattern.Match(b) {
		return ""
	}
	return " " + string(b)
}

// retryAfterHeader reads a Retry-After in seconds, the only form Slack
// sends; anything else leaves the outbox's own back-off in charge.
func retryAfterHeader(h http.Header) time.Duration {
	s, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// sendError is a failed delivery. Its text is scrubbed of every secret, and
// it unwraps only to a context error, so that no caller can reach the
// original *url.Error and print the webhook URL from it.
type sendError struct {
	msg   string
	cause error
}

func (e *sendError) Error() string { return e.msg }
func (e *sendError) Unwrap() error { return e.cause }

func (n *Notifier) fail(cause error, format string, args ...any) error {
	return &sendError{msg: n.redact(n.via + ": " + fmt.Sprintf(format, args...)), cause: cause}
}
