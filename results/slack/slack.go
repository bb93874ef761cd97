// Package slack delivers toolpulse alerts to Slack, through an incoming
// webhook or a bot token: it renders an alert as Block Kit with a
// plain-text fallback inside Slack's limits, escapes and redacts every text,
// and classifies each delivery as done, worth retrying, or refused for good.
// It is the only package that imports slack-go.
package slack

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/toolpulse/toolpulse/results"
)

// Config says where and how alerts are delivered: a webhook, or a bot token
// with a channel.
type Config struct {
	// WebhookURL is an incoming webhook. It is a secret: it never appears
	// in an error or a message.
	WebhookURL string
	// Token is a bot token (xoxb-...), used with Channel. A secret too.
	Token   string
	Channel string
	// APIURL is a Slack-compatible Web API endpoint, for tests; "" is
	// Slack itself. Used with Token only. A missing trailing "/" is added.
	APIURL string
	// HTTPClient sends the requests; nil means a client with a 10 s
	// timeout, so that a hung Slack cannot hold an outbox worker forever.
	HTTPClient *http.Client
	// Redactor scrubs known secrets from every text of a message and of
	// an error; nil scrubs only the webhook URL and token.
	Redactor *results.Redactor
	// BaseURL is toolpulse's own status page (server.listen as seen by
	// readers); when set, messages link to the probe's recent runs.
	BaseURL string
}

// defaultTimeout bounds one delivery when the caller gives no client.
const defaultTimeout = 10 * time.Second

// Notifier sends alerts to one Slack destination. It implements the
// runner's Sender and is safe for concurrent use.
type Notifier struct {
	webhookURL string
	token      string
	channel    string
	apiURL     string
	client     *http.Client
	redactor   *results.Redactor
	// secrets scrubs the destination's own credentials, which the
	// configured Redactor may not know about.
	secrets *results.Redactor
	baseURL string
	// via names the destination in errors without revealing it.
	via string
}

// New returns a Notifier for cfg. It fails when cfg names neither or both of
// a webhook and a token, a token without a channel, or a URL that is not an
// absolute http(s) URL; no error repeats a URL, as it may hold the secret.
func New(cfg Config) (*Notifier, error) {
	switch {
	case cfg.WebhookURL == "" && cfg.Token == "":
		return nil, errors.New("slack: give a webhook URL, or a bot token with a channel")
	case cfg.WebhookURL != "" && cfg.Token != "":
		return nil, errors.New("slack: give a webhook URL or a bot token, not both")
	case cfg.Token != "" && cfg.Channel == "":
		return nil, errors.New("slack: a bot token needs a channel to post to")
	case cfg.WebhookURL != "" && cfg.Channel != "":
		return nil, errors.New("slack: a webhook posts to its own channel; channel goes with a bot token")
	}
	n := &Notifier{
		webhookURL: cfg.WebhookURL,
		token:      cfg.Token,
		channel:    cfg.Channel,
		client:     cfg.HTTPClient,
		redactor:   cfg.Redactor,
		baseURL:    cfg.BaseURL,
	}
	if n.client == nil {
		n.client = &http.Client{Timeout: defaultTimeout}
	}
	secrets := []string{cfg.WebhookURL, cfg.Token}
	if cfg.WebhookURL != "" {
		u, err := parseHTTPURL(cfg.WebhookURL)
		if err != nil {
			return nil, errors.New("slack: webhook URL: " + err.Error())
		}
		// The path is the credential of a webhook (/services/T…/B…/secret);
		// scrub it alone too, in case a library prints the URL re-encoded.
		// Short paths are left alone: scrubbing "/hook" from every error
		// would hide more than it protects.
		if len(u.Path) >= 8 {
			secrets = append(secrets, u.Path, u.EscapedPath())
		}
		n.via = "slack webhook"
	} else {
		n.apiURL = goslack.APIURL
		if cfg.APIURL != "" {
			if _, err := parseHTTPURL(cfg.APIURL); err != nil {
				return nil, errors.New("slack: API URL: " + err.Error())
			}
			// slack-go appends the method name to the endpoint as is.
			n.apiURL = strings.TrimSuffix(cfg.APIURL, "/") + "/"
		}
		n.via = "slack chat.postMessage"
	}
	n.secrets = results.NewRedactor(secrets...)
	return n, nil
}

// parseHTTPURL accepts an absolute http or https URL. Its errors never quote
// the URL, unlike url.Parse's.
func parseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("not an absolute http(s) URL")
	}
	return u, nil
}

