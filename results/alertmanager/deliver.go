package alertmanager

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/toolpulse/toolpulse/results/httpsend"
)

// post sends batch once, as one JSON array, and classifies the answer.
// Alerts without an EndsAt are posted active until now + TTL.
func (n *Notifier) post(ctx context.Context, batch []postable, now time.Time) (retry bool, retryAfter time.Duration, err error) {
	out := make([]postable, len(batch))
	for i, p := range batch {
		if p.EndsAt.IsZero() {
			p.EndsAt = now.Add(n.ttl)
		}
		p.EndsAt = p.EndsAt.UTC()
		out[i] = p
	}
	body, err := json.Marshal(out)
	if err != nil {
		return false, 0, n.fail(nil, "encoding the alerts: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.endpoint, bytes.NewReader(body))
	if err != nil {
		return false, 0, n.fail(nil, "building the request: %s", httpsend.Detail(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "toolpulse")
	return n.sender().Post(n.client, req)
}

// sender is how a post is classified and its errors worded and scrubbed
// (results/httpsend, shared with the webhook receiver).
func (n *Notifier) sender() httpsend.Receiver {
	return httpsend.Receiver{Prefix: "alertmanager: ", Peer: "Alertmanager", Payload: "the alerts", Redact: n.redact, Now: n.now}
}

func (n *Notifier) fail(cause error, format string, args ...any) error {
	return n.sender().Fail(cause, format, args...)
}
