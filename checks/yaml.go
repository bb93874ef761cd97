package checks

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/toolpulse/toolpulse/consumers"
)

// This file decodes the YAML syntax tree by hand instead of unmarshalling
// into structs: only the tree keeps a position for every key and value, and
// walking it lets one pass report every error (unknown keys, duplicates,
// wrong types, bad durations) instead of stopping at the first.

// maxNodes bounds how many values one file may expand to. Aliases make a
// small file describe an exponential tree ("billion laughs").
const maxNodes = 1 << 20

// decoder reads one YAML file's tree and records positioned errors.
type decoder struct {
	file      string   // the name errors carry
	lines     []string // the source, to locate text inside a scalar
	lookupEnv func(string) (string, bool)
	// expand says whether ${VAR} is expanded in scalars. Consumer rules and
	// fixtures are never expanded: they are code and data, not settings,
	// and a rule's hash must not depend on the environment.
	expand bool
	// spans are where ${...} values landed in the last scalar expanded,
	// for a URL whose expansions are secrets.
	spans   []envSpan
	errs    *ErrorList
	anchors map[string]ast.Node
	cyclic  map[string]bool
	budget  int
}

// parseYAML parses one file into the body of its single document. It
// reports a syntax error, an empty file or several documents and returns
// nil then.
func parseYAML(file string, data []byte, errs *ErrorList, lookupEnv func(string) (string, bool)) (d *decoder, body ast.Node) {
	d = &decoder{
		file:      file,
		lines:     strings.Split(string(data), "\n"),
		lookupEnv: lookupEnv,
		expand:    true,
		errs:      errs,
		budget:    maxNodes,
	}
	defer func() {
		// The parser is third-party code fed user input; a panic in it must
		// become a config error, not a crashed daemon on SIGHUP.
		if p := recover(); p != nil {
			errs.add(file, 1, 1, "cannot parse YAML: %v", p)
			body = nil
		}
	}()
	// The lexer turns bytes that are not UTF-8 into U+FFFD, so a value
	// would silently become another one: refuse the file instead.
	if line, col, ok := invalidUTF8(data); !ok {
		errs.add(file, line, col, "not valid UTF-8; a config file is UTF-8 text")
		return d, nil
	}
	// The file is read into tokens once, for bigMapping and the parser:
	// some 40 bytes of heap per byte of YAML, the larger part of the
	// start-up's peak memory with a big config (BENCHMARKS.md).
	tokens := lexer.Tokenize(string(data))
	if key := bigMapping(tokens); key != nil {
		errs.add(file, key.Position.Line, key.Position.Column,
			"a mapping with more than %d keys; the parser's time grows with the square of a mapping's keys", maxMapKeys)
		return d, nil
	}
	// Duplicate keys are detected while walking, so that every one is
	// reported instead of only the first.
	f, err := parser.Parse(tokens, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil && ye.GetToken().Position != nil {
			pos := ye.GetToken().Position
			errs.add(file, pos.Line, pos.Column, "YAML syntax error: %s", ye.GetMessage())
		} else {
			msg, _, _ := strings.Cut(err.Error(), "\n")
			errs.add(file, 1, 1, "YAML syntax error: %s", msg)
		}
		return d, nil
	}
	var docs []*ast.DocumentNode
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		errs.add(file, 1, 1, "the file is empty; expected a YAML mapping")
		return d, nil
	}
	if len(docs) > 1 {
		line, col := d.pos(docs[1].Body)
		errs.add(file, line, col, "a second YAML document; expected exactly one")
		return d, nil
	}
	d.collectAnchors(docs[0].Body)
	return d, docs[0].Body
}

// invalidUTF8 finds the first byte of data that is not UTF-8 and returns
// its line and column (in characters), or ok when there is none.
func invalidUTF8(data []byte) (line, col int, ok bool) {
	if utf8.Valid(data) {
		return 0, 0, true
	}
	line, col = 1, 1
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if r == utf8.RuneError && size <= 1 {
			return line, col, false
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		data = data[size:]
	}
	return line, col, true
}

// errorf records an error at n's position.
func (d *decoder) errorf(n ast.Node, format string, args ...any) {
	line, col := d.pos(n)
	d.errs.add(d.file, line, col, format, args...)
}

// pos is where a node starts. A block mapping's own token is its first
// colon, so it is reported at its first key instead.
func (d *decoder) pos(n ast.Node) (line, col int) {
	switch v := n.(type) {
	case nil:
		return 1, 1
	case *ast.MappingNode:
		if !v.IsFlowStyle && len(v.Values) > 0 {
			return d.pos(v.Values[0].Key)
		}
	case *ast.MappingValueNode:
		if v.Key != nil {
			return d.pos(v.Key)
		}
	case *ast.LiteralNode:
		return tokenPos(v.Start)
	}
	return tokenPos(n.GetToken())
}

func tokenPos(tk *token.Token) (line, col int) {
	if tk == nil || tk.Position == nil {
		return 1, 1
	}
	return max(tk.Position.Line, 1), max(tk.Position.Column, 1)
}

