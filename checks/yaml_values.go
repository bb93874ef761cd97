package checks

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
)

// This file reads scalars, lists and free-form values from the YAML tree
// that yaml.go walks, each with the position of what it reads.

// describe names a value's kind for "expected X, got Y". Scalars are shown
// by kind only: the value could be a secret.
func describe(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "null"
	case ast.MapNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode:
		return "an integer"
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	}
	return "a " + strings.ToLower(n.Type().String())
}

// show is describe plus the scalar's text, for fields that are never
// secret (numbers, durations, flags): "three" says more than "a string".
func show(n ast.Node, text string) string {
	switch n.(type) {
	case *ast.StringNode, *ast.LiteralNode:
		return strconv.Quote(text)
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value
	}
	return describe(n)
}

// str decodes a string. Other scalars give their text (version: 2 is the
// string "2"); null is "". Errors never quote the value: header values and
// tokens go through here.
func (d *decoder) str(n ast.Node, path string) (string, bool) {
	n, ok := d.resolve(n, path)
	if !ok {
		return "", false
	}
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "", true
	case *ast.StringNode:
		return d.text(v, v.Value, path)
	case *ast.LiteralNode:
		return d.text(v, v.Value.Value, path)
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return v.GetToken().Value, true
	}
	d.errorf(n, "%s: expected a string, got %s", label(path), describe(n))
	return "", false
}

// text is a setting's string: it refuses a NUL, which a URL, header, name
// or path would carry on as a different value or cut short, and expands
// ${VAR}.
func (d *decoder) text(n ast.Node, s, path string) (string, bool) {
	if strings.IndexByte(s, 0) >= 0 {
		d.errorf(n, "%s: contains a NUL character", label(path))
		return "", false
	}
	return d.expandScalar(n, s, path)
}

// expandScalar expands ${VAR} in one scalar and reports each bad reference
// at its own column when it can be found on the scalar's lines.
func (d *decoder) expandScalar(n ast.Node, s, path string) (string, bool) {
	d.spans = nil
	if !d.expand {
		return s, true
	}
	out, spans, errs := expandEnvSpans(s, d.lookupEnv)
	d.spans = spans
	for _, e := range errs {
		line, col := d.locate(n, s[e.Offset:e.Offset+e.Length])
		d.errs.add(d.file, line, col, "%s: %s", label(path), e.Message)
	}
	return out, len(errs) == 0
}

// locate finds text written inside scalar n in the source and returns its
// position, or n's own position when it cannot (escapes in a quoted scalar
// can make the value differ from the source).
func (d *decoder) locate(n ast.Node, text string) (line, col int) {
	line, col = d.pos(n)
	text, _, _ = strings.Cut(text, "\n")
	if text == "" {
		return line, col
	}
	for l := line; l <= len(d.lines) && l < line+1000; l++ {
		src := d.lines[l-1]
		from := 0
		if l == line {
			from = runeOffset(src, col-1)
		}
		if i := strings.Index(src[from:], text); i >= 0 {
			return l, utf8.RuneCountInString(src[:from+i]) + 1
		}
	}
	return line, col
}

// runeOffset returns the byte offset of the n-th rune of s (or len(s)).
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// integer decodes an integer; a string is accepted when it holds one, so
// that max_concurrency: ${WORKERS:-64} works.
func (d *decoder) integer(n ast.Node, path string) (int64, bool) {
	n, ok := d.resolve(n, path)
	if !ok {
		return 0, false
	}
	switch v := n.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			return x, true
		case uint64:
			if x <= math.MaxInt64 {
				return int64(x), true
			}
		}
		d.errorf(n, "%s: %s is too large", label(path), v.GetToken().Value)
		return 0, false
	case *ast.StringNode:
		s, ok := d.expandScalar(v, v.Value, path)
		if !ok {
			return 0, false
		}
		if i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
			return i, true
		}
		d.errorf(n, "%s: expected an integer, got %q", label(path), s)
		return 0, false
	case nil:
		d.errorf(n, "%s: expected an integer, got null", label(path))
		return 0, false
	}
	d.errorf(n, "%s: expected an integer, got %s", label(path), show(n, ""))
	return 0, false
}

