// Package alertmanager delivers toolpulse alerts to a Prometheus
// Alertmanager through its v2 API (POST /api/v2/alerts), so that teams
// that already route, group, silence and page with Alertmanager get
// toolpulse's alerts there. It uses only the standard library.
//
// Alertmanager holds state where toolpulse sends events: an alert is
// active until its endsAt, and a client must post a firing alert again
// and again to keep it active (a posted alert without endsAt is resolved
// after the server's resolve_timeout, 5m by default). toolpulse makes one
// firing alert per failure and a reminder per repeat_interval (an hour by
// default), so the Notifier bridges the two:
//
//   - Send posts a firing or reminder alert with endsAt = now + TTL
//     (default 5m) and remembers it as the probe's active alert; Run
//     re-posts every remembered alert every RepostInterval (default 1m)
//     with a fresh endsAt, until a resolved alert for the probe arrives,
//     which Send posts with endsAt = now before it forgets the probe.
//   - endsAt is always set, rather than left to resolve_timeout, so that
//     the alert's lifetime does not depend on the server's configuration,
//     and so that if toolpulse stops (or loses the network) its alerts
//     resolve themselves within TTL instead of staying active forever.
//     TTL is five re-post intervals: a few failed re-posts in a row do not
//     resolve an alert that is still failing.
//   - An alert's identity in Alertmanager is its label set, and the
//     outcome and code are labels (so that routes and inhibitions can use
//     them). When a firing probe's outcome or code changes, Send resolves
//     the label set it posted before in the same request that fires the
//     new one, so that one failure is never shown twice.
//   - A flapping alert is a state, as a firing one: it becomes the
//     probe's active alert (alertname ToolpulseProbeFlapping, so the
//     firing label set before it is ended in the same post) until the
//     firing or resolved alert that says where the probe settled.
//   - A location_silent alert (alertname ToolpulseLocationSilent, with a
//     location label and no outcome or code) is a state of one location of
//     a probe, kept and re-posted beside the probe's own active alert until
//     its location_back ends it.
//   - A shape_drift alert is an event, not a state: it is posted once,
//     with endsAt = now + DriftTTL (default 1h, the window in which a
//     probe's drift to one shape is alerted once), and never re-posted.
//
// Re-posts go straight to Alertmanager, not through the outbox: they
// carry nothing new, and a failed one is simply tried again at the next
// interval (and logged). Every post, Send's and Run's, is serialised, so
// that a re-post of an alert can never reach Alertmanager after its
// resolve. The remembered alerts live in memory; after a restart (or a
// reload that changes the receiver) the daemon gives a new Notifier what
// the store says it last posted for each failure still firing (Restore),
// so a probe that is still failing stays active.
package alertmanager

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// Alert names: the alertname label of each kind of alert.
const (
	// AlertNameFailing names firing, reminder and resolved alerts.
	AlertNameFailing = "ToolpulseProbeFailing"
	// AlertNameDrift names shape_drift alerts.
	AlertNameDrift = "ToolpulseShapeDrift"
	// AlertNameFlapping names flapping alerts: active until the firing or
	// resolved alert that says where the probe settled replaces it.
	AlertNameFlapping = "ToolpulseProbeFlapping"
	// AlertNameLocationSilent names location_silent alerts: one location
	// of a probe recorded no run; active until its location_back.
	AlertNameLocationSilent = "ToolpulseLocationSilent"
)

// Defaults of Config.
const (
	DefaultRepostInterval = time.Minute
	DefaultDriftTTL       = time.Hour
	// ttlIntervals is how many re-post intervals an alert outlives its
	// last post by, when Config.TTL is not set.
	ttlIntervals = 5
	// defaultTimeout bounds one post when the caller gives no client.
	defaultTimeout = 10 * time.Second
)

// Config says where alerts go and how they are kept active.
type Config struct {
	// URL is Alertmanager's base URL (http://127.0.0.1:9093); alerts are
	// posted to URL/api/v2/alerts. Credentials in it (user:password@) are
	// secrets and never appear in an error.
	URL string
	// HTTPClient sends the requests; nil means a client with a 10 s
	// timeout, so that a hung Alertmanager cannot hold the outbox forever.
	HTTPClient *http.Client
	// Redactor scrubs known secrets from every label, annotation and
	// error; nil scrubs only the URL's credentials.
	Redactor *results.Redactor
	// BaseURL is toolpulse's own address as readers see it
	// (server.public_url); when set, alerts link to the probe's runs.
	BaseURL string
	// RepostInterval is how often Run re-posts the active alerts. Default
	// DefaultRepostInterval.
	RepostInterval time.Duration
	// TTL is how long after a post an active alert ends unless posted
	// again; it must exceed RepostInterval. Default 5 × RepostInterval.
	TTL time.Duration
	// DriftTTL is how long a shape_drift alert stays active. Default
	// DefaultDriftTTL.
	DriftTTL time.Duration
	// Logger receives failed re-posts; nil discards them.
	Logger *slog.Logger
	// Now reads the clock; nil is time.Now.
	Now func() time.Time
}

