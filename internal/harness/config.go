package harness

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Config is a checks.yaml as typed values. YAML writes it in the layout the
// end-to-end tests have always used: one line per setting, small maps in
// flow style, so that a test may assert a config error's line and column.
// A zero field is left out, and toolpulse's default applies, except where
// a field says otherwise.
//
// Strings are written as given, quoted where YAML needs it, so ${VAR}
// expands as in a hand-written checks.yaml; Literal protects a value that
// must reach toolpulse unexpanded.
type Config struct {
	Storage Storage
	Server  Server // always written: toolpulse's default listen is a fixed port
	// MaxConcurrency is max_concurrency, the runs in flight at once.
	MaxConcurrency int
	Defaults       Defaults
	// Notify is written when set; nil leaves alerts with toolpulse's
	// defaults and no Slack.
	Notify    *Notify
	Consumers []Consumer
	Probes    []Probe
}

// Storage is the storage: block.
type Storage struct {
	Path string
	// Retention is written when set: Retain(0) keeps every result.
	Retention *time.Duration
}

// Retain returns d for Storage.Retention.
func Retain(d time.Duration) *time.Duration { return &d }

// Server is the server: block. Listen is always written, "" disabling
// the HTTP surface.
type Server struct {
	Listen    string
	Token     string
	PublicURL string
}

// Defaults is the defaults: block every probe inherits.
type Defaults struct {
	Interval time.Duration
	Jitter   time.Duration
	Timeout  time.Duration
	Retries  Retries
}

// Retries is a retries: map.
type Retries struct {
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
	Budget      time.Duration
}

// Notify is the notify: block. WebhookURL is always written, "" recording
// alerts without sending them.
type Notify struct {
	WebhookURL       string
	FailureThreshold int
	RepeatInterval   time.Duration
	Routes           []Route
	// SuccessThreshold and Flapping are the alert policy's hysteresis,
	// each written when set.
	SuccessThreshold int
	Flapping         *Flapping
}

// Flapping is notify.flapping; StableFor is written when set.
type Flapping struct {
	Changes           int
	Window, StableFor time.Duration
}

// Route is one entry of notify.routes: the labels it matches, its
// receivers (each written when its URL is set) and its overrides of the
// alert policy (each written when set).
type Route struct {
	Match            map[string]string
	SlackWebhookURL  string
	AlertmanagerURL  string
	WebhookURL       string
	WebhookSecret    string
	On               []string
	FailureThreshold int
	RepeatInterval   time.Duration
	SendResolved     *bool
}

func (r Route) fields() []string {
	fields := []string{"match: " + flow(r.Match)}
	if r.SlackWebhookURL != "" {
		fields = append(fields, "slack: {webhook_url: "+strconv.Quote(r.SlackWebhookURL)+"}")
	}
	if r.AlertmanagerURL != "" {
		fields = append(fields, "alertmanager: {url: "+strconv.Quote(r.AlertmanagerURL)+"}")
	}
	if r.WebhookURL != "" {
		fields = append(fields, "webhook: {url: "+strconv.Quote(r.WebhookURL)+", secret: "+strconv.Quote(r.WebhookSecret)+"}")
	}
	if len(r.On) > 0 {
		on := make([]any, len(r.On))
		for i, o := range r.On {
			on[i] = o
		}
		fields = append(fields, "on: "+flow(on))
	}
	if r.FailureThreshold > 0 {
		fields = append(fields, "failure_threshold: "+strconv.Itoa(r.FailureThreshold))
	}
	if r.RepeatInterval != 0 {
		fields = append(fields, "repeat_interval: "+duration(r.RepeatInterval))
	}
	if r.SendResolved != nil {
		fields = append(fields, "send_resolved: "+strconv.FormatBool(*r.SendResolved))
	}
	return fields
}

// Consumer is one entry of consumers:, inline (Select, Validate) or from
// File. Name may be left empty for a file, which names itself.
type Consumer struct {
	Name     string
	Version  string
	File     string
	Select   string
	Validate string
}

