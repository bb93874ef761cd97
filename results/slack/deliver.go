package slack

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/toolpulse/toolpulse/results/httpsend"
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
// worth another attempt (and when), or refused for good. What slack-go
// reports on its own (its 429, Slack's ok:false, a 2xx it could not read)
// is decided here; every other status and transport error as for any HTTP
// receiver (results/httpsend):
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
	if status/100 == 2 {
		if _, ok := errors.AsType[goslack.StatusCodeError](err); ok {
			return false, 0, nil // slack-go wants exactly 200; a 204 delivered too
		}
		// The message most likely arrived; a retry could post it twice.
		return false, 0, n.fail(nil, "HTTP %d with an unreadable answer: %s", status, httpsend.Detail(err))
	}
	return n.sender().Classify(status, ans.header, ans.body, err)
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

// sender words and scrubs a failed delivery and classifies what slack-go
// leaves to any HTTP receiver (results/httpsend, shared with the webhook
// and Alertmanager receivers).
func (n *Notifier) sender() httpsend.Receiver {
	return httpsend.Receiver{Prefix: n.via + ": ", Peer: "Slack", Payload: "the message", Redact: n.redact, Reason: reason}
}

func (n *Notifier) fail(cause error, format string, args ...any) error {
	return n.sender().Fail(cause, format, args...)
}
