package checks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/toolpulse/toolpulse/consumers"
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
