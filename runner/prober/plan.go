package prober

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"strings"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// vars are what a run's templates and rules may name: its operation id,
// and the values its steps captured so far.
type vars struct {
	operationID string
	captured    map[string]any
}

func newVars(operationID string) *vars {
	return &vars{operationID: operationID, captured: map[string]any{}}
}

// rule is what rules see as vars; nil before anything is captured, as
// outside a multi-step probe.
func (v *vars) rule() map[string]any {
	if len(v.captured) == 0 {
		return nil
	}
	return maps.Clone(v.captured)
}

// text is name's value as a template writes it: a string as it is, a
// number or a bool as JSON writes it, a list or an object as JSON text.
func (v *vars) text(name string) string {
	if name == checks.OperationIDVar {
		return v.operationID
	}
	switch x := v.captured[name].(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}

// value is name's value for a JSON string that is nothing but {{name}}:
// the captured value with its type, so that {order_id: "{{order_id}}"}
// sends the number the step captured.
func (v *vars) value(name string) any {
	if name == checks.OperationIDVar {
		return v.operationID
	}
	return v.captured[name]
}

// templateError is a value that cannot go where a template puts it: a
// capture with a line break in a header. It fails the run as
// capture_failed.
type templateError struct{ what string }

func (e *templateError) Error() string { return e.what }

// expandStep returns step s with every template of its call expanded,
// each value escaped for where it goes: a URL's path or query, a header
// (where a line break is refused), a JSON value.
func expandStep(s *checks.Step, v *vars) (*checks.Step, error) {
	q := *s
	var err error
	if q.MCP != nil {
		m := *q.MCP
		m.URL = expandURL(m.URL, v)
		if m.Headers, err = expandHeaders(m.Headers, v); err != nil {
			return nil, err
		}
		m.Arguments, _ = expandJSON(m.Arguments, v).(map[string]any)
		q.MCP = &m
		return &q, nil
	}
	r := q.Request
	r.URL = expandURL(r.URL, v)
	if r.Headers, err = expandHeaders(r.Headers, v); err != nil {
		return nil, err
	}
	if len(r.Query) > 0 {
		query := make(map[string]string, len(r.Query))
		for k, val := range r.Query {
			query[k] = checks.Expand(val, v.text, raw) // url.Values escapes it
		}
		r.Query = query
	}
	if r.HasJSON {
		r.JSON = expandJSON(r.JSON, v)
	}
	r.Body = checks.Expand(r.Body, v.text, raw)
	q.Request = r
	return &q, nil
}

func raw(s string) string { return s }

// expandURL escapes a value for the path before the query and for the
// query after it: a captured "a/b?c" can neither add a path segment nor
// start a query.
func expandURL(u string, v *vars) string {
	if !checks.HasTemplate(u) {
		return u
	}
	path, query, hasQuery := strings.Cut(u, "?")
	out := checks.Expand(path, v.text, url.PathEscape)
	if hasQuery {
		out += "?" + checks.Expand(query, v.text, url.QueryEscape)
	}
	return out
}

// expandHeaders expands header values; a value with a control character
// would smuggle a header and is refused.
func expandHeaders(h map[string]checks.Secret, v *vars) (map[string]checks.Secret, error) {
	var out map[string]checks.Secret
	for k, val := range h {
		s := val.Reveal()
		if !checks.HasTemplate(s) {
			continue
		}
		if out == nil {
			out = maps.Clone(h)
		}
		var bad string
		expanded := checks.Expand(s, func(name string) string {
			t := v.text(name)
			if strings.ContainsFunc(t, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
				bad = name
			}
			return t
		}, raw)
		if bad != "" {
			return nil, &templateError{what: fmt.Sprintf("{{%s}} holds a line break or another control character, which cannot go in header %s", bad, k)}
		}
		out[k] = checks.Secret(expanded)
	}
	if out == nil {
		return h, nil
	}
	return out, nil
}

// expandJSON expands the strings of a JSON value: one that is nothing but
// {{name}} becomes the captured value itself; any other is expanded as
// text, which JSON encoding then escapes.
func expandJSON(x any, v *vars) any {
	switch x := x.(type) {
	case string:
		if !checks.HasTemplate(x) {
			return x
		}
		if name, whole := wholeTemplate(x); whole {
			return v.value(name)
		}
		return checks.Expand(x, v.text, raw)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = expandJSON(e, v)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = expandJSON(e, v)
		}
		return out
	}
	return x
}

// wholeTemplate reports whether s is exactly one {{name}}.
func wholeTemplate(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "{{") || !strings.HasSuffix(t, "}}") || strings.Count(t, "{{") != 1 {
		return "", false
	}
	return strings.TrimSpace(t[2 : len(t)-2]), true
}

// stepError prefixes a named step's failure with its name (SPEC §11), so
// that the message says which step decided the outcome.
func stepError(s *checks.Step, f *results.Error) *results.Error {
	if s.Name == "" || f == nil {
		return f
	}
	out := *f
	out.Message = "step " + s.Name + ": " + f.Message
	return &out
}
