package checks

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

var (
	stepKeys    = []string{"name", "request", "mcp", "consumer", "capture", "until", "within", "every", "always", "timeout", "retries", "expect"}
	captureKeys = []string{"rule", "secret"}
	// stepTuningKeys are the tuning keys a step may set over its probe's.
	stepTuningKeys = []string{"timeout", "retries", "expect"}
	// safeMethods are retried as the probe's policy says; any other method
	// repeats an action, so its step is attempted once unless it says
	// otherwise (SPEC §11).
	safeMethods = []string{http.MethodGet, http.MethodHead, http.MethodOptions}
)

// DefaultEvery is how long a verification waits between polls when it
// does not say.
const DefaultEvery = time.Second

// scope is what the templates and rules of the probe being decoded may
// name: operation_id, and the captures of the steps decoded so far.
type scope struct {
	captured map[string]string // name -> the step that captures it
	// needs collects the captures the step being decoded names in its
	// templates and rules.
	needs []string
}

// need records that the step being decoded names a capture.
func (s *scope) need(name string) {
	if !slices.Contains(s.needs, name) {
		s.needs = append(s.needs, name)
	}
}

func newScope() *scope { return &scope{captured: map[string]string{}} }

// known lists the names in scope, for messages.
func (s *scope) known() string {
	names := []string{OperationIDVar}
	for n := range s.captured {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// template reports, at n, every reference in str to a name not in scope,
// and a template that does not parse.
func (l *loader) template(n ast.Node, path, str string) {
	refs, problem := parseTemplate(str)
	if problem != "" {
		l.d.errorf(n, "%s: %s", path, problem)
		return
	}
	for _, r := range refs {
		if r.name == OperationIDVar {
			continue
		}
		l.scope.need(r.name)
		if _, ok := l.scope.captured[r.name]; !ok {
			l.d.errorf(n, "%s: {{%s}} is not captured by an earlier step; known here: %s", path, r.name, l.scope.known())
		}
	}
}

// templateValue checks the strings inside a decoded json or arguments
// value, reporting at n.
func (l *loader) templateValue(n ast.Node, path string, v any) {
	switch v := v.(type) {
	case string:
		l.template(n, path, v)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			l.templateValue(n, path, v[k])
		}
	case []any:
		for _, x := range v {
			l.templateValue(n, path, x)
		}
	}
}

// vars reports, at n, every vars.NAME a rule reads that no earlier step
// captures, and a read of vars by a computed name, which no load can
// check.
func (l *loader) vars(n ast.Node, path string, names []string, dynamic bool) {
	if dynamic {
		l.d.errorf(n, "%s: reads vars by a computed name; write vars.NAME, with NAME captured by an earlier step", path)
	}
	for _, name := range names {
		l.scope.need(name)
		if _, ok := l.scope.captured[name]; !ok {
			l.d.errorf(n, "%s: vars.%s is not captured by an earlier step; known here: %s", path, name, l.scope.known())
		}
	}
}

// steps decodes a probe's steps: each an HTTP request or an MCP call,
// with what it captures for the steps after it. t is the probe's resolved
// tuning, which each step inherits.
func (l *loader) steps(e entry, t tuning) []Step {
	d := l.d
	items, ok := d.list(e.value, e.path)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		d.errorf(e.value, "%s: must list at least one step", e.path)
		return nil
	}
	var out []Step
	names := map[string]ast.Node{}
	for i, item := range items {
		if s, ok := l.step(item, index(e.path, i), t, names); ok {
			out = append(out, s)
		}
	}
	return out
}