// duration decodes a Go duration ("90s", "1h30m"). Only 0 may omit the
// unit: a bare 30 could mean seconds or nanoseconds.
func (d *decoder) duration(n ast.Node, path string) (time.Duration, bool) {
	n, ok := d.resolve(n, path)
	if !ok {
		return 0, false
	}
	switch v := n.(type) {
	case *ast.IntegerNode:
		if v.GetToken().Value == "0" {
			return 0, true
		}
		d.errorf(n, "%s: expected a duration with a unit, such as %ss, got %s", label(path), v.GetToken().Value, v.GetToken().Value)
		return 0, false
	case *ast.StringNode:
		s, ok := d.expandScalar(v, v.Value, path)
		if !ok {
			return 0, false
		}
		dur, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			d.errorf(n, "%s: expected a duration in Go syntax such as 500ms, 30s or 1h30m, got %q", label(path), s)
			return 0, false
		}
		return dur, true
	case nil:
		d.errorf(n, "%s: expected a duration such as 30s, got null", label(path))
		return 0, false
	}
	d.errorf(n, "%s: expected a duration such as 30s, got %s", label(path), show(n, ""))
	return 0, false
}

// boolean decodes true or false.
func (d *decoder) boolean(n ast.Node, path string) (bool, bool) {
	n, ok := d.resolve(n, path)
	if !ok {
		return false, false
	}
	switch v := n.(type) {
	case *ast.BoolNode:
		return v.Value, true
	case *ast.StringNode:
		s, ok := d.expandScalar(v, v.Value, path)
		if !ok {
			return false, false
		}
		switch strings.TrimSpace(s) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
		d.errorf(n, "%s: expected true or false, got %q", label(path), s)
		return false, false
	case nil:
		d.errorf(n, "%s: expected true or false, got null", label(path))
		return false, false
	}
	d.errorf(n, "%s: expected true or false, got %s", label(path), show(n, ""))
	return false, false
}

// list decodes a sequence; null is an empty list.
func (d *decoder) list(n ast.Node, path string) ([]ast.Node, bool) {
	n, ok := d.resolve(n, path)
	if !ok {
		return nil, false
	}
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil, true
	case *ast.SequenceNode:
		return v.Values, true
	}
	d.errorf(n, "%s: expected a list, got %s", label(path), describe(n))
	return nil, false
}

// stringMap decodes a mapping of strings (headers, query, labels); a value
// that fails to decode is reported and left out.
func (d *decoder) stringMap(n ast.Node, path string) (map[string]string, []entry, bool) {
	es, ok := d.entries(n, path)
	if !ok {
		return nil, nil, false
	}
	out := make(map[string]string, len(es))
	all := true
	for _, e := range es {
		v, ok := d.str(e.value, e.path)
		all = all && ok
		if ok {
			out[e.key] = v
		}
	}
	return out, es, all
}

// maxValueDepth is the deepest nesting value accepts, the limit
// consumers.DecodeJSON puts on bodies: fixtures and request bodies stand for
// JSON and go through the same recursive code.
const maxValueDepth = 128

// value decodes any YAML value into rule values, as JSON decoding would
// give them: map[string]any, []any, string, bool, nil, int for integers
// and float64 for other numbers.
func (d *decoder) value(n ast.Node, path string) (any, bool) {
	return d.valueAt(n, path, 0)
}

func (d *decoder) valueAt(n ast.Node, path string, depth int) (any, bool) {
	if depth > maxValueDepth {
		d.errorf(n, "%s: nested deeper than %d levels", label(path), maxValueDepth)
		return nil, false
	}
	n, ok := d.resolve(n, path)
	if !ok {
		return nil, false
	}
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil, true
	case *ast.BoolNode:
		return v.Value, true
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			return int(x), true
		case uint64:
			if x <= math.MaxInt64 {
				return int(x), true
			}
			return float64(x), true
		}
	case *ast.FloatNode:
		return v.Value, true
	case *ast.InfinityNode, *ast.NanNode:
		d.errorf(n, "%s: %s cannot be represented in JSON", label(path), v.GetToken().Value)
		return nil, false
	case *ast.StringNode:
		return d.expandScalar(v, v.Value, path)
	case *ast.LiteralNode:
		return d.expandScalar(v, v.Value.Value, path)
	case *ast.SequenceNode:
		out := make([]any, 0, len(v.Values))
		all := true
		for i, item := range v.Values {
			x, ok := d.valueAt(item, index(path, i), depth+1)
			all = all && ok
			out = append(out, x)
		}
		return out, all
	case ast.MapNode:
		es, ok := d.entries(n, path)
		out := make(map[string]any, len(es))
		for _, e := range es {
			x, eok := d.valueAt(e.value, e.path, depth+1)
			ok = ok && eok
			out[e.key] = x
		}
		return out, ok
	}
	d.errorf(n, "%s: unsupported YAML value %s", label(path), describe(n))
	return nil, false
}