// Render returns exactly what Send posts for a: Render's layout, with every
// secret the Notifier knows scrubbed and the status-page link added.
func (n *Notifier) Render(a results.Alert) Message {
	return render(n.redactAlert(a), n.baseURL)
}

// redact scrubs s of the configured secrets and the destination's own.
func (n *Notifier) redact(s string) string {
	return n.secrets.Redact(n.redactor.Redact(s))
}

// redactAlert returns a copy of a with every text field scrubbed. It runs
// before rendering, not after, for two reasons: a secret must be matched
// before escaping changes its characters, and the "<redacted>" marker must
// be escaped like any other text, or Slack would parse it as a link.
func (n *Notifier) redactAlert(a results.Alert) results.Alert {
	a.Probe = n.redact(a.Probe)
	a.OperationID = n.redact(a.OperationID)
	a.Code = results.Code(n.redact(string(a.Code)))
	a.Message = n.redact(a.Message)
	a.Target = n.redact(a.Target)
	a.ResponseExcerpt = n.redact(a.ResponseExcerpt)
	a.Consumer.Name = n.redact(a.Consumer.Name)
	a.Consumer.Version = n.redact(a.Consumer.Version)
	a.Consumer.RuleHash = n.redact(a.Consumer.RuleHash)
	if a.Drift != nil {
		d := *a.Drift // the caller's drift stays untouched
		d.Baseline, d.Current = n.redact(d.Baseline), n.redact(d.Current)
		d.Diff = make([]string, len(a.Drift.Diff))
		for i, l := range a.Drift.Diff {
			d.Diff[i] = n.redact(l)
		}
		d.Before, d.After = n.redact(d.Before), n.redact(d.After)
		a.Drift = &d
	}
	return a
}

// Send posts a to Slack once. retry says whether another attempt may
// succeed (rate limits, 5xx, timeouts, connection errors); retryAfter is
// Slack's own wish when it gave one. A refused message (bad payload,
// unknown channel, bad credentials) is not retried. err never contains the
// webhook URL or the token. Send does not retry by itself: the outbox owns
// the schedule, so that Slack being slow never delays a probe.
func (n *Notifier) Send(ctx context.Context, a results.Alert) (retry bool, retryAfter time.Duration, err error) {
	return n.post(ctx, n.Render(a))
}

// SendGroup posts g to Slack once, as one message (RenderGroup), and
// answers as Send does.
func (n *Notifier) SendGroup(ctx context.Context, g results.AlertGroup) (retry bool, retryAfter time.Duration, err error) {
	return n.post(ctx, n.RenderGroup(g))
}

// RenderGroup returns exactly what SendGroup posts for g, scrubbed and
// linked as Render's.
func (n *Notifier) RenderGroup(g results.AlertGroup) Message {
	alerts := make([]results.Alert, len(g.Alerts))
	for i, a := range g.Alerts {
		alerts[i] = n.redactAlert(a)
	}
	g.Alerts = alerts
	labels := make(map[string]string, len(g.Labels))
	for k, v := range g.Labels {
		labels[k] = n.redact(v)
	}
	g.Labels = labels
	return renderGroup(g, n.baseURL)
}

// post posts m once; see Send.
func (n *Notifier) post(ctx context.Context, m Message) (retry bool, retryAfter time.Duration, err error) {
	// A per-call copy of the client whose transport remembers the answer:
	// slack-go drops the status of some failures and every reason Slack
	// gives in a webhook's body ("invalid_payload", "channel_is_archived").
	rec := &recorder{base: n.client.Transport}
	if rec.base == nil {
		rec.base = http.DefaultTransport
	}
	client := *n.client
	client.Transport = rec
	no := false
	if n.webhookURL != "" {
		err = goslack.PostWebhookCustomHTTPContext(ctx, n.webhookURL, &client, &goslack.WebhookMessage{
			Text:        m.Text,
			Blocks:      &goslack.Blocks{BlockSet: m.Blocks},
			UnfurlLinks: &no,
			UnfurlMedia: &no,
		})
	} else {
		api := goslack.New(n.token, goslack.OptionHTTPClient(&client), goslack.OptionAPIURL(n.apiURL))
		_, _, err = api.PostMessageContext(ctx, n.channel,
			goslack.MsgOptionText(m.Text, false), // already escaped by Render
			goslack.MsgOptionBlocks(m.Blocks...),
			goslack.MsgOptionDisableLinkUnfurl(),
			goslack.MsgOptionDisableMediaUnfurl(),
		)
	}
	return n.classify(err, rec.answer)
}
