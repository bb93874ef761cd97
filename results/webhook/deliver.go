package webhook

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/toolpulse/toolpulse/results/httpsend"
)

// post sends body once and classifies the answer.
func (n *Notifier) post(ctx context.Context, body []byte) (retry bool, retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, n.fail(nil, "building the request: %s", httpsend.Detail(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "toolpulse")
	req.Header.Set(SignatureHeader, Sign(n.secret, body))
	return n.sender().Post(n.client, req)
}

// sender is how a post is classified and its errors worded and scrubbed
// (results/httpsend, shared with the Alertmanager receiver).
func (n *Notifier) sender() httpsend.Receiver {
	return httpsend.Receiver{Prefix: "webhook: ", Peer: "the receiver", Payload: "the alert", Redact: n.redact, Now: n.now}
}

func (n *Notifier) fail(cause error, format string, args ...any) error {
	return n.sender().Fail(cause, format, args...)
}