// Probe is one entry of probes:. MCP, when set, is written instead of
// Request.
type Probe struct {
	Name     string
	Request  Request
	Steps    []Step // instead of Request: a multi-step probe
	MCP      *MCP   // instead of Request: an MCP probe
	Consumer string
	Labels   map[string]string
}

// Step is one entry of a probe's steps:.
type Step struct {
	Name     string
	Request  Request
	Consumer string
	Capture  map[string]Capture
	Until    string
	Within   time.Duration
	Always   bool
}

// Capture is one value a step captures.
type Capture struct {
	Rule   string
	Secret bool
}

// MCP is an MCP probe's mcp: map. Arguments is the fixture, values as
// for Request.JSON.
type MCP struct {
	URL       string
	Tool      string
	Arguments map[string]any
	OAuth     *OAuth
}

// Request is a probe's request: map. JSON is the fixture sent as the
// body: maps, slices, strings, numbers, booleans and nil.
type Request struct {
	Method  string
	URL     string
	Headers map[string]string
	Query   map[string]string
	JSON    any
	OAuth   *OAuth
}

// OAuth is a request's or an MCP call's auth.oauth_client_credentials.
type OAuth struct {
	ClientID, ClientSecret, TokenURL string
	Scopes                           []string
}

func (o *OAuth) flow() string {
	m := map[string]any{"client_id": o.ClientID, "client_secret": o.ClientSecret}
	if o.TokenURL != "" {
		m["token_url"] = o.TokenURL
	}
	if len(o.Scopes) > 0 {
		scopes := make([]any, len(o.Scopes))
		for i, s := range o.Scopes {
			scopes[i] = s
		}
		m["scopes"] = scopes
	}
	return "{oauth_client_credentials: " + flow(m) + "}"
}

// ListOnly is the strict consumer of the seed-000 drill: it accepts
// results only as a list, so a provider that wraps them in an object
// makes its probes fail with contract_error.
var ListOnly = Consumer{
	Name:    "list_only",
	Version: "1",
	Select: `type(response.results) == "array"
  ? filter(response.results, .score >= 0.75)
  : fail("unsupported_results_container", "results is " + type(response.results))
`,
}

// SearchProbe is a probe that POSTs {query: q} to url, judged by ListOnly.
func SearchProbe(name, url string) Probe {
	return Probe{
		Name:     name,
		Request:  Request{Method: "POST", URL: url, JSON: map[string]any{"query": "q"}},
		Consumer: ListOnly.Name,
	}
}

// Fast is the config of the end-to-end tests: the probes, each a
// SearchProbe of providerURL+"/search", run every 200ms (±50ms) with one
// 1s attempt, alerts go to webhookURL ("" records them only) from the
// first failure and repeat hourly, results go to results.db next to the
// config, and the HTTP surface is off.
func Fast(providerURL, webhookURL string, probes ...string) Config {
	c := Config{
		Storage: Storage{Path: "results.db"},
		Defaults: Defaults{Interval: 200 * time.Millisecond, Jitter: 50 * time.Millisecond, Timeout: time.Second,
			Retries: Retries{MaxAttempts: 1, Budget: 2 * time.Second}},
		Notify:    &Notify{WebhookURL: webhookURL, FailureThreshold: 1, RepeatInterval: time.Hour},
		Consumers: []Consumer{ListOnly},
	}
	for _, name := range probes {
		c.Probes = append(c.Probes, SearchProbe(name, providerURL+"/search"))
	}
	return c
}