// step decodes one step; ok is false when the item is not a mapping.
func (l *loader) step(item ast.Node, path string, t tuning, names map[string]ast.Node) (Step, bool) {
	d := l.d
	s := Step{}
	l.scope.needs = nil
	var own tuning
	var kinds []entry
	var consumerE, captureE, untilE, withinE, everyE, retriesE *entry
	present, ok := d.object(item, path, stepKeys, func(x entry) {
		if slices.Contains(stepTuningKeys, x.key) {
			d.tuningKey(x, fromProbe+1, &own)
			if x.key == "retries" {
				retriesE = &x
			}
			return
		}
		switch x.key {
		case "name":
			s.Name = l.stepName(x, names)
		case "request":
			kinds = append(kinds, x)
			l.request(x, &s.Request)
		case "mcp":
			kinds = append(kinds, x)
			s.MCP = l.mcp(x)
		case "consumer":
			consumerE = &x
		case "capture":
			captureE = &x
		case "until":
			untilE = &x
		case "within":
			withinE = &x
		case "every":
			everyE = &x
		case "always":
			s.Always, _ = d.boolean(x.value, x.path)
		}
	})
	if !ok {
		return s, false
	}
	if _, ok := present["name"]; !ok {
		d.errorf(item, "%s: name is required", path)
	}
	l.stepKind(item, path, kinds)

	if consumerE != nil {
		s.Consumer = l.stepConsumer(*consumerE)
	}
	if untilE != nil {
		s.Until = l.expression(*untilE, "until")
	}
	l.polling(&s, path, untilE, withinE, everyE)

	st := t.over(own)
	d.check(st)
	s.Timeout = st.timeout.v
	s.Retries = Retries{MaxAttempts: st.maxAttempts.v, BaseDelay: st.baseDelay.v, MaxDelay: st.maxDelay.v, Budget: st.budget.v}
	s.Expect = Expect{Status: slices.Clone(st.status.v), MinResults: st.minResults.v}
	if retriesE == nil && mutating(s) {
		// Never repeat a refund blindly.
		s.Retries.MaxAttempts = 1
	}

	// Captures come last: this step's rules see only earlier captures,
	// and the steps after it see these.
	s.Needs = l.scope.needs
	if captureE != nil {
		s.Capture = l.captures(*captureE, s.Name)
	}
	return s, true
}

// stepName decodes a step's name: a probe name's syntax, unique in the
// probe.
func (l *loader) stepName(x entry, names map[string]ast.Node) string {
	d := l.d
	name, ok := d.str(x.value, x.path)
	if !ok {
		return ""
	}
	if !probeName.MatchString(name) {
		d.errorf(x.value, "%s: %q is not a valid step name; use lower-case letters, digits, _, . and -", x.path, name)
		return name
	}
	if first, dup := names[name]; dup {
		line, col := d.pos(first)
		d.errorf(x.value, "%s: duplicate step name %q; first defined at line %d, column %d", x.path, name, line, col)
		return name
	}
	names[name] = x.value
	return name
}

// stepKind requires exactly one of request and mcp.
func (l *loader) stepKind(item ast.Node, path string, kinds []entry) {
	d := l.d
	if len(kinds) == 0 {
		d.errorf(item, "%s: a step needs request (an HTTP call) or mcp (an MCP tool call)", path)
		return
	}
	for _, e := range kinds[1:] {
		d.errorf(e.keyN, "%s: not allowed next to %s; a step has exactly one of request or mcp", e.path, kinds[0].key)
	}
}

// stepConsumer resolves a step's consumer, whose rules may read the
// captures of earlier steps.
func (l *loader) stepConsumer(x entry) *consumers.Consumer {
	d := l.d
	name, ok := d.str(x.value, x.path)
	if !ok {
		return nil
	}
	if !l.defined(name) {
		d.errorf(x.value, "%s: unknown consumer %q; %s", x.path, name, l.definedConsumers())
		return nil
	}
	c := l.consumers[name] // nil when it failed to compile, already reported
	if c != nil {
		names, dynamic := c.Vars()
		l.vars(x.value, x.path, names, dynamic)
	}
	return c
}

// expression compiles a step's rule (until, or a capture's), reporting a
// compile error at its place in the file and every vars.NAME it reads
// that is not in scope.
func (l *loader) expression(x entry, rule string) *consumers.Expression {
	d := l.d
	text, ok := d.str(x.value, x.path)
	if !ok {
		return nil
	}
	ex, re := consumers.CompileExpression(rule, text)
	if re != nil {
		line, col := d.rulePos(x.value, re.Line, re.Column)
		d.errs.add(d.file, line, col, "%s: %s rule (line %d, column %d): %s", x.path, rule, re.Line, re.Column, re.Message)
		return nil
	}
	names, dynamic := ex.Vars()
	l.vars(x.value, x.path, names, dynamic)
	return ex
}

