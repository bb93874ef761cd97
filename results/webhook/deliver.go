package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// maxReasonBody is how much of a refusal's body is read, and maxReason how
// much of it an error keeps: enough for a short reason, never a page.
const (
	maxReasonBody = 1024
	maxReason     = 200
)

// post sends body once and classifies the answer.
func (n *Notifier) post(ctx context.Context, body []byte) (retry bool, retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, n.fail(nil, "building the request: %s", detail(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "toolpulse")
	req.Header.Set(SignatureHeader, Sign(n.secret, body))
	resp, err := n.client.Do(req)
	if err != nil {
		return n.classify(0, nil, nil, err)
	}
	defer resp.Body.Close()
	var why []byte
	if resp.StatusCode/100 != 2 {
		why, _ = io.ReadAll(io.LimitReader(resp.Body, maxReasonBody))
	}
	// Drain a little so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return n.classify(resp.StatusCode, resp.Header, why, nil)
}

// classify turns the result of one delivery into the Sender contract: done,
// worth another attempt (and when), or refused for good. It is the only
// place that decides what is retried.
//
//	2xx                                   delivered
//	429, 408, 5xx                         retry, after the receiver's Retry-After if it gave one
//	timeout, connection error, canceled   retry
//	other 4xx, other statuses             refused: the same body would fail again
func (n *Notifier) classify(status int, h http.Header, body []byte, err error) (retry bool, retryAfter time.Duration, _ error) {
	if err == nil {
		switch {
		case status/100 == 2:
			return false, 0, nil
		case status == http.StatusTooManyRequests:
			return true, n.retryAfterHeader(h), n.fail(nil, "rate limited (HTTP 429)%s", reason(body))
		case status == http.StatusRequestTimeout || status >= 500:
			return true, n.retryAfterHeader(h), n.fail(nil, "HTTP %d%s", status, reason(body))
		default:
			return false, 0, n.fail(nil, "the receiver refused the alert: HTTP %d%s", status, reason(body))
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		// toolpulse is stopping: the alert stays in the outbox for later.
		return true, 0, n.fail(context.Canceled, "canceled before the receiver answered")
	case isTimeout(err):
		return true, 0, n.fail(context.DeadlineExceeded, "timeout: %s", detail(err))
	}
	_, isURL := errors.AsType[*url.Error](err)
	_, isNet := errors.AsType[net.Error](err)
	if isURL || isNet {
		return true, 0, n.fail(nil, "connection error: %s", detail(err))
	}
	return false, 0, n.fail(nil, "%s", detail(err))
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return errors.Is(err, context.DeadlineExceeded) || ok && ne.Timeout()
}

// detail is the cause of err without the request URL, which net/http puts
// in every *url.Error and which may hold the webhook's credential.
func detail(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

// reason is the start of a refusal's body as " (text)", when it is short
// printable text on one line; "" for anything else, so that an HTML error
// page never lands in the outbox's last_error.
func reason(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" || len(s) > maxReason || strings.HasPrefix(s, "<") {
		return ""
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return ""
		}
	}
	return " (" + s + ")"
}

// retryAfterHeader reads a Retry-After in seconds or as an HTTP date;
// anything else leaves the outbox's own back-off in charge.
func (n *Notifier) retryAfterHeader(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return max(time.Duration(s)*time.Second, 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(n.now()), 0)
	}
	return 0
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

func (n *Notifier) fail(cause error, format string, args ...any) error {
	return &sendError{msg: n.redact("webhook: " + fmt.Sprintf(format, args...)), cause: cause}
}
