package checks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

var (
	consumerRefKeys  = []string{"name", "file", "version", "select", "validate", "fixtures", "accept_mutations"}
	consumerBodyKeys = []string{"name", "version", "select", "validate", "fixtures", "accept_mutations"}
	fixtureKeys      = []string{"name", "response", "result", "status", "headers", "min_results", "expect"}
	// toolResultKeys are the keys of an MCP CallToolResult (SPEC §10).
	toolResultKeys  = []string{"content", "structuredContent", "isError", "_meta"}
	expectationKeys = []string{"outcome", "code", "min_selected"}
	mutationKeys    = []string{"mutation", "reason"}
)

// maxIncludeBytes bounds a consumer or CA file: they are small, and a path
// such as /dev/zero must fail instead of filling memory.
const maxIncludeBytes = 4 << 20

// consumerSpec is a consumer as written, with where its parts are, so that
// a rule's compile error can point into the YAML file.
type consumerSpec struct {
	d        *decoder // the file it is written in
	src      consumers.Source
	nameN    ast.Node
	selectN  ast.Node // the resolved scalar holding the rule text
	validN   ast.Node
	hasRules bool
}

// place is where something was defined, for "first defined at" messages.
type place struct {
	file      string
	line, col int
}

func (p place) from(file string) string {
	if p.file == file {
		return fmt.Sprintf("line %d, column %d", p.line, p.col)
	}
	return fmt.Sprintf("%s:%d:%d", p.file, p.line, p.col)
}

// consumerEntry decodes one item of consumers: (a file reference or inline
// rules), compiles it and registers it under its name.
func (l *loader) consumerEntry(item ast.Node, path string) {
	d := l.d
	var (
		name, file   string
		nameN, fileN ast.Node
		inline       []entry
	)
	present, ok := d.object(item, path, consumerRefKeys, func(e entry) {
		switch e.key {
		case "name":
			if v, ok := d.str(e.value, e.path); ok {
				name, nameN = v, e.value
			}
		case "file":
			file, _ = d.str(e.value, e.path)
			fileN = e.value
		default:
			inline = append(inline, e)
		}
	})
	if !ok {
		return
	}

	var spec *consumerSpec
	nameD := d // the file the name is written in
	switch {
	case fileN != nil:
		for _, e := range inline {
			d.errorf(e.keyN, "%s: not allowed next to file; a consumer is either a file or inline rules", e.path)
		}
		if file == "" {
			d.errorf(fileN, "%s.file: expected the path of a consumer file", path)
			break
		}
		// A file that cannot be read still defines the name given here, so
		// that probes using it do not add "unknown consumer" errors.
		spec = l.consumerFile(file, fileN, join(path, "file"))
		switch {
		case spec == nil:
		case name != "" && spec.src.Name != "" && name != spec.src.Name:
			d.errorf(nameN, "%s.name: %q does not match the name %q in %s", path, name, spec.src.Name, spec.d.file)
		case name == "" && spec.src.Name == "":
			d.errorf(fileN, "%s: the consumer has no name; give name: here or in %s", path, spec.d.file)
		case name == "":
			name, nameN, nameD = spec.src.Name, spec.nameN, spec.d
		}
	default:
		// Rules and fixtures are code and data: never expanded.
		d.expand = false
		spec = d.consumerBody(inline, path)
		d.expand = true
		if e, has := present["name"]; !has {
			d.errorf(item, "%s: name is required", path)
		} else if name == "" && nameN != nil {
			d.errorf(e.value, "%s.name: must not be empty", path)
		}
	}

	var c *consumers.Consumer
	if spec != nil {
		spec.src.Name = name
		c = spec.compile()
	}
	if name == "" {
		return
	}
	line, col := nameD.pos(nameN)
	here := place{file: nameD.file, line: line, col: col}
	if first, dup := l.consumerAt[name]; dup {
		l.errs.add(here.file, here.line, here.col, "%s: duplicate consumer name %q; first defined at %s", join(path, "name"), name, first.from(here.file))
		return
	}
	l.consumerAt[name] = here
	if c != nil {
		l.consumers[name] = c
	}
}

