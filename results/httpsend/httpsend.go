// Package httpsend is how toolpulse's HTTP receivers (results/alertmanager,
// results/webhook, results/slack) turn the answer to one delivery into the
// runner's Sender contract: delivered, worth another attempt (and when), or
// refused for good. It is the one place that decides what an HTTP status or
// a transport error means for a delivery, and it keeps credentials out of
// every error. Standard library only.
package httpsend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/toolpulse/toolpulse/results"
)

// maxReasonBody is how much of a refusal's body is read, and maxReason how
// much of it an error keeps: enough for a short reason, never a page.
const (
	maxReasonBody = 1024
	maxReason     = 200
)

// Receiver names a receiver in its errors and scrubs them.
type Receiver struct {
	Prefix  string // starts every error: "alertmanager: "
	Peer    string // who answers: "Alertmanager", "the receiver"
	Payload string // what is refused: "the alerts", "the alert"
	Redact  func(string) string
	Now     func() time.Time // for a Retry-After given as a date
	// Reason words the start of a refusal's body for an error, "" for a
	// body not worth quoting; nil quotes short printable text as " (text)".
	Reason func(body []byte) string
}

// Post sends req with client once and classifies the answer:
//
//	2xx                                   delivered
//	429, 408, 5xx                         retry, after the peer's Retry-After if it gave one
//	timeout, connection error, canceled   retry
//	other 4xx, other statuses             refused: the same payload would fail again
func (r Receiver) Post(client *http.Client, req *http.Request) (retry bool, retryAfter time.Duration, err error) {
	resp, err := client.Do(req)
	if err != nil {
		return r.Classify(0, nil, nil, err)
	}
	defer resp.Body.Close()
	var why []byte
	if resp.StatusCode/100 != 2 {
		why, _ = io.ReadAll(io.LimitReader(resp.Body, maxReasonBody))
	}
	// Drain a little so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return r.Classify(resp.StatusCode, resp.Header, why, nil)
}

// Classify is Post's verdict on one answer: status, its header and the
// start of its body when a response arrived; status 0 and err, the
// transport's failure, when none did.
func (r Receiver) Classify(status int, h http.Header, body []byte, err error) (retry bool, retryAfter time.Duration, _ error) {
	if status != 0 {
		why := r.reason(body)
		switch {
		case status/100 == 2:
			return false, 0, nil
		case status == http.StatusTooManyRequests:
			return true, r.retryAfter(h), r.Fail(nil, "rate limited (HTTP 429)%s", why)
		case status == http.StatusRequestTimeout || status >= 500:
			return true, r.retryAfter(h), r.Fail(nil, "HTTP %d%s", status, why)
		default:
			return false, 0, r.Fail(nil, "%s refused %s: HTTP %d%s", r.Peer, r.Payload, status, why)
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		// toolpulse is stopping: the alert stays in the outbox for later.
		return true, 0, r.Fail(context.Canceled, "canceled before %s answered", r.Peer)
	case isTimeout(err):
		return true, 0, r.Fail(context.DeadlineExceeded, "timeout: %s", Detail(err))
	}
	_, isURL := errors.AsType[*url.Error](err)
	_, isNet := errors.AsType[net.Error](err)
	if isURL || isNet {
		return true, 0, r.Fail(nil, "connection error: %s", Detail(err))
	}
	return false, 0, r.Fail(nil, "%s", Detail(err))
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return errors.Is(err, context.DeadlineExceeded) || ok && ne.Timeout()
}

// Detail is the cause of err without the request URL, which net/http puts
// in every *url.Error and which may hold credentials.
func Detail(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

func (r Receiver) reason(body []byte) string {
	if r.Reason != nil {
		return r.Reason(body)
	}
	return reason(body)
}

// reason is the start of a refusal's body as " (text)", when it is short
// printable text on one line; "" for anything else, so that an HTML error
// page never lands in the outbox's last_error.
func reason(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" || len(s) > maxReason || strings.HasPrefix(s, "<") {
		return ""
	}
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return ""
		}
	}
	return " (" + s + ")"
}

// retryAfter is the wait the peer's Retry-After asks for
// (results.ParseRetryAfter); 0, for none or one that does not parse, leaves
// the outbox's own back-off in charge.
func (r Receiver) retryAfter(h http.Header) time.Duration {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	wait, _ := results.ParseRetryAfter(h.Get("Retry-After"), now())
	return wait
}

// sendError is a failed delivery. Its text is scrubbed of every secret, and
// it unwraps only to a context error, so that no caller can reach the
// original *url.Error and print the URL from it.
type sendError struct {
	msg   string
	cause error
}

func (e *sendError) Error() string { return e.msg }
func (e *sendError) Unwrap() error { return e.cause }

// Fail is a failed delivery with the receiver's prefix, scrubbed; cause,
// when not nil, is what errors.Is may find under it.
func (r Receiver) Fail(cause error, format string, args ...any) error {
	msg := r.Prefix + fmt.Sprintf(format, args...)
	if r.Redact != nil {
		msg = r.Redact(msg)
	}
	return &sendError{msg: msg, cause: cause}
}
