// Package webhook delivers toolpulse alerts to any HTTP endpoint as one
// JSON object per alert, signed with HMAC-SHA256 so that the receiver can
// tell toolpulse's posts from anyone else's, and classifies each delivery
// as done, worth retrying, or refused for good. It uses only the standard
// library.
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of the exact
// body bytes, keyed with the configured secret.
const SignatureHeader = "X-Toolpulse-Signature"

// Config says where alerts are posted and how they are signed.
type Config struct {
	// URL receives the POSTs. It is treated as a secret (it may carry a
	// token in its path or query): it never appears in an error.
	URL string
	// Secret keys the body's signature. It never appears in an error, a
	// log or a body.
	Secret string
	// HTTPClient sends the requests; nil means a client with a 10 s
	// timeout, so that a hung receiver cannot hold the outbox forever.
	HTTPClient *http.Client
	// Redactor scrubs known secrets from every text of a body and of an
	// error; nil scrubs only the URL and the secret.
	Redactor *results.Redactor
	// BaseURL is toolpulse's own address as readers see it
	// (server.public_url); when set, bodies link to the probe's runs.
	BaseURL string
	// Now reads the clock, for Retry-After dates; nil is time.Now.
	Now func() time.Time
}

// defaultTimeout bounds one delivery when the caller gives no client.
const defaultTimeout = 10 * time.Second

// Notifier posts alerts to one webhook. It implements the runner's Sender
// and is safe for concurrent use.
type Notifier struct {
	url      string
	secret   []byte
	client   *http.Client
	redactor *results.Redactor
	// secrets scrubs the destination's own URL and secret, which the
	// configured Redactor may not know about.
	secrets *results.Redactor
	baseURL string
	now     func() time.Time
}

// New returns a Notifier for cfg. It fails when the URL is not an absolute
// http(s) URL or the secret is empty (an unsigned alert could be forged by
// anyone who finds the endpoint); no error repeats the URL or the secret.
func New(cfg Config) (*Notifier, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("webhook: URL: not an absolute http(s) URL")
	}
	if cfg.Secret == "" {
		return nil, errors.New("webhook: a secret is required to sign the body")
	}
	n := &Notifier{
		url:      cfg.URL,
		secret:   []byte(cfg.Secret),
		client:   cfg.HTTPClient,
		redactor: cfg.Redactor,
		baseURL:  cfg.BaseURL,
		now:      cfg.Now,
	}
	if n.client == nil {
		n.client = &http.Client{Timeout: defaultTimeout}
	}
	if n.now == nil {
		n.now = time.Now
	}
	secrets := []string{cfg.URL, cfg.Secret, u.Redacted()}
	// The path and query are where a webhook's credential usually lives;
	// scrub them alone too, in case a library prints the URL re-encoded.
	// Short ones are left alone: scrubbing "/hook" from every error would
	// hide more than it protects.
	for _, s := range []string{u.Path, u.EscapedPath(), u.RawQuery} {
		if len(s) >= 8 {
			secrets = append(secrets, s)
		}
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if len(v) >= 8 {
				secrets = append(secrets, v, url.QueryEscape(v))
			}
		}
	}
	if p, ok := u.User.Password(); ok {
		secrets = append(secrets, p)
	}
	n.secrets = results.NewRedactor(secrets...)
	return n, nil
}

// Sign returns the value of SignatureHeader for body under secret:
// "sha256=" and the hex HMAC-SHA256 of the exact bytes.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether signature is the SignatureHeader value of body
// under secret, comparing in constant time. Receivers written in Go may
// use it; it is what the tests check Sign against.
func Verify(secret, body []byte, signature string) bool {
	return hmac.Equal([]byte(signature), []byte(Sign(secret, body)))
}

// Send posts a once, signed. retry says whether another attempt may succeed
// (429, 408, 5xx, timeouts, connection errors); retryAfter is the
// receiver's own wish when it gave one. Any other answer but 2xx refuses
// the alert for good. err never contains the URL or the secret. Send does
// not retry by itself: the outbox owns the schedule.
func (n *Notifier) Send(ctx context.Context, a results.Alert) (retry bool, retryAfter time.Duration, err error) {
	body, err := n.Body(a)
	if err != nil {
		return false, 0, n.fail(nil, "encoding the alert: %v", err)
	}
	return n.post(ctx, body)
}