// YAML returns the config as checks.yaml text.
func (c Config) YAML() string {
	var b strings.Builder
	b.WriteString("version: 1\n")
	storage := []string{}
	if c.Storage.Path != "" {
		storage = append(storage, "path: "+scalar(c.Storage.Path))
	}
	if c.Storage.Retention != nil {
		storage = append(storage, "retention: "+duration(*c.Storage.Retention))
	}
	if len(storage) > 0 {
		fmt.Fprintf(&b, "storage: {%s}\n", strings.Join(storage, ", "))
	}
	server := []string{"listen: " + scalar(c.Server.Listen)}
	if c.Server.Token != "" {
		server = append(server, "token: "+scalar(c.Server.Token))
	}
	if c.Server.PublicURL != "" {
		server = append(server, "public_url: "+strconv.Quote(c.Server.PublicURL))
	}
	fmt.Fprintf(&b, "server: {%s}\n", strings.Join(server, ", "))
	if c.MaxConcurrency > 0 {
		fmt.Fprintf(&b, "max_concurrency: %d\n", c.MaxConcurrency)
	}
	if d := c.Defaults; d != (Defaults{}) {
		b.WriteString("defaults:\n")
		line(&b, "  interval", d.Interval)
		line(&b, "  jitter", d.Jitter)
		line(&b, "  timeout", d.Timeout)
		if r := d.Retries; r != (Retries{}) {
			var parts []string
			if r.MaxAttempts > 0 {
				parts = append(parts, "max_attempts: "+strconv.Itoa(r.MaxAttempts))
			}
			for _, p := range []struct {
				key string
				d   time.Duration
			}{{"base_delay", r.BaseDelay}, {"max_delay", r.MaxDelay}, {"budget", r.Budget}} {
				if p.d != 0 {
					parts = append(parts, p.key+": "+duration(p.d))
				}
			}
			fmt.Fprintf(&b, "  retries: {%s}\n", strings.Join(parts, ", "))
		}
	}
	if n := c.Notify; n != nil {
		fmt.Fprintf(&b, "notify:\n  slack: {webhook_url: %s}\n", strconv.Quote(n.WebhookURL))
		if n.FailureThreshold > 0 {
			fmt.Fprintf(&b, "  failure_threshold: %d\n", n.FailureThreshold)
		}
		line(&b, "  repeat_interval", n.RepeatInterval)
		if n.SuccessThreshold > 0 {
			fmt.Fprintf(&b, "  success_threshold: %d\n", n.SuccessThreshold)
		}
		if f := n.Flapping; f != nil {
			fmt.Fprintf(&b, "  flapping: {changes: %d, window: %s", f.Changes, duration(f.Window))
			if f.StableFor != 0 {
				fmt.Fprintf(&b, ", stable_for: %s", duration(f.StableFor))
			}
			b.WriteString("}\n")
		}
		if len(n.Routes) > 0 {
			b.WriteString("  routes:\n")
		}
		for _, r := range n.Routes {
			for i, f := range r.fields() {
				if i == 0 {
					fmt.Fprintf(&b, "    - %s\n", f)
				} else {
					fmt.Fprintf(&b, "      %s\n", f)
				}
			}
		}
	}
	if len(c.Consumers) > 0 {
		b.WriteString("consumers:\n")
	}
	for _, con := range c.Consumers {
		var fields []string
		if con.Name != "" {
			fields = append(fields, "name: "+scalar(con.Name))
		}
		if con.Version != "" {
			fields = append(fields, "version: "+strconv.Quote(con.Version))
		}
		if con.File != "" {
			fields = append(fields, "file: "+scalar(con.File))
		}
		if con.Select != "" {
			fields = append(fields, "select: "+text(con.Select, "      "))
		}
		if con.Validate != "" {
			fields = append(fields, "validate: "+text(con.Validate, "      "))
		}
		item(&b, fields)
	}
	if len(c.Probes) > 0 {
		b.WriteString("probes:\n")
	}
	for _, p := range c.Probes {
		fields := []string{"name: " + scalar(p.Name)}
		switch {
		case len(p.Steps) > 0:
			fields = append(fields, "steps:")
			for _, s := range p.Steps {
				fields = append(fields, "  - "+s.flow())
			}
		case p.MCP != nil:
			fields = append(fields, "mcp: "+p.MCP.flow())
		default:
			fields = append(fields, "request: "+p.Request.flow())
		}
		if p.Consumer != "" {
			fields = append(fields, "consumer: "+scalar(p.Consumer))
		}
		if len(p.Labels) > 0 {
			fields = append(fields, "labels: "+flow(p.Labels))
		}
		item(&b, fields)
	}
	return b.String()
}

