// Package checks turns checks.yaml into a fully resolved Config: decoded
// strictly, environment-expanded, defaulted, validated and with every
// consumer rule compiled. Load returns either a Config nothing downstream
// needs to re-validate, or a list of errors each naming file:line:col.
package checks

import (
	"crypto/tls"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

// Config is a loaded, validated checks.yaml.
type Config struct {
	// Path is the absolute path of the file the config was loaded from;
	// relative paths inside it are resolved against its directory.
	Path string
	// Digest is FileDigest of the bytes the config was parsed from, so
	// that a running daemon can tell whether the file on disk has changed
	// since (consumer and CA files it names are not included).
	Digest         string
	Version        int
	Storage        Storage
	Fleet          Fleet
	Server         Server
	MaxConcurrency int
	Notify         Notify
	// Consumers maps a consumer's name to its compiled rules.
	Consumers map[string]*consumers.Consumer
	// Probes are in file order.
	Probes []*Probe
	// Maintenance are the recurring windows that mute probes' alerts, in
	// file order; each covers at least one probe.
	Maintenance []results.MaintenanceWindow
}

// Storage is where results are kept and for how long.
type Storage struct {
	// Driver is the store: DriverSQLite (the default) keeps results in
	// the file at Path, DriverPostgres in the database DSN names.
	Driver string
	Path   string // absolute; "" with DriverPostgres
	// DSN is the Postgres connection string, a URL
	// (postgres://user:pass@host/db) or key=value settings; "" with
	// DriverSQLite. The whole string and its password are secrets
	// (Config.Secrets).
	DSN       Secret
	Retention time.Duration // 0 keeps everything
}

// The values of storage.driver.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// Fleet is what sets this instance apart among those sharing one store
// (SPEC §12).
type Fleet struct {
	// Node is this instance's name, unique in the fleet: fleet.node, or
	// the host name and the process id ("web-1-4711") when the config
	// gives none. Each result records it (results.Result.Node).
	Node string
	// Lease is fleet.lease: how long leadership outlives its holder's
	// last renewal. At least MinLease.
	Lease time.Duration
	// Location is fleet.location: where this instance runs, whose lease
	// it claims and whose probes its leader runs (SPEC §13);
	// results.DefaultLocation when the config names none.
	Location string
}

// Server is the read-only HTTP surface.
type Server struct {
	Listen string // "" disables the server
	Token  Secret
	// PublicURL is where people reach the status page, without a trailing
	// slash; messages link to {PublicURL}/probes/{name}. "" means no links.
	PublicURL string
}

// Notify says where alerts go and when.
type Notify struct {
	Slack            Slack
	On               []string // outcomes and "shape_drift"
	FailureThreshold int
	RepeatInterval   time.Duration
	SendResolved     bool
	// UpdateOnCodeChange sends an update when a firing alert's code
	// changes within the same outcome; a change of outcome always does.
	UpdateOnCodeChange bool
	// Grouping gathers alerts into messages (notify.group_by).
	Grouping Grouping
	// Routes send the alerts of matching probes elsewhere, in file order;
	// see Route.
	Routes []Route

	// SuccessThreshold is notify.success_threshold, 0 when unset; see
	// Successes.
	SuccessThreshold int
	// FailureWindow, when enabled, replaces FailureThreshold: the probe
	// is failing once that many of its last runs did not pass.
	FailureWindow FailureWindow
	// Flapping, when enabled, quiets a probe whose verdict keeps changing.
	Flapping Flapping
}

// Slack is either a webhook or a bot token with a channel.
type Slack struct {
	WebhookURL Secret
	Token      Secret
	Channel    string
	APIURL     string
}

// Enabled reports whether alerts are delivered to Slack at all.
func (s Slack) Enabled() bool { return s.WebhookURL != "" || s.Token != "" }

// Probe is one synthetic check with every default applied: the calls it
// makes, in Steps, and the settings of the whole run. A single probe
// (request: or mcp:) makes one call, an unnamed step; a probe with
// steps: makes one named step per entry (SPEC §11).
type Probe struct {
	Name string
	// Steps are the probe's calls, in order: never empty. A single
	// probe's one step has no name, which is what tells it apart (Kind).
	Steps []Step
	// URLSecrets are what ${VAR} put into the path or query of the
	// probe's URLs (its steps' requests and MCP servers): a token in
	// "/bot${TOKEN}/getMe" is a secret like a header value, scrubbed
	// wherever the URL is shown (ScrubURL, Config.Secrets).
	URLSecrets []Secret
	// Fixtures are a multi-step probe's canned runs, for toolpulse test.
	Fixtures     []ProbeFixture
	Interval     time.Duration
	Jitter       time.Duration
	MaxBodyBytes int64
	Labels       map[string]string
	// TLS is the client TLS configuration built at load (CA file read and
	// parsed); nil means Go's defaults.
	TLS *tls.Config
	// Locations are where the probe runs from, never empty: its
	// locations:, or the default locations/locations.go's rule gives it.
	Locations []string
	// AlertWhen is alert_when: see AlertLocations.
	AlertWhen AlertWhen
	// Trace marks every request of a run with a W3C traceparent and a
	// synthetic tracestate (SPEC §10.1): trace:, true by default. It is
	// false when a header of the probe sets traceparent itself: the
	// probe's own trace context wins, and toolpulse adds none.
	Trace bool
}

// Request is the known fixture a probe sends.
type Request struct {
	Method  string
	URL     string
	Headers map[string]Secret // every header value is treated as a secret
	Query   map[string]string
	// JSON is the decoded `json:` fixture (HasJSON tells an explicit null
	// from an absent key); Body is the raw `body:` text. At most one is set.
	JSON    any
	HasJSON bool
	Body    string
	// NoRedirects is follow_redirects: false: a 3xx is the answer, judged
	// by expect.status. By default redirects are followed, up to 10, and
	// never into an address the probe's own host is not in (see the
	// runner's redirect policy).
	NoRedirects bool
	// OAuth, when set, gets the bearer token the request carries (SPEC
	// §10.1).
	OAuth *OAuth
}

// Kind is results.ProbeSteps for a multi-step probe, and the kind of its
// one call for a single probe: results.ProbeMCP for an MCP tool call,
// results.ProbeHTTP for an HTTP request.
func (p *Probe) Kind() results.ProbeKind {
	switch {
	case p.MultiStep():
		return results.ProbeSteps
	case len(p.Steps) == 0:
		return results.ProbeHTTP
	}
	return p.Steps[0].Kind()
}

// MultiStep reports whether p was written with steps:, whose calls have
// names, rather than as one request: or mcp: call.
func (p *Probe) MultiStep() bool { return len(p.Steps) > 0 && p.Steps[0].Name != "" }

// Call is a single probe's one call; nil for a multi-step probe.
func (p *Probe) Call() *Step {
	if p.MultiStep() || len(p.Steps) == 0 {
		return nil
	}
	return &p.Steps[0]
}

// Consumer is the consumer of a single probe's call; nil for a
// multi-step probe, whose steps have their own.
func (p *Probe) Consumer() *consumers.Consumer {
	if c := p.Call(); c != nil {
		return c.Consumer
	}
	return nil
}

// Consumers are the consumers p's answers are judged by, those of its
// steps in order, each once.
func (p *Probe) Consumers() []*consumers.Consumer {
	var out []*consumers.Consumer
	for _, s := range p.Steps {
		if s.Consumer != nil && !slices.Contains(out, s.Consumer) {
			out = append(out, s.Consumer)
		}
	}
	return out
}

// RunBudget bounds one whole run of p: retries.budget (every step carries
// the probe's), raised by the within of each step that polls (SPEC §11),
// so that a verification allowed 10s to settle is not cut short by a 15s
// budget its earlier steps have half spent.
func (p *Probe) RunBudget() time.Duration {
	var b time.Duration
	for i, s := range p.Steps {
		if i == 0 {
			b = s.Retries.Budget
		}
		if s.Until != nil {
			b += s.Within
		}
	}
	return b
}

// Step is one call a probe makes, run in order within one operation: an
// HTTP request, or an MCP tool call when MCP is set. A single probe's one
// call is a step without a name, and without captures, until or always.
// Strings of a named step's call may hold {{name}} templates (see Expand).
type Step struct {
	Name    string  // "" for a single probe's call
	Request Request // an HTTP step's call; empty for an MCP step
	MCP     *MCP    // an MCP step's call; nil for an HTTP step
	// Consumer judges the step's answer; nil: an accepted status
	// (Expect.Status) is all a named step needs. A single probe always
	// has one.
	Consumer *consumers.Consumer
	// Capture names values of the answer for later steps, in the order
	// written, once the step has passed (and its until held).
	Capture []Capture
	// Until makes the step a verification: polled every Every until the
	// rule is true, for at most Within. nil: the step runs once.
	Until         *consumers.Expression
	Within, Every time.Duration
	// Always steps run last, whatever happened; their failure is recorded
	// but never changes the run's outcome.
	Always bool
	// Timeout, Retries and Expect are the probe's, field by field under
	// the step's own; a step whose method is not GET, HEAD or OPTIONS, and
	// an MCP step, makes one attempt unless it sets retries (or, for HTTP,
	// sends an Idempotency-Key).
	Timeout time.Duration
	Retries Retries
	Expect  Expect
	// Needs are the captures the step's templates and rules name, which
	// it cannot run without: an always step whose earlier step failed
	// before capturing one is skipped.
	Needs []string
}

// Kind is results.ProbeMCP for an MCP step and results.ProbeHTTP for an
// HTTP one.
func (s *Step) Kind() results.ProbeKind {
	if s.MCP != nil {
		return results.ProbeMCP
	}
	return results.ProbeHTTP
}

// ProbeFixture is a canned run of a multi-step probe (SPEC §11): the
// answers its steps get and the verdict the whole probe must reach on
// them, so that toolpulse test can check claim_mismatch and
// capture_failed without a server.
type ProbeFixture struct {
	Name string
	// Answers are each step's canned answers by step name, one per
	// attempt or poll, the last one repeated; only a fixture's Response or
	// Result, Status and Headers are used. A step the run reaches without
	// an answer fails the fixture; an always step without one is skipped.
	Answers map[string][]consumers.Fixture
	Expect  consumers.Expectation
	// Step is the step that must decide the outcome; "" for any.
	Step string
}

// Capture is one value a step names for later steps: the rule's value on
// the step's answer. A secret capture is scrubbed from every output.
type Capture struct {
	Name   string
	Rule   *consumers.Expression
	Secret bool
}

// MCPTarget is the tool an MCP probe calls and its server, as every
// surface shows them (the server written by results.MCPServer, without
// credentials or query); nil for an HTTP probe.
func (p *Probe) MCPTarget() *results.MCPTarget {
	c := p.Call()
	if c == nil || c.MCP == nil {
		return nil
	}
	return &results.MCPTarget{Tool: c.MCP.Tool, Server: p.ScrubURL(c.MCP.Server())}
}

// Server names the MCP server as every surface shows it: the URL written
// by results.MCPServer, or "stdio: " and the command, which holds no
// secret (those go in env).
func (m *MCP) Server() string {
	if len(m.Command) > 0 {
		return results.StdioServer(m.Command)
	}
	return results.MCPServer(m.URL)
}

// MCP is the tool call an MCP probe makes (SPEC §10): one fresh session on
// the server at URL, in which it lists the tools and calls Tool.
type MCP struct {
	// URL is the server's Streamable HTTP endpoint, absolute http(s). A
	// password in it is a secret (Config.Secrets), as in Request.URL.
	// Exactly one of URL and Command is set.
	URL string
	// Command starts a stdio server for each run (SPEC §10.1): the
	// program and its arguments, run without a shell.
	Command []string
	// Env is added to a stdio server's environment; every value is a
	// secret.
	Env map[string]Secret
	// Dir is a stdio server's working directory; "" is toolpulse's.
	Dir     string
	Headers map[string]Secret // every header value is treated as a secret
	Tool    string            // the tool's name as tools/list gives it; never empty
	// Arguments is the known fixture: the tools/call arguments, as rule
	// values (see Request.JSON); {} when the probe gives none.
	Arguments map[string]any
	// IsError is how a result with isError: true counts:
	// results.ContractError (the default) or results.Unavailable.
	IsError results.Outcome
	// AllowDestructive lets the probe call a tool whose annotations say
	// destructiveHint: true; without it such a run ends as
	// destructive_tool without the call.
	AllowDestructive bool
	// Watch is what the probe's definition covers besides its tool and the
	// server's instructions, name and version (SPEC §10.1): the server's
	// prompts/list and resources/list listings, read every run.
	Watch MCPWatch
	// OAuth, when set, gets the bearer token every request of the session
	// carries (SPEC §10.1).
	OAuth *OAuth
}

// MCPWatch names the listings an MCP probe reads for definition drift,
// from its watch: list.
type MCPWatch struct {
	Prompts   bool
	Resources bool
}

// Retries bounds the attempts of one run (SPEC §2).
type Retries struct {
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
	Budget      time.Duration
}

// Expect is what a run must produce to pass.
type Expect struct {
	Status     []int
	MinResults int
}

// Secrets returns every secret value in the config, for a results.Redactor.
func (c *Config) Secrets() []string {
	var out []string
	add := func(s Secret) {
		if s != "" {
			out = append(out, s.Reveal())
		}
	}
	add(c.Server.Token)
	add(c.Storage.DSN)
	add(Secret(dsnPassword(c.Storage.DSN.Reveal())))
	add(c.Notify.Slack.WebhookURL)
	add(c.Notify.Slack.Token)
	for _, r := range c.Notify.Routes {
		add(r.Slack.WebhookURL)
		add(r.Slack.Token)
		add(Secret(urlPassword(r.Alertmanager.URL.Reveal())))
		add(r.Webhook.URL)
		add(Secret(urlPassword(r.Webhook.URL.Reveal())))
		add(r.Webhook.Secret)
	}
	// Credentials in a URL: Go sends them as "Basic base64(user:pass)",
	// and a provider may echo either form.
	addURL := func(raw string) {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if pass, ok := u.User.Password(); ok && pass != "" {
				add(Secret(pass))
				add(Secret(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pass))))
			}
		}
	}
	// A query value named as a credential (?api_key=) is one, and a
	// provider may echo it.
	addQuery := func(raw string, query map[string]string) {
		for k, v := range query {
			if credentialParam(k) && !HasTemplate(v) {
				add(Secret(v))
			}
		}
		for _, v := range queryValues(raw) {
			add(v)
		}
	}
	addHeaders := func(h map[string]Secret) {
		for _, v := range h {
			if HasTemplate(v.Reveal()) {
				// "Bearer {{access_token}}": the secret is the capture's,
				// which the run scrubs once it has it.
				continue
			}
			add(v)
			// A provider that echoes only the credential of
			// "Bearer <token>" must not leak it either.
			if _, cred, ok := strings.Cut(v.Reveal(), " "); ok {
				add(Secret(strings.TrimSpace(cred)))
			}
		}
	}
	// The client secret, and the Basic credentials it travels in to the
	// token endpoint, which an endpoint may echo. The token is the run's
	// own secret: the engine scrubs it.
	addOAuth := func(o *OAuth) {
		if o == nil {
			return
		}
		add(o.ClientSecret)
		add(Secret(base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(o.ClientID) + ":" + url.QueryEscape(o.ClientSecret.Reveal())))))
		addURL(o.TokenURL)
	}
	for _, p := range c.Probes {
		for _, s := range p.URLSecrets {
			add(s)
		}
		for _, s := range p.Steps {
			addQuery(s.Request.URL, s.Request.Query)
			addURL(s.Request.URL)
			addHeaders(s.Request.Headers)
			addOAuth(s.Request.OAuth)
			if s.MCP != nil {
				addQuery(s.MCP.URL, nil)
				addURL(s.MCP.URL)
				addHeaders(s.MCP.Headers)
				for _, v := range s.MCP.Env {
					add(v)
				}
				addOAuth(s.MCP.OAuth)
			}
		}
	}
	return out
}

// Redactor returns a redactor that scrubs every secret of the config.
func (c *Config) Redactor() *results.Redactor { return results.NewRedactor(c.Secrets()...) }

// Probe returns the probe with the given name, or nil.
func (c *Config) Probe(name string) *Probe {
	for _, p := range c.Probes {
		if p.Name == name {
			return p
		}
	}
	return nil
}