// polling decodes within and every, which belong to an until.
func (l *loader) polling(s *Step, path string, until, within, every *entry) {
	d := l.d
	if within != nil {
		if v := positiveDuration(d, within.value, within.path, fromProbe); !v.bad {
			s.Within = v.v
		}
	}
	if every != nil {
		if v := positiveDuration(d, every.value, every.path, fromProbe); !v.bad {
			s.Every = v.v
		}
	}
	if until == nil {
		for _, x := range []*entry{within, every} {
			if x != nil {
				d.errorf(x.keyN, "%s: only a verification polls; %s belongs next to until", x.path, x.key)
			}
		}
		return
	}
	if within == nil {
		d.errorf(until.keyN, "%s: until needs within: how long the claim may take to become true, such as within: 10s", path)
	}
	if every == nil {
		s.Every = DefaultEvery
	}
	if s.Within > 0 && s.Every > s.Within {
		d.errorf(every.value, "%s: every (%s) must not exceed within (%s)", every.path, fmtDuration(s.Every), fmtDuration(s.Within))
	}
}

// captures decodes what a step captures: name: rule, or name: {rule,
// secret}. Each name is new in the probe and enters scope for the steps
// after this one.
func (l *loader) captures(e entry, step string) []Capture {
	d := l.d
	es, ok := d.entries(e.value, e.path)
	if !ok {
		return nil
	}
	var out []Capture
	var added []string
	for _, x := range es {
		c := Capture{Name: x.key}
		switch {
		case !varName.MatchString(x.key):
			d.errorf(x.keyN, "%s: %q is not a valid capture name; use lower-case letters, digits and _, not starting with a digit", e.path, x.key)
			continue
		case x.key == OperationIDVar:
			d.errorf(x.keyN, "%s: %q is reserved: {{operation_id}} is the run's own id", e.path, x.key)
			continue
		}
		if first, dup := l.scope.captured[x.key]; dup {
			d.errorf(x.keyN, "%s: %q is already captured by step %q", e.path, x.key, first)
			continue
		}
		rule := x
		if mapping, isMap := resolvedMapping(d, x.value, x.path); isMap {
			var ruleE *entry
			d.object(mapping, x.path, captureKeys, func(y entry) {
				switch y.key {
				case "rule":
					ruleE = &y
				case "secret":
					c.Secret, _ = d.boolean(y.value, y.path)
				}
			})
			if ruleE == nil {
				d.errorf(x.value, "%s: rule is required: an expr rule over the step's answer, such as response.access_token", x.path)
				continue
			}
			rule = *ruleE
		}
		c.Rule = l.expression(rule, "capture "+x.key)
		out = append(out, c)
		added = append(added, x.key)
	}
	for _, name := range added {
		l.scope.captured[name] = step
	}
	return out
}

// resolvedMapping reports whether n (after aliases) is a mapping.
func resolvedMapping(d *decoder, n ast.Node, path string) (ast.Node, bool) {
	r, ok := d.resolve(n, path)
	if !ok || r == nil {
		return n, false
	}
	_, isMap := r.(ast.MapNode)
	return r, isMap
}

// mutating reports whether a step's call may change something, so that
// repeating it could repeat the change: an HTTP method other than GET,
// HEAD and OPTIONS without an Idempotency-Key, or any MCP tool call (its
// annotations are only known at run time, and a tools/call carries no
// idempotency key).
func mutating(s Step) bool {
	if s.MCP != nil {
		return true
	}
	return !slices.Contains(safeMethods, s.Request.Method) && !hasHeader(s.Request.Headers, "Idempotency-Key")
}