// Notifier posts alerts to one Alertmanager and keeps the firing ones
// active. It implements the runner's Sender; start Run to re-post. It is
// safe for concurrent use.
type Notifier struct {
	endpoint string
	client   *http.Client
	redactor *results.Redactor
	secrets  *results.Redactor
	baseURL  string
	interval time.Duration
	ttl      time.Duration
	driftTTL time.Duration
	logger   *slog.Logger
	now      func() time.Time

	// posting is held (a one-slot semaphore, so that a waiter can give
	// up with its context) for the whole of each post and the update of
	// active that follows it: a re-post taken from active before a
	// resolve must not land after it.
	posting chan struct{}
	// active holds the alert last posted as firing for each probe, by
	// probe name. Guarded by posting.
	active map[string]postable
}

// New returns a Notifier for cfg. It fails when the URL is not an absolute
// http(s) URL or TTL does not exceed RepostInterval; no error repeats the
// URL.
func New(cfg Config) (*Notifier, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("alertmanager: URL: not an absolute http(s) URL")
	}
	n := &Notifier{
		endpoint: strings.TrimRight(cfg.URL, "/") + "/api/v2/alerts",
		client:   cfg.HTTPClient,
		redactor: cfg.Redactor,
		baseURL:  cfg.BaseURL,
		interval: cfg.RepostInterval,
		ttl:      cfg.TTL,
		driftTTL: cfg.DriftTTL,
		logger:   cfg.Logger,
		now:      cfg.Now,
		posting:  make(chan struct{}, 1),
		active:   map[string]postable{},
	}
	if n.client == nil {
		n.client = &http.Client{Timeout: defaultTimeout}
	}
	if n.interval <= 0 {
		n.interval = DefaultRepostInterval
	}
	if n.ttl <= 0 {
		n.ttl = ttlIntervals * n.interval
	}
	if n.ttl <= n.interval {
		return nil, errors.New("alertmanager: the TTL must be longer than the re-post interval, or alerts would flap between posts")
	}
	if n.driftTTL <= 0 {
		n.driftTTL = DefaultDriftTTL
	}
	if n.logger == nil {
		n.logger = slog.New(slog.DiscardHandler)
	}
	if n.now == nil {
		n.now = time.Now
	}
	secrets := []string{cfg.URL, n.endpoint}
	if p, ok := u.User.Password(); ok {
		secrets = append(secrets, p, u.User.String())
	}
	n.secrets = results.NewRedactor(secrets...)
	return n, nil
}

// Restore takes alerts as the probes' active alerts, as if Send had
// posted them: what a previous process of toolpulse last told this
// Alertmanager is failing (see the store's FiringAlerts), so that Run
// keeps them active after a restart instead of letting them end within
// TTL. Only firing, reminder and update alerts are taken; a probe Send
// has already posted for keeps what Send posted, which is newer.
func (n *Notifier) Restore(ctx context.Context, alerts []results.Alert) error {
	if err := n.lock(ctx); err != nil {
		return err
	}
	defer n.unlock()
	for _, a := range alerts {
		switch a.Kind {
		case results.AlertFiring, results.AlertReminder, results.AlertUpdate, results.AlertFlapping:
			if _, ok := n.active[a.Probe]; !ok {
				n.active[a.Probe] = n.postable(a)
			}
		case results.AlertLocationSilent:
			if _, ok := n.active[silentKey(a)]; !ok {
				n.active[silentKey(a)] = n.postable(a)
			}
		}
	}
	return nil
}

