package checks

import (
	"maps"
	"net/url"
	"slices"
	"strings"
)

var (
	receiverKeys     = []string{"slack", "alertmanager", "webhook"}
	policyKeys       = append([]string{"on", "failure_threshold", "repeat_interval", "send_resolved", "update_on_code_change"}, hysteresisKeys...)
	routeKeys        = append(append(append([]string{"match"}, receiverKeys...), policyKeys...), groupingKeys...)
	alertmanagerKeys = []string{"url"}
	webhookKeys      = []string{"url", "secret"}
)

// DefaultRoute names the route of probes that match no notify.routes entry.
const DefaultRoute = "default"

// Route is where the alerts of the probes it matches go, and when. The
// default route (Name DefaultRoute, no Match) is notify.slack with the
// top-level notify settings.
type Route struct {
	// Name is DefaultRoute or the route's place in the file, "routes[0]";
	// it prefixes the keys of its receivers.
	Name string
	// Match lists labels a probe must all carry with these values.
	Match        map[string]string
	Slack        Slack
	Alertmanager Alertmanager
	Webhook      Webhook
	// Notify is the route's alert policy: the top-level notify settings
	// with the route's overrides applied. Its Slack and Routes are unset;
	// the receivers are the fields above.
	Notify Notify
}

// Alertmanager is an Alertmanager to post alerts to (/api/v2/alerts).
type Alertmanager struct {
	URL Secret // may carry credentials
}

// Enabled reports whether the route posts to an Alertmanager.
func (a Alertmanager) Enabled() bool { return a.URL != "" }

// Webhook is an endpoint that receives each alert as signed JSON.
type Webhook struct {
	URL    Secret // may carry a token
	Secret Secret // HMAC-SHA256 key of X-Toolpulse-Signature
}

// Enabled reports whether the route posts to a webhook.
func (w Webhook) Enabled() bool { return w.URL != "" }

// Receiver kinds, the second part of a receiver key.
const (
	ReceiverSlack        = "slack"
	ReceiverAlertmanager = "alertmanager"
	ReceiverWebhook      = "webhook"
)

// Receivers returns the keys of the route's receivers, such as
// "default/slack" or "routes[0]/alertmanager", in a fixed order. The
// default route without Slack has none: its alerts are only recorded.
func (r Route) Receivers() []string {
	var out []string
	if r.Slack.Enabled() {
		out = append(out, r.Name+"/"+ReceiverSlack)
	}
	if r.Alertmanager.Enabled() {
		out = append(out, r.Name+"/"+ReceiverAlertmanager)
	}
	if r.Webhook.Enabled() {
		out = append(out, r.Name+"/"+ReceiverWebhook)
	}
	return out
}