// consumerFile reads and decodes a consumer file named relative to the
// config's directory; errors in it name it as joined with that directory.
func (l *loader) consumerFile(file string, fileN ast.Node, path string) *consumerSpec {
	name := l.rel(file)
	data, err := readSmallFile(name)
	if err != nil {
		l.d.errorf(fileN, "%s: cannot read consumer file %s: %s%s", path, name, err, nearFile(file, name, err))
		return nil
	}
	fd, body := parseYAML(name, data, l.errs, l.d.lookupEnv)
	if body == nil {
		return nil
	}
	fd.expand = false
	var es []entry
	if _, ok := fd.object(body, "", consumerBodyKeys, func(e entry) { es = append(es, e) }); !ok {
		return nil
	}
	return fd.consumerBody(es, "")
}

// LoadConsumer reads and compiles one consumer file on its own, as
// `toolpulse test` does for a consumer no config uses yet. Errors are an
// ErrorList naming path:line:col, as Load's are.
func LoadConsumer(path string) (*consumers.Consumer, error) {
	data, err := readSmallFile(path)
	if err != nil {
		return nil, ErrorList{{File: path, Message: "cannot read consumer file: " + err.Error() + nearFile(path, path, err)}}
	}
	errs := &ErrorList{}
	d, body := parseYAML(path, data, errs, nil)
	if body == nil {
		return nil, errs.Err()
	}
	d.expand = false // rules and fixtures are code and data
	var es []entry
	present, ok := d.object(body, "", consumerBodyKeys, func(e entry) { es = append(es, e) })
	if !ok {
		return nil, errs.Err()
	}
	spec := d.consumerBody(es, "")
	if _, has := present["name"]; !has {
		d.errorf(body, "name is required")
	}
	c := spec.compile()
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// consumerBody decodes the keys of a consumer (SPEC §4) written in d.
func (d *decoder) consumerBody(es []entry, path string) *consumerSpec {
	spec := &consumerSpec{d: d}
	for _, e := range es {
		switch e.key {
		case "name":
			spec.src.Name, _ = d.str(e.value, e.path)
			spec.nameN = e.value
		case "version":
			spec.src.Version, _ = d.str(e.value, e.path)
		case "select":
			spec.src.Select, spec.selectN, _ = d.rule(e.value, e.path)
		case "validate":
			spec.src.Validate, spec.validN, _ = d.rule(e.value, e.path)
		case "fixtures":
			spec.src.Fixtures = d.fixtures(e.value, e.path)
		case "accept_mutations":
			spec.src.AcceptMutations = d.mutations(e.value, e.path)
		}
	}
	spec.hasRules = true
	if strings.TrimSpace(spec.src.Select) == "" {
		at := spec.selectN
		if at == nil && len(es) > 0 {
			at = es[0].keyN
		}
		d.errorf(at, "%s: a consumer needs a select rule that evaluates to the list of items the caller uses", label(path))
		spec.hasRules = false
	}
	return spec
}

// rule decodes a rule's text and returns the scalar node it is written in.
func (d *decoder) rule(n ast.Node, path string) (string, ast.Node, bool) {
	r, ok := d.resolve(n, path)
	if !ok {
		return "", nil, false
	}
	s, ok := d.str(r, path)
	return s, r, ok
}

// compile compiles the consumer's rules and reports each compile error at
// its place in the YAML file, keeping the position inside the rule too.
func (s *consumerSpec) compile() *consumers.Consumer {
	src := s.src
	if !s.hasRules {
		// Still compile validate, so that all of its errors show now.
		src.Select = "[]"
	}
	c, errs := consumers.Compile(src)
	for _, re := range errs {
		n := s.selectN
		if re.Rule == "validate" {
			n = s.validN
		}
		line, col := s.d.rulePos(n, re.Line, re.Column)
		s.d.errs.add(s.d.file, line, col, "%s rule (line %d, column %d): %s", re.Rule, re.Line, re.Column, re.Message)
	}
	if !s.hasRules {
		return nil
	}
	return c
}

// rulePos maps a position inside a rule to the YAML file. A block scalar's
// text starts on the line after its header, at the block's indentation; a
// one-line scalar's text starts at its column (after the quote, if quoted).
// Folded and multi-line flow scalars rewrite line breaks, so for them the
// scalar's own position is the best we can say.
func (d *decoder) rulePos(n ast.Node, line, col int) (int, int) {
	switch v := n.(type) {
	case *ast.LiteralNode:
		start, _ := tokenPos(v.Start)
		indent := blockIndent(v)
		if v.Start.Type == token.LiteralType {
			return start + line, indent + col
		}
		return start + 1, indent + 1
	case *ast.StringNode:
		tl, tc := tokenPos(v.Token)
		if line != 1 || strings.Contains(strings.TrimSpace(v.Token.Origin), "\n") {
			return tl, tc
		}
		if v.Token.Type == token.SingleQuoteType || v.Token.Type == token.DoubleQuoteType {
			tc++
		}
		return tl, tc + col - 1
	}
	return d.pos(n)
}

// blockIndent is the number of spaces before a block scalar's text: the
// indentation of its first non-blank source line less whatever of it the
// text keeps (an explicit indentation indicator leaves some in).
func blockIndent(v *ast.LiteralNode) int {
	if v.Value == nil || v.Value.Token == nil {
		return 0
	}
	lead := func(s string) int {
		for _, line := range strings.Split(s, "\n") {
			if strings.TrimSpace(line) != "" {
				return len(line) - len(strings.TrimLeft(line, " "))
			}
		}
		return 0
	}
	return max(lead(v.Value.Token.Origin)-lead(v.Value.Value), 0)
}

func (d *decoder) fixtures(n ast.Node, path string) []consumers.Fixture {
	items, _ := d.list(n, path)
	var out []consumers.Fixture
	seen := map[string]ast.Node{}
	for i, item := range items {
		p := index(path, i)
		f := consumers.Fixture{MinResults: DefaultMinResults}
		var answers []entry // response, result: exactly one
		present, ok := d.object(item, p, fixtureKeys, func(e entry) {
			switch e.key {
			case "name":
				f.Name, _ = d.str(e.value, e.path)
				if first, dup := seen[f.Name]; dup && f.Name != "" {
					line, col := d.pos(first)
					d.errorf(e.value, "%s: duplicate fixture name %q; first defined at line %d, column %d", e.path, f.Name, line, col)
				}
				seen[f.Name] = e.value
			case "response":
				answers = append(answers, e)
				v, _ := d.value(e.value, e.path)
				f.Response = consumers.Normalize(v)
			case "result":
				answers = append(answers, e)
				f.Result = d.toolResult(e)
			case "status":
				v, ok := d.integer(e.value, e.path)
				if ok && (v < 100 || v > 599) {
					d.errorf(e.value, "%s: %d is not an HTTP status code; expected 100 to 599", e.path, v)
				}
				f.Status = int(v)
			case "headers":
				h, _, _ := d.stringMap(e.value, e.path)
				// Rules see header names in lower case (SPEC §4).
				f.Headers = make(map[string]string, len(h))
				for k, v := range h {
					f.Headers[strings.ToLower(k)] = v
				}
			case "min_results":
				v, ok := d.integer(e.value, e.path)
				if ok && v < 0 {
					d.errorf(e.value, "%s: must not be negative, got %d", e.path, v)
				}
				f.MinResults = int(v)
			case "expect":
				f.Expect, _ = d.expectation(e.value, e.path)
			}
		})
		if !ok {
			continue
		}
		for _, key := range []string{"name", "expect"} {
			if _, ok := present[key]; !ok {
				d.errorf(item, "%s: %s is required", p, key)
			}
		}
		switch {
		case len(answers) == 0:
			d.errorf(item, "%s: response or result is required: the decoded answer, or an MCP tool's whole CallToolResult", p)
		case len(answers) > 1:
			d.errorf(answers[1].keyN, "%s: not allowed next to %s; a fixture gives either response (the decoded answer) or result (an MCP tool's whole CallToolResult)", answers[1].path, answers[0].key)
		}
		out = append(out, f)
	}
	return out
}

// toolResult decodes a fixture's result: a CallToolResult as a server
// would send it, checked for the shape SPEC §10 reads (content items with
// a type, text items with their text, an object of structuredContent, a
// boolean isError). It returns nil when the value is not a mapping.
func (d *decoder) toolResult(e entry) map[string]any {
	present, ok := d.object(e.value, e.path, toolResultKeys, func(x entry) {
		switch x.key {
		case "content":
			items, _ := d.list(x.value, x.path)
			for i, item := range items {
				d.contentItem(item, index(x.path, i))
			}
		case "structuredContent", "_meta":
			if r, ok := d.resolve(x.value, x.path); ok {
				if _, isMap := r.(ast.MapNode); !isMap {
					d.errorf(x.value, "%s: expected a mapping (a JSON object), got %s", x.path, describe(r))
				}
			}
		case "isError":
			// Strictly a YAML boolean: the fixture is data, and "true"
			// would reach the rule as a string.
			if r, ok := d.resolve(x.value, x.path); ok {
				if _, isBool := r.(*ast.BoolNode); !isBool {
					d.errorf(x.value, "%s: expected true or false, got %s", x.path, describe(r))
				}
			}
		}
	})
	if !ok {
		return nil
	}
	if _, has := present["content"]; !has {
		d.errorf(e.value, "%s: content is required: a list of content items, such as [{type: text, text: \"...\"}]", e.path)
	}
	v, _ := d.value(e.value, e.path)
	m, _ := consumers.Normalize(v).(map[string]any)
	if m == nil {
		m = map[string]any{} // result: null, already reported
	}
	return m
}

// contentItem checks one item of a CallToolResult's content: a mapping
// with a non-empty string type, and a string text when the type is text.
// Other keys are the content type's own and are kept as written.
func (d *decoder) contentItem(n ast.Node, path string) {
	es, ok := d.entries(n, path)
	if !ok {
		return
	}
	r, _ := d.resolve(n, path)
	if r == nil || r.Type() == ast.NullType {
		d.errorf(n, "%s: expected a content item, such as {type: text, text: \"...\"}, got null", path)
		return
	}
	var typ string
	var typeN, textN ast.Node
	for _, x := range es {
		switch x.key {
		case "type":
			typeN = x.value
			if rv, ok := d.resolve(x.value, x.path); ok {
				if sn, isStr := rv.(*ast.StringNode); isStr {
					typ = sn.Value
				}
			}
			if strings.TrimSpace(typ) == "" {
				d.errorf(x.value, "%s: expected the content type as a string, such as text, image or resource_link", x.path)
			}
		case "text":
			textN = x.value
		}
	}
	switch {
	case typeN == nil:
		d.errorf(n, "%s: type is required: the content type, such as text, image or resource_link", path)
	case typ == "text" && textN == nil:
		d.errorf(n, "%s: text is required in a content item of type text", path)
	case typ == "text":
		if rv, ok := d.resolve(textN, join(path, "text")); ok {
			if _, isStr := rv.(*ast.StringNode); !isStr {
				if _, isLit := rv.(*ast.LiteralNode); !isLit {
					d.errorf(textN, "%s.text: expected a string, got %s", path, describe(rv))
				}
			}
		}
	}
}

// expectation decodes `pass`, `contract_error`, `unavailable`, or
// {outcome, code} / {outcome: pass, min_selected: N}.
func (d *decoder) expectation(n ast.Node, path string) (consumers.Expectation, bool) {
	return d.expectationWith(n, path, expectationKeys)
}

// expectationWith is expectation with the keys a mapping may hold: a
// multi-step probe's fixture also names its deciding step, which the
// caller reads.
func (d *decoder) expectationWith(n ast.Node, path string, keys []string) (consumers.Expectation, bool) {
	var x consumers.Expectation
	r, ok := d.resolve(n, path)
	if !ok {
		return x, false
	}
	if _, isMap := r.(ast.MapNode); !isMap {
		s, ok := d.str(r, path)
		if !ok {
			return x, false
		}
		x.Outcome, ok = d.outcome(r, path, s)
		return x, ok
	}
	var codeN, minN ast.Node
	present, ok := d.object(r, path, keys, func(e entry) {
		switch e.key {
		case "outcome":
			if s, ok := d.str(e.value, e.path); ok {
				x.Outcome, _ = d.outcome(e.value, e.path, s)
			}
		case "code":
			s, _ := d.str(e.value, e.path)
			x.Code, codeN = results.Code(s), e.value
		case "min_selected":
			v, ok := d.integer(e.value, e.path)
			if ok && v < 0 {
				d.errorf(e.value, "%s: must not be negative, got %d", e.path, v)
			}
			x.MinSelected, minN = int(v), e.value
		}
	})
	if !ok {
		return x, false
	}
	if _, ok := present["outcome"]; !ok {
		d.errorf(r, "%s: outcome is required", path)
		return x, false
	}
	switch {
	case codeN != nil && x.Outcome == results.Pass:
		d.errorf(codeN, "%s.code: a pass has no code; code is for contract_error and unavailable", path)
	case codeN != nil && x.Outcome == results.Unavailable && !slices.Contains(results.UnavailableCodes, x.Code):
		d.errorf(codeN, "%s.code: %q is not an unavailable code; expected one of %s", path, x.Code, codeList(results.UnavailableCodes))
	case codeN != nil && x.Outcome == results.ContractError && !slices.Contains(results.ContractCodes, x.Code) && !results.ValidCustomCode(string(x.Code)):
		d.errorf(codeN, "%s.code: %q is not a contract_error code; expected a built-in one (%s) or a snake_case code a rule raises with fail()", path, x.Code, codeList(results.ContractCodes))
	}
	if minN != nil && x.Outcome != results.Pass && x.Outcome != "" {
		d.errorf(minN, "%s.min_selected: only a pass selects items; min_selected needs outcome: pass", path)
	}
	return x, true
}

func (d *decoder) outcome(n ast.Node, path, s string) (results.Outcome, bool) {
	o, err := results.ParseOutcome(s)
	if err != nil {
		d.errorf(n, "%s: unknown outcome %q; expected pass, contract_error or unavailable", path, s)
		return "", false
	}
	return o, true
}

func codeList(codes []results.Code) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

func (d *decoder) mutations(n ast.Node, path string) []consumers.AcceptedMutation {
	items, _ := d.list(n, path)
	var out []consumers.AcceptedMutation
	for i, item := range items {
		p := index(path, i)
		var m consumers.AcceptedMutation
		present, ok := d.object(item, p, mutationKeys, func(e entry) {
			s, ok := d.str(e.value, e.path)
			if ok && strings.TrimSpace(s) == "" {
				d.errorf(e.value, "%s: must not be empty", e.path)
			}
			if e.key == "mutation" {
				m.Mutation = s
			} else {
				m.Reason = s
			}
		})
		if !ok {
			continue
		}
		for _, key := range mutationKeys {
			if _, ok := present[key]; !ok {
				d.errorf(item, "%s: %s is required: an accepted mutation names the mutation and why it is acceptable", p, key)
			}
		}
		out = append(out, m)
	}
	return out
}

// readSmallFile reads a regular file of at most maxIncludeBytes. Errors
// say why without repeating the path, which the caller names.
func readSmallFile(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, pathErr(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, pathErr(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIncludeBytes+1))
	if err != nil {
		return nil, pathErr(err)
	}
	if len(data) > maxIncludeBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxIncludeBytes)
	}
	return data, nil
}

// nearFile is the "did you mean" of a file that does not exist: the
// closest name of a file in the same directory, written as the user wrote
// the path (written, while name is where it was looked for).
func nearFile(written, name string, err error) string {
	if !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	entries, _ := os.ReadDir(filepath.Dir(name))
	var files []string
	for _, e := range entries {
		if !e.IsDir() {
			files = append(files, e.Name())
		}
	}
	s := Suggest(filepath.Base(name), files)
	if s == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", filepath.Join(filepath.Dir(written), s))
}

// pathErr drops the path and operation from an *fs.PathError.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