// Write writes the config to path.
func (c Config) Write(path string) error {
	return os.WriteFile(path, []byte(c.YAML()), 0o644)
}

func (r Request) flow() string {
	var parts []string
	if r.Method != "" {
		parts = append(parts, "method: "+scalar(r.Method))
	}
	parts = append(parts, "url: "+strconv.Quote(r.URL))
	if len(r.Headers) > 0 {
		parts = append(parts, "headers: "+flow(r.Headers))
	}
	if len(r.Query) > 0 {
		parts = append(parts, "query: "+flow(r.Query))
	}
	if r.JSON != nil {
		parts = append(parts, "json: "+flow(r.JSON))
	}
	if r.OAuth != nil {
		parts = append(parts, "auth: "+r.OAuth.flow())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (s Step) flow() string {
	parts := []string{"name: " + scalar(s.Name), "request: " + s.Request.flow()}
	if s.Consumer != "" {
		parts = append(parts, "consumer: "+scalar(s.Consumer))
	}
	if len(s.Capture) > 0 {
		names := make([]string, 0, len(s.Capture))
		for n := range s.Capture {
			names = append(names, n)
		}
		sort.Strings(names)
		var cs []string
		for _, n := range names {
			c := s.Capture[n]
			cs = append(cs, fmt.Sprintf("%s: {rule: %s, secret: %t}", n, strconv.Quote(c.Rule), c.Secret))
		}
		parts = append(parts, "capture: {"+strings.Join(cs, ", ")+"}")
	}
	if s.Until != "" {
		parts = append(parts, "until: "+strconv.Quote(s.Until), "within: "+duration(s.Within))
	}
	if s.Always {
		parts = append(parts, "always: true")
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (m MCP) flow() string {
	parts := []string{"url: " + strconv.Quote(m.URL), "tool: " + scalar(m.Tool)}
	if m.Arguments != nil {
		parts = append(parts, "arguments: "+flow(m.Arguments))
	}
	if m.OAuth != nil {
		parts = append(parts, "auth: "+m.OAuth.flow())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// item writes one entry of a list of maps, a field a line.
func item(b *strings.Builder, fields []string) {
	for i, f := range fields {
		if i == 0 {
			fmt.Fprintf(b, "  - %s\n", f)
		} else {
			fmt.Fprintf(b, "    %s\n", f)
		}
	}
}

func line(b *strings.Builder, key string, d time.Duration) {
	if d != 0 {
		fmt.Fprintf(b, "%s: %s\n", key, duration(d))
	}
}

// duration writes d in Go's syntax without its zero units: 8760h, not
// 8760h0m0s.
func duration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

var plain = regexp.MustCompile(`^[A-Za-z_./][A-Za-z0-9_./-]*$`)

// scalar writes s plain when YAML reads it back as that string, else
// double-quoted.
func scalar(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n":
		return strconv.Quote(s)
	}
	if plain.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

// text writes a rule: a literal block, indented by indent, when it spans
// lines, else a quoted scalar.
func text(s, indent string) string {
	if !strings.Contains(strings.TrimSuffix(s, "\n"), "\n") || strings.HasPrefix(s, " ") {
		return strconv.Quote(s)
	}
	head := "|"
	if !strings.HasSuffix(s, "\n") {
		head = "|-"
	}
	var b strings.Builder
	b.WriteString(head + "\n")
	for l := range strings.Lines(strings.TrimSuffix(s, "\n") + "\n") {
		if l == "\n" {
			b.WriteString(l)
			continue
		}
		b.WriteString(indent + l)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// flow writes a value in YAML's flow style, map keys sorted.
func flow(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return scalar(v)
	case bool, int, int64, float64:
		return fmt.Sprint(v)
	case map[string]string:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = x
		}
		return flow(m)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = scalar(k) + ": " + flow(v[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = flow(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	panic(fmt.Sprintf("harness: no YAML for %T", v))
}

// Literal returns s with every "$" doubled, so that toolpulse's ${VAR}
// expansion gives s back as it is.
func Literal(s string) string { return strings.ReplaceAll(s, "$", "$$") }