// Matches reports whether every label of the route's Match has the same
// value in labels. The default route matches everything.
func (r Route) Matches(labels map[string]string) bool {
	for k, v := range r.Match {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Default returns the default route: notify.slack with the top-level
// notify settings.
func (n Notify) Default() Route {
	policy := n
	policy.Slack = Slack{}
	policy.Routes = nil
	return Route{Name: DefaultRoute, Slack: n.Slack, Notify: policy}
}

// Route returns the effective route of a probe with these labels: the
// first of Routes that matches, else the default.
func (n Notify) Route(labels map[string]string) Route {
	for _, r := range n.Routes {
		if r.Matches(labels) {
			return r
		}
	}
	return n.Default()
}

// AllRoutes returns every route, the default last (the order in which a
// probe's route is looked for).
func (n Notify) AllRoutes() []Route {
	return append(slices.Clone(n.Routes), n.Default())
}

// AllReceivers returns the keys of every route's receivers, as a set.
func (n Notify) AllReceivers() map[string]bool {
	out := map[string]bool{}
	for _, r := range n.AllRoutes() {
		for _, key := range r.Receivers() {
			out[key] = true
		}
	}
	return out
}

// RouteFor returns the effective route of p.
func (c *Config) RouteFor(p *Probe) Route { return c.Notify.Route(p.Labels) }

// policyKey decodes one of the alert policy keys into n; it reports
// whether x was one.
func (l *loader) policyKey(x entry, n *Notify) bool {
	d := l.d
	switch x.key {
	case "on":
		items, ok := d.list(x.value, x.path)
		if !ok {
			return true
		}
		n.On = []string{}
		seen := map[string]bool{}
		for i, item := range items {
			p := index(x.path, i)
			s, ok := d.str(item, p)
			switch {
			case !ok:
			case !slices.Contains(alertOn, s):
				d.errorf(item, "%s: unknown alert trigger %q; expected contract_error, unavailable or shape_drift", p, s)
			case seen[s]:
				d.errorf(item, "%s: %s is listed twice", p, s)
			default:
				seen[s] = true
				n.On = append(n.On, s)
			}
		}
	case "failure_threshold":
		v, ok := d.integer(x.value, x.path)
		if ok && v < 1 {
			d.errorf(x.value, "%s: must be at least 1 (consecutive non-pass runs before the first alert), got %d", x.path, v)
		}
		n.FailureThreshold = int(v)
		n.FailureWindow = FailureWindow{} // a route's own threshold replaces the window it inherits
	case "repeat_interval":
		v, ok := d.duration(x.value, x.path)
		if ok && v <= 0 {
			d.errorf(x.value, "%s: must be positive, got %s", x.path, fmtDuration(v))
		}
		n.RepeatInterval = v
	case "send_resolved":
		n.SendResolved, _ = d.boolean(x.value, x.path)
	case "update_on_code_change":
		n.UpdateOnCodeChange, _ = d.boolean(x.value, x.path)
	default:
		return l.hysteresisKey(x, n) || l.groupingKey(x, &n.Grouping)
	}
	return true
}

// routes decodes notify.routes; top is the top-level policy every route
// starts from, so it must be complete before routes are decoded.
func (l *loader) routes(e entry, top Notify) []Route {
	d := l.d
	items, ok := d.list(e.value, e.path)
	if !ok {
		return nil
	}
	var out []Route
	for i, item := range items {
		path := index(e.path, i)
		r := Route{Name: strings.TrimPrefix(path, "notify."), Notify: top}
		r.Notify.On = slices.Clone(top.On)
		r.Notify.Grouping.GroupBy = slices.Clone(top.Grouping.GroupBy)
		present, ok := d.object(item, path, routeKeys, func(x entry) {
			if l.policyKey(x, &r.Notify) {
				return
			}
			switch x.key {
			case "match":
				r.Match = l.match(x)
			case "slack":
				before := len(*d.errs)
				l.slack(x, &r.Slack)
				if !r.Slack.Enabled() && len(*d.errs) == before {
					d.errorf(x.value, "%s: expected webhook_url, or token with channel; a route's receiver cannot be empty", x.path)
				}
			case "alertmanager":
				r.Alertmanager = l.alertmanager(x)
			case "webhook":
				r.Webhook = l.webhook(x)
			}
		})
		if !ok {
			continue
		}
		l.exclusiveWindow(present)
		if _, ok := present["match"]; !ok {
			d.errorf(item, "%s: match is required: the labels a probe must carry, such as match: {team: search}", path)
		}
		if !slices.ContainsFunc(receiverKeys, func(k string) bool { _, ok := present[k]; return ok }) {
			d.errorf(item, "%s: a route needs at least one receiver: %s", path, strings.Join(receiverKeys, ", "))
		}
		out = append(out, r)
	}
	return out
}

func (l *loader) match(x entry) map[string]string {
	return l.labelMatch(x, "a route that matches every probe belongs in notify.slack", "match the probe's own labels")
}

// labelMatch decodes labels a probe must all carry (a route's match:, a
// maintenance window's labels:). whenEmpty says what to write instead of
// an empty map, reservedFix what to do instead of matching a reserved
// label.
func (l *loader) labelMatch(x entry, whenEmpty, reservedFix string) map[string]string {
	d := l.d
	values, es, ok := d.stringMap(x.value, x.path)
	if !ok {
		return values
	}
	if len(es) == 0 {
		d.errorf(x.value, "%s: must list at least one label; %s", x.path, whenEmpty)
		return values
	}
	for _, e := range es {
		switch {
		case !labelName.MatchString(e.key) || strings.HasPrefix(e.key, "__"):
			d.errorf(e.keyN, "%s: %q is not a valid label name; expected letters, digits and _, not starting with a digit or __", x.path, e.key)
		case slices.Contains(reservedLabels, e.key):
			// No probe can carry it (see probe labels), so it would never
			// match.
			d.errorf(e.keyN, "%s: %q is reserved (%s) and no probe carries it as a label; %s", x.path, e.key, strings.Join(reservedLabels, ", "), reservedFix)
		}
	}
	return maps.Clone(values)
}

// receiverURL decodes a receiver's required url. The URL may carry a
// credential: errors say what is wrong with it, never what it is.
func (l *loader) receiverURL(x entry) Secret {
	d := l.d
	v, ok := d.str(x.value, x.path)
	if !ok {
		return ""
	}
	if v == "" {
		d.errorf(x.value, "%s: expected an absolute http:// or https:// URL, got an empty string", x.path)
		return ""
	}
	if problem := httpURLProblem(v); problem != "" {
		d.errorf(x.value, "%s: expected an absolute http:// or https:// URL: %s", x.path, problem)
		return ""
	}
	return Secret(v)
}

func (l *loader) alertmanager(e entry) Alertmanager {
	var a Alertmanager
	present, ok := l.d.object(e.value, e.path, alertmanagerKeys, func(x entry) {
		a.URL = l.receiverURL(x)
	})
	if ok {
		if _, has := present["url"]; !has {
			l.d.errorf(e.value, "%s: url is required, such as http://127.0.0.1:9093", e.path)
		}
	}
	return a
}

func (l *loader) webhook(e entry) Webhook {
	d := l.d
	var w Webhook
	present, ok := d.object(e.value, e.path, webhookKeys, func(x entry) {
		switch x.key {
		case "url":
			w.URL = l.receiverURL(x)
		case "secret":
			v, ok := d.str(x.value, x.path)
			if ok && v == "" {
				d.errorf(x.value, "%s: must not be empty: it signs every body (X-Toolpulse-Signature)", x.path)
			}
			w.Secret = Secret(v)
		}
	})
	if !ok {
		return w
	}
	if _, has := present["url"]; !has {
		d.errorf(e.value, "%s: url is required", e.path)
	}
	if _, has := present["secret"]; !has {
		d.errorf(e.value, "%s: secret is required: the key that signs every body", e.path)
	}
	return w
}

// urlPassword returns the password in a URL's user info, or "".
func urlPassword(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}