// hasHeader reports whether h sets name, case-insensitively.
func hasHeader(h map[string]Secret, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

var (
	probeFixtureKeys = []string{"name", "answers", "expect"}
	answerKeys       = []string{"response", "result", "status", "headers"}
	// stepExpectationKeys are a fixture expectation's, and the step that
	// must decide.
	stepExpectationKeys = append(slices.Clone(expectationKeys), "step")
)

// probeFixtures decodes a multi-step probe's canned runs: a name, the
// answers of each step by name (one answer, or a list: one per attempt or
// poll), and the expected verdict, which may name the deciding step.
func (l *loader) probeFixtures(e entry, steps []Step) []ProbeFixture {
	d := l.d
	items, _ := d.list(e.value, e.path)
	stepNames := make([]string, len(steps))
	for i, s := range steps {
		stepNames[i] = s.Name
	}
	var out []ProbeFixture
	seen := map[string]ast.Node{}
	for i, item := range items {
		p := index(e.path, i)
		f := ProbeFixture{Answers: map[string][]consumers.Fixture{}}
		present, ok := d.object(item, p, probeFixtureKeys, func(x entry) {
			switch x.key {
			case "name":
				f.Name, _ = d.str(x.value, x.path)
				if first, dup := seen[f.Name]; dup && f.Name != "" {
					line, col := d.pos(first)
					d.errorf(x.value, "%s: duplicate fixture name %q; first defined at line %d, column %d", x.path, f.Name, line, col)
				}
				seen[f.Name] = x.value
			case "answers":
				es, _ := d.entries(x.value, x.path)
				for _, a := range es {
					if !slices.Contains(stepNames, a.key) {
						hint := ""
						if s := Suggest(a.key, stepNames); s != "" {
							hint = fmt.Sprintf(" (did you mean %q?)", s)
						}
						d.errorf(a.keyN, "%s: no step is named %q%s; steps: %s", x.path, a.key, hint, strings.Join(stepNames, ", "))
						continue
					}
					f.Answers[a.key] = l.answers(a)
				}
			case "expect":
				f.Expect, f.Step = l.stepExpectation(x, stepNames)
			}
		})
		if !ok {
			continue
		}
		for _, key := range []string{"name", "answers", "expect"} {
			if _, ok := present[key]; !ok {
				d.errorf(item, "%s: %s is required", p, key)
			}
		}
		out = append(out, f)
	}
	return out
}

// answers decodes one step's canned answers: one, or a list of them.
func (l *loader) answers(e entry) []consumers.Fixture {
	d := l.d
	r, ok := d.resolve(e.value, e.path)
	if !ok {
		return nil
	}
	if _, isList := r.(*ast.SequenceNode); !isList {
		return []consumers.Fixture{l.answer(e.value, e.path)}
	}
	items, _ := d.list(r, e.path)
	if len(items) == 0 {
		d.errorf(r, "%s: must list at least one answer", e.path)
	}
	out := make([]consumers.Fixture, 0, len(items))
	for i, item := range items {
		out = append(out, l.answer(item, index(e.path, i)))
	}
	return out
}

// answer decodes one canned answer: response or result (an MCP tool's
// whole CallToolResult), optional status (default 200) and headers.
func (l *loader) answer(n ast.Node, path string) consumers.Fixture {
	d := l.d
	var f consumers.Fixture
	var kinds []entry
	d.object(n, path, answerKeys, func(x entry) {
		switch x.key {
		case "response":
			kinds = append(kinds, x)
			v, _ := d.value(x.value, x.path)
			f.Response = consumers.Normalize(v)
		case "result":
			kinds = append(kinds, x)
			f.Result = d.toolResult(x)
		case "status":
			v, ok := d.integer(x.value, x.path)
			if ok && (v < 100 || v > 599) {
				d.errorf(x.value, "%s: %d is not an HTTP status code; expected 100 to 599", x.path, v)
			}
			f.Status = int(v)
		case "headers":
			h, _, _ := d.stringMap(x.value, x.path)
			f.Headers = make(map[string]string, len(h))
			for k, v := range h {
				f.Headers[strings.ToLower(k)] = v
			}
		}
	})
	if len(kinds) > 1 {
		d.errorf(kinds[1].keyN, "%s: not allowed next to %s; an answer gives either response or result", kinds[1].path, kinds[0].key)
	}
	return f
}

// stepExpectation decodes a probe fixture's expect: an expectation as a
// consumer fixture's, which may also name the step that must decide.
func (l *loader) stepExpectation(x entry, stepNames []string) (consumers.Expectation, string) {
	d := l.d
	step := ""
	if r, ok := d.resolve(x.value, x.path); ok {
		if _, isMap := r.(ast.MapNode); isMap {
			es, _ := d.entries(r, x.path)
			for _, y := range es {
				if y.key != "step" {
					continue
				}
				if s, ok := d.str(y.value, y.path); ok {
					if !slices.Contains(stepNames, s) {
						d.errorf(y.value, "%s: no step is named %q; steps: %s", y.path, s, strings.Join(stepNames, ", "))
					}
					step = s
				}
			}
		}
	}
	exp, _ := d.expectationWith(x.value, x.path, stepExpectationKeys)
	if step != "" && exp.Outcome == results.Pass {
		d.errorf(x.value, "%s: a pass has no deciding step; step is for contract_error and unavailable", x.path)
	}
	return exp, step
}