// collectAnchors records every anchor of the document and marks those that
// (directly or through other anchors) contain an alias to themselves.
func (d *decoder) collectAnchors(root ast.Node) {
	d.anchors = map[string]ast.Node{}
	refs := map[string][]string{} // anchor -> aliases inside it
	for _, n := range ast.Filter(ast.AnchorType, root) {
		a := n.(*ast.AnchorNode)
		name := nodeText(a.Name)
		if a.Value == nil {
			continue
		}
		d.anchors[name] = a.Value
		for _, m := range ast.Filter(ast.AliasType, a.Value) {
			refs[name] = append(refs[name], nodeText(m.(*ast.AliasNode).Value))
		}
	}
	d.cyclic = map[string]bool{}
	for name := range d.anchors {
		seen := map[string]bool{}
		stack := slices.Clone(refs[name])
		for len(stack) > 0 {
			r := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if r == name {
				d.cyclic[name] = true
				break
			}
			if !seen[r] {
				seen[r] = true
				stack = append(stack, refs[r]...)
			}
		}
	}
}

func nodeText(n ast.Node) string {
	if n == nil || n.GetToken() == nil {
		return ""
	}
	return n.GetToken().Value
}

// resolve returns the node that carries n's value: anchors are stripped,
// aliases followed, and the standard tags applied. It reports an error and
// returns false for an unknown or cyclic alias, an unsupported tag, or a
// document that expands to too many values.
func (d *decoder) resolve(n ast.Node, path string) (ast.Node, bool) {
	for range 64 {
		d.budget--
		if d.budget == 0 {
			d.errorf(n, "%s: the document expands to more than %d values; simplify its aliases", label(path), maxNodes)
		}
		if d.budget <= 0 {
			return nil, false
		}
		switch v := n.(type) {
		case nil:
			return nil, true
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			name := nodeText(v.Value)
			target, ok := d.anchors[name]
			switch {
			case !ok:
				d.errorf(v, "%s: alias *%s refers to no anchor &%s", label(path), name, name)
				return nil, false
			case d.cyclic[name]:
				d.errorf(v, "%s: alias *%s refers to itself", label(path), name)
				return nil, false
			}
			n = target
		case *ast.TagNode:
			tag := nodeText(v)
			switch tag {
			case "!!str":
				s, ok := v.Value.(ast.ScalarNode)
				if !ok || s.GetToken() == nil {
					d.errorf(v, "%s: !!str applies to a scalar", label(path))
					return nil, false
				}
				text := s.GetToken().Value
				if sn, ok := s.(*ast.StringNode); ok {
					text = sn.Value
				}
				return &ast.StringNode{BaseNode: &ast.BaseNode{}, Token: s.GetToken(), Value: text}, true
			case "!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq":
				n = v.Value
			default:
				d.errorf(v, "%s: YAML tag %s is not supported", label(path), tag)
				return nil, false
			}
		default:
			return n, true
		}
	}
	d.errorf(n, "%s: too many nested anchors, aliases and tags", label(path))
	return nil, false
}

// label names a place in messages; the root has no path.
func label(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

// join appends a key to a dotted path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// entry is one key of a mapping with its value.
type entry struct {
	key   string
	keyN  ast.Node
	value ast.Node
	path  string // the dotted path of this key
}

// entries returns a mapping's keys in file order. Null counts as an empty
// mapping, so that a section with everything commented out is accepted.
// Duplicate keys, merge keys and non-scalar keys are reported and skipped.
func (d *decoder) entries(n ast.Node, path string) ([]entry, bool) {
	n, ok := d.resolve(n, path)
	if !ok {
		return nil, false
	}
	if n == nil || n.Type() == ast.NullType {
		return nil, true
	}
	m, ok := n.(ast.MapNode)
	if !ok {
		d.errorf(n, "%s: expected a mapping, got %s", label(path), describe(n))
		return nil, false
	}
	var out []entry
	seen := map[string]ast.Node{}
	for it := m.MapRange(); it.Next(); {
		kv := it.KeyValue()
		if kv.Key == nil {
			continue
		}
		if kv.Key.IsMergeKey() {
			d.errorf(kv.Key, "%s: merge keys (<<) are not supported; put settings shared by probes under defaults:", label(path))
			continue
		}
		key, ok := d.keyText(kv.Key, path)
		if !ok {
			continue
		}
		if first, dup := seen[key]; dup {
			line, col := d.pos(first)
			d.errorf(kv.Key, "%s: duplicate key %q; first defined at line %d, column %d", label(path), key, line, col)
			continue
		}
		seen[key] = kv.Key
		out = append(out, entry{key: key, keyN: kv.Key, value: kv.Value, path: join(path, key)})
	}
	return out, true
}

func (d *decoder) keyText(k ast.Node, path string) (string, bool) {
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		k = mk.Value
	}
	k, ok := d.resolve(k, path)
	if !ok {
		return "", false
	}
	switch v := k.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NullNode:
		return v.GetToken().Value, true
	}
	d.errorf(k, "%s: a key must be a scalar, got %s", label(path), describe(k))
	return "", false
}

// object decodes a mapping with a fixed set of keys, calling fn for each
// known key in file order and reporting unknown ones. It returns the keys
// present, so callers can require some.
func (d *decoder) object(n ast.Node, path string, known []string, fn func(e entry)) (map[string]entry, bool) {
	es, ok := d.entries(n, path)
	if !ok {
		return nil, false
	}
	present := map[string]entry{}
	for _, e := range es {
		if !slices.Contains(known, e.key) {
			hint := ""
			if s := Suggest(e.key, known); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.errorf(e.keyN, "%s: unknown key %q%s; expected one of %s", label(path), e.key, hint, strings.Join(known, ", "))
			continue
		}
		present[e.key] = e
		fn(e)
	}
	return present, true
}

// Suggest is consumers.Suggest, the one "did you mean" of config keys,
// probe names on the command line, rule names and consumer files.
func Suggest(key string, known []string) string { return consumers.Suggest(key, known) }
