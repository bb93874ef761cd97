package checks

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/toolpulse/toolpulse/results"
)

var (
	probeKeys   = append([]string{"name", "request", "mcp", "steps", "fixtures", "consumer"}, append(slices.Clone(tuningKeys), "labels", "tls", "locations", "alert_when", "trace")...)
	requestKeys = []string{"method", "url", "headers", "query", "json", "body", "follow_redirects", "auth"}
	mcpKeys     = []string{"url", "command", "env", "dir", "headers", "tool", "arguments", "is_error", "allow_destructive", "watch", "auth"}
	tlsKeys     = []string{"ca_file", "insecure"}
	methods     = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

	probeName = regexp.MustCompile(`^[a-z0-9_.-]+$`)
	// labelName is Prometheus's label syntax: labels may become metric labels.
	labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// reservedLabels are the labels toolpulse's own metrics carry (SPEC §9).
var reservedLabels = []string{"probe", "outcome", "code"}

// probeKinds are the keys that say what a probe calls, with what each
// needs at least; a probe has exactly one of them.
var probeKinds = []struct{ key, what string }{
	{"request", "an HTTP call, at least request.url"},
	{"mcp", "an MCP tool call, at least mcp.url and mcp.tool"},
	{"steps", "a list of calls run in order, each a request or an mcp"},
}

// isErrorOutcomes are the outcomes mcp.is_error may name.
// watchables are what mcp.watch may name.
var watchables = []string{"prompts", "resources"}

var isErrorOutcomes = []string{string(results.ContractError), string(results.Unavailable)}

// probe decodes, validates and resolves one probe; it returns nil when the
// item is not even a mapping.
func (l *loader) probe(item ast.Node, path string, defaults tuning) *Probe {
	d := l.d
	p := &Probe{}
	var call Step // a single probe's one call
	var own tuning
	var consumerN ast.Node
	var kinds []entry // request, mcp, steps: what the probe calls
	var stepsE, fixturesE *entry
	consumer, consumerOK := "", true
	l.scope = newScope()
	l.urlSecrets = nil
	defer func() { p.URLSecrets = l.urlSecrets }()
	pl := probeLocations{probe: p, path: path}
	present, ok := d.object(item, path, probeKeys, func(e entry) {
		if d.tuningKey(e, fromProbe, &own) || l.probeLocationKey(e, p, &pl) {
			return
		}
		switch e.key {
		case "name":
			l.probeName(e, p)
		case "request":
			kinds = append(kinds, e)
			l.request(e, &call.Request)
		case "mcp":
			kinds = append(kinds, e)
			call.MCP = l.mcp(e)
		case "steps":
			kinds = append(kinds, e)
			stepsE = &e
		case "fixtures":
			fixturesE = &e
		case "consumer":
			var ok bool
			consumer, ok = d.str(e.value, e.path)
			consumerN = e.value
			consumerOK = ok
		case "labels":
			p.Labels = l.labels(e)
		case "tls":
			p.TLS = l.tls(e)
		}
	})
	if !ok {
		return nil
	}
	l.probeLocs = append(l.probeLocs, pl)
	if _, ok := present["name"]; !ok {
		d.errorf(item, "%s: name is required", path)
	}
	l.probeKind(item, path, kinds)
	isSteps := len(kinds) > 0 && kinds[0].key == "steps"
	switch {
	case isSteps && consumerN != nil:
		d.errorf(consumerN, "%s.consumer: a probe with steps judges each answer by its step's own consumer; move it to the step whose answer it reads", path)
	case isSteps:
	case consumerN == nil:
		d.errorf(item, "%s: consumer is required: the name of a consumer under consumers:", path)
	case !consumerOK:
	case !l.defined(consumer):
		d.errorf(consumerN, "%s.consumer: unknown consumer %q; %s", path, consumer, l.definedConsumers())
	default:
		call.Consumer = l.consumers[consumer] // nil when it failed to compile, already reported
		if call.Consumer != nil {
			// A single call has no earlier steps: vars holds nothing.
			names, dynamic := call.Consumer.Vars()
			l.vars(consumerN, path+".consumer", names, dynamic)
		}
	}

	t := fitJitter(defaults.over(own))
	t.probe = p.Name
	d.check(t)
	p.Interval, p.Jitter = t.interval.v, t.jitter.v
	p.MaxBodyBytes = t.maxBodyBytes.v
	p.Trace = t.trace.v
	if isSteps {
		p.Steps = l.steps(*stepsE, t)
	} else {
		call.Timeout = t.timeout.v
		call.Retries = Retries{MaxAttempts: t.maxAttempts.v, BaseDelay: t.baseDelay.v, MaxDelay: t.maxDelay.v, Budget: t.budget.v}
		call.Expect = Expect{Status: slices.Clone(t.status.v), MinResults: t.minResults.v}
		p.Steps = []Step{call}
	}
	if p.Trace && setsTraceparent(p.Steps) {
		p.Trace = false
	}
	switch {
	case fixturesE != nil && !isSteps:
		d.errorf(fixturesE.keyN, "%s: only a probe with steps has fixtures of its own; a single call is tested by its consumer's fixtures", fixturesE.path)
	case fixturesE != nil:
		p.Fixtures = l.probeFixtures(*fixturesE, p.Steps)
	}
	return p
}

// probeKind requires exactly one of probeKinds. The first one written is
// the probe's kind; each later one is reported where it is written.
func (l *loader) probeKind(item ast.Node, path string, kinds []entry) {
	d := l.d
	keys := make([]string, len(probeKinds))
	needs := make([]string, len(probeKinds))
	for i, k := range probeKinds {
		keys[i] = k.key
		needs[i] = fmt.Sprintf("%s (%s)", k.key, k.what)
	}
	if len(kinds) == 0 {
		d.errorf(item, "%s: a probe needs one of %s", path, orList(needs))
		return
	}
	for _, e := range kinds[1:] {
		d.errorf(e.keyN, "%s: not allowed next to %s; a probe has exactly one of %s", e.path, kinds[0].key, orList(keys))
	}
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func (l *loader) defined(consumer string) bool {
	_, ok := l.consumerAt[consumer]
	return ok
}

func (l *loader) definedConsumers() string {
	if len(l.consumerAt) == 0 {
		return "no consumers are defined"
	}
	names := make([]string, 0, len(l.consumerAt))
	for n := range l.consumerAt {
		names = append(names, n)
	}
	sort.Strings(names)
	return "defined consumers: " + strings.Join(names, ", ")
}

func (l *loader) probeName(e entry, p *Probe) {
	d := l.d
	name, ok := d.str(e.value, e.path)
	if !ok {
		return
	}
	p.Name = name
	if !probeName.MatchString(name) {
		d.errorf(e.value, "%s: %q is not a valid probe name; use lower-case letters, digits, _, . and -", e.path, name)
		return
	}
	if first, dup := l.probeAt[name]; dup {
		line, col := d.pos(first)
		d.errorf(e.value, "%s: duplicate probe name %q; first defined at line %d, column %d", e.path, name, line, col)
		return
	}
	l.probeAt[name] = e.value
}

func (l *loader) request(e entry, r *Request) {
	d := l.d
	var methodN, urlN, jsonN, bodyN, headersN ast.Node
	var auth *entry
	methodOK := true
	_, ok := d.object(e.value, e.path, requestKeys, func(x entry) {
		switch x.key {
		case "method":
			r.Method, methodOK = d.str(x.value, x.path)
			methodN = x.value
		case "url":
			r.URL, urlN = l.endpointURL(x), x.value
		case "headers":
			r.Headers, headersN = l.headers(x), x.keyN
		case "auth":
			auth = &x
		case "query":
			var es []entry
			r.Query, es, _ = d.stringMap(x.value, x.path)
			for _, q := range es {
				if v, ok := r.Query[q.key]; ok {
					l.template(q.value, q.path, v)
				}
			}
		case "json":
			r.JSON, _ = d.value(x.value, x.path)
			r.HasJSON = true
			jsonN = x.keyN
			l.templateValue(x.value, x.path, r.JSON)
		case "body":
			r.Body, _ = d.str(x.value, x.path)
			bodyN = x.keyN
			l.template(x.value, x.path, r.Body)
		case "follow_redirects":
			follow, ok := d.boolean(x.value, x.path)
			r.NoRedirects = ok && !follow
		}
	})
	if !ok {
		return
	}
	if auth != nil {
		r.OAuth = l.auth(*auth, r.Headers, headersN)
	}
	if jsonN != nil && bodyN != nil {
		d.errorf(bodyN, "%s: json and body are mutually exclusive; send either a JSON fixture or raw text", e.path)
	}
	switch {
	case methodN != nil && !methodOK:
	case methodN != nil:
		if !slices.Contains(methods, r.Method) {
			d.errorf(methodN, "%s.method: unknown HTTP method %q; expected one of %s", e.path, r.Method, strings.Join(methods, ", "))
		}
	case jsonN != nil || bodyN != nil:
		r.Method = "POST"
	default:
		r.Method = "GET"
	}
	if urlN == nil {
		d.errorf(e.value, "%s: url is required", e.path)
	}
}

// endpointURL decodes a probe's url, request.url or mcp.url: an absolute
// http(s) URL. An error never quotes it: its query or user info may carry
// a credential.
func (l *loader) endpointURL(x entry) string {
	v, ok := l.d.str(x.value, x.path)
	if !ok {
		return v
	}
	l.urlSecrets = append(l.urlSecrets, urlSecrets(v, l.d.spans)...)
	l.template(x.value, x.path, v)
	if problem := httpURLProblem(placeholder(v)); problem != "" {
		l.d.errorf(x.value, "%s: expected an absolute http:// or https:// URL: %s", x.path, problem)
	}
	return v
}

// mcp decodes the tool call of an MCP probe (SPEC §10).
func (l *loader) mcp(e entry) *MCP {
	d := l.d
	m := &MCP{Arguments: map[string]any{}, IsError: results.ContractError}
	var urlN, toolN, commandN, headersN, headersKeyN, envN, dirN ast.Node
	var auth *entry
	_, ok := d.object(e.value, e.path, mcpKeys, func(x entry) {
		switch x.key {
		case "url":
			m.URL, urlN = l.endpointURL(x), x.value
		case "command":
			m.Command, commandN = l.command(x), x.value
		case "env":
			m.Env, envN = l.commandEnv(x), x.value
		case "dir":
			m.Dir, dirN = l.commandDir(x), x.value
		case "headers":
			m.Headers, headersN, headersKeyN = l.headers(x), x.value, x.keyN
		case "auth":
			auth = &x
		case "tool":
			toolN = x.value
			var ok bool
			if m.Tool, ok = d.str(x.value, x.path); ok && strings.TrimSpace(m.Tool) == "" {
				d.errorf(x.value, "%s: must not be empty; expected the name of the tool to call, as tools/list gives it", x.path)
			}
		case "arguments":
			m.Arguments = l.arguments(x)
			l.templateValue(x.value, x.path, m.Arguments)
		case "is_error":
			s, ok := d.str(x.value, x.path)
			if !ok {
				return
			}
			if !slices.Contains(isErrorOutcomes, s) {
				d.errorf(x.value, "%s: unknown outcome %q for a result with isError: true; expected %s", x.path, s, orList(isErrorOutcomes))
				return
			}
			m.IsError = results.Outcome(s)
		case "allow_destructive":
			m.AllowDestructive, _ = d.boolean(x.value, x.path)
		case "watch":
			m.Watch = l.watch(x)
		}
	})
	if !ok {
		return m
	}
	l.mcpServer(e, urlN, commandN, headersN, envN, dirN)
	if auth != nil {
		if commandN != nil {
			d.errorf(auth.value, "%s.auth: only for a server at a url; a stdio server takes its credentials from env", e.path)
		} else {
			m.OAuth = l.auth(*auth, m.Headers, headersKeyN)
		}
	}
	if toolN == nil {
		d.errorf(e.value, "%s: tool is required: the name of the tool to call, as tools/list gives it", e.path)
	}
	return m
}

// watch decodes mcp.watch: the listings besides tools/list whose change is
// a definition drift. Null is none.
func (l *loader) watch(x entry) MCPWatch {
	d := l.d
	var w MCPWatch
	items, ok := d.list(x.value, x.path)
	if !ok {
		return w
	}
	var seen []string
	for i, item := range items {
		p := index(x.path, i)
		s, ok := d.str(item, p)
		switch {
		case !ok:
		case !slices.Contains(watchables, s):
			d.errorf(item, "%s: unknown listing %q; expected %s", p, s, orList(watchables))
		case slices.Contains(seen, s):
			d.errorf(item, "%s: %s is listed twice", p, s)
		default:
			seen = append(seen, s)
			w.Prompts = w.Prompts || s == "prompts"
			w.Resources = w.Resources || s == "resources"
		}
	}
	return w
}

// arguments decodes mcp.arguments, the tool call's fixture: a JSON object,
// as MCP requires of a tools/call's arguments. Null is the empty object.
func (l *loader) arguments(x entry) map[string]any {
	d := l.d
	v, ok := d.value(x.value, x.path)
	if !ok {
		return map[string]any{}
	}
	switch v := v.(type) {
	case nil:
		return map[string]any{}
	case map[string]any:
		return v
	}
	d.errorf(x.value, "%s: expected a mapping of the tool's arguments (a JSON object), got %s", x.path, describe(x.value))
	return map[string]any{}
}

// headers decodes request headers. Values are secrets: no message here or
// in the decoder quotes one.
func (l *loader) headers(x entry) map[string]Secret {
	d := l.d
	values, es, _ := d.stringMap(x.value, x.path)
	out := make(map[string]Secret, len(values))
	seen := map[string]string{}
	for _, e := range es {
		if !validHeaderName(e.key) {
			d.errorf(e.keyN, "%s: %q is not a valid header name; expected letters, digits and !#$%%&'*+-.^_`|~", x.path, e.key)
			continue
		}
		if first, dup := seen[strings.ToLower(e.key)]; dup {
			d.errorf(e.keyN, "%s: header %q repeats %q; header names are case-insensitive", x.path, e.key, first)
			continue
		}
		seen[strings.ToLower(e.key)] = e.key
		v, ok := values[e.key]
		if !ok {
			continue // already reported
		}
		if !validHeaderValue(v) {
			d.errorf(e.value, "%s: the value contains a line break or another control character", e.path)
			continue
		}
		l.template(e.value, e.path, v)
		out[e.key] = Secret(v)
	}
	return out
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue rejects control characters other than tab: a line break
// would let a value smuggle a second header.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func (l *loader) labels(e entry) map[string]string {
	d := l.d
	values, es, _ := d.stringMap(e.value, e.path)
	for _, x := range es {
		switch {
		case !labelName.MatchString(x.key) || strings.HasPrefix(x.key, "__"):
			d.errorf(x.keyN, "%s: %q is not a valid label name; expected letters, digits and _, not starting with a digit or __", e.path, x.key)
			delete(values, x.key)
		case slices.Contains(reservedLabels, x.key):
			d.errorf(x.keyN, "%s: %q is reserved for toolpulse's own metric labels (%s)", e.path, x.key, strings.Join(reservedLabels, ", "))
			delete(values, x.key)
		}
	}
	return values
}

// tls builds the probe's client TLS configuration at load, so that a
// missing or malformed CA file is a config error and not a failing probe.
func (l *loader) tls(e entry) *tls.Config {
	d := l.d
	var pool *x509.CertPool
	insecure := false
	d.object(e.value, e.path, tlsKeys, func(x entry) {
		switch x.key {
		case "ca_file":
			file, ok := d.str(x.value, x.path)
			if !ok {
				return
			}
			if strings.TrimSpace(file) == "" {
				d.errorf(x.value, "%s: expected the path of a PEM file of CA certificates", x.path)
				return
			}
			name := l.rel(file)
			data, err := readSmallFile(name)
			if err != nil {
				d.errorf(x.value, "%s: cannot read %s: %s", x.path, name, err)
				return
			}
			pool = x509.NewCertPool()
			if !pool.AppendCertsFromPEM(data) {
				d.errorf(x.value, "%s: %s holds no PEM certificate; expected CA certificates in PEM form", x.path, name)
				pool = nil
			}
		case "insecure":
			insecure, _ = d.boolean(x.value, x.path)
		}
	})
	if pool == nil && !insecure {
		return nil
	}
	// InsecureSkipVerify only where the probe says insecure: true.
	return &tls.Config{RootCAs: pool, InsecureSkipVerify: insecure} //nolint:gosec
}