// lock takes the posting slot, or gives up when ctx ends first.
func (n *Notifier) lock(ctx context.Context) error {
	select {
	case n.posting <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n *Notifier) unlock() { <-n.posting }

// Send posts a once: a firing or reminder alert becomes the probe's active
// alert (resolving the one before it when its labels differ), a resolved
// alert ends it, a shape_drift alert is posted for DriftTTL. A resolved
// alert for a probe with no active alert here has nothing to end and is
// delivered as is. retry says whether another attempt may succeed (429,
// 408, 5xx, timeouts, connection errors); retryAfter is Alertmanager's
// own wish when it gave one. err never contains the URL's credentials.
func (n *Notifier) Send(ctx context.Context, a results.Alert) (retry bool, retryAfter time.Duration, err error) {
	return n.sendAll(ctx, []results.Alert{a})
}

// SendGroup posts the alerts of g (notify.group_by) in one request, each
// as Send would post it alone, in order, and changes the active alerts as
// Send does once the request succeeded; it answers as Send does.
// Alertmanager groups the alerts by its own route again: one request
// rather than one per alert is what toolpulse's grouping gives it.
func (n *Notifier) SendGroup(ctx context.Context, g results.AlertGroup) (retry bool, retryAfter time.Duration, err error) {
	return n.sendAll(ctx, g.Alerts)
}

// sendAll posts alerts in one request and takes their effect on the
// active alerts when it succeeded. Nothing to post (a resolve of a probe
// with no active alert here) is a success.
func (n *Notifier) sendAll(ctx context.Context, alerts []results.Alert) (retry bool, retryAfter time.Duration, err error) {
	if err := n.lock(ctx); err != nil {
		return true, 0, n.fail(err, "canceled while waiting for another post")
	}
	defer n.unlock()
	now := n.now()
	// next is the active alert of each probe the alerts touch once they
	// are posted, nil for one they end; a later alert of the same probe
	// builds on an earlier one's.
	next := map[string]*postable{}
	active := func(probe string) (postable, bool) {
		if p, ok := next[probe]; ok {
			if p == nil {
				return postable{}, false
			}
			return *p, true
		}
		p, ok := n.active[probe]
		return p, ok
	}
	var batch []postable
	for _, a := range alerts {
		switch a.Kind {
		case results.AlertFiring, results.AlertReminder, results.AlertUpdate, results.AlertFlapping:
			// An update is the same failure in another mode: its labels
			// (outcome, code) differ, so the old label set is ended with it.
			// So is a flapping alert (another alertname), and the firing
			// alert of a flapping probe that settled failing.
			p := n.postable(a)
			batch = append(batch, p)
			if prev, ok := active(a.Probe); ok && !sameLabels(prev.Labels, p.Labels) {
				batch = append(batch, prev.ending(now))
			}
			next[a.Probe] = &p
		case results.AlertResolved:
			if prev, ok := active(a.Probe); ok {
				batch = append(batch, prev.ending(now))
				next[a.Probe] = nil
			}
		case results.AlertDrift:
			p := n.postable(a)
			p.EndsAt = now.Add(n.driftTTL)
			batch = append(batch, p)
		case results.AlertLocationSilent:
			// Active, and re-posted, until the location records again:
			// an alert of its own beside the probe's.
			p := n.postable(a)
			batch = append(batch, p)
			next[silentKey(a)] = &p
		case results.AlertLocationBack:
			if prev, ok := active(silentKey(a)); ok {
				batch = append(batch, prev.ending(now))
				next[silentKey(a)] = nil
			}
		default:
			return false, 0, n.fail(nil, "unknown alert kind %q", a.Kind)
		}
	}
	if len(batch) == 0 {
		return false, 0, nil
	}
	if retry, retryAfter, err = n.post(ctx, batch, now); err != nil {
		return retry, retryAfter, err
	}
	for probe, p := range next {
		if p == nil {
			delete(n.active, probe)
		} else {
			n.active[probe] = *p
		}
	}
	return false, 0, nil
}

// Run re-posts the active alerts every RepostInterval until ctx ends, then
// returns; it starts no goroutine. A failed re-post is logged and tried
// again at the next interval. Call Run once.
func (n *Notifier) Run(ctx context.Context) {
	t := time.NewTicker(n.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.repost(ctx)
		}
	}
}

// repost posts every active alert again, with a fresh endsAt.
func (n *Notifier) repost(ctx context.Context) {
	if n.lock(ctx) != nil {
		return
	}
	defer n.unlock()
	if len(n.active) == 0 {
		return
	}
	batch := make([]postable, 0, len(n.active))
	for _, p := range n.active {
		batch = append(batch, p)
	}
	if _, _, err := n.post(ctx, batch, n.now()); err != nil && ctx.Err() == nil {
		n.logger.Warn("re-posting active alerts to Alertmanager failed; will try again",
			"alerts", len(batch), "error", err.Error())
	}
}

// silentKey is the key of a location's silence among the active alerts,
// which are otherwise keyed by probe: a NUL, which no probe name holds,
// keeps the two apart.
func silentKey(a results.Alert) string {
	return a.Probe + "\x00" + a.SilentLocation()
}
