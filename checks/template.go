package checks

import (
	"regexp"
	"strings"
)

// Templates (SPEC §11): a string of a probe's call (url, header values,
// query values, strings inside json or mcp.arguments, body) may hold
// {{name}}, the value an earlier step captured as name, or {{operation_id}},
// the run's own id. The loader checks every reference; the runner expands
// them with Expand, escaping each value for where it goes.

// OperationIDVar is the template name every probe may use: the run's
// operation id, for example as an Idempotency-Key.
const OperationIDVar = "operation_id"

// varName is the syntax of a capture's name, and so of a template's.
var varName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,63}$`)

// templateRef is one {{name}} in a string.
type templateRef struct {
	name       string
	start, end int // byte offsets of "{{" and just after "}}"
}

// parseTemplate finds the references in s. A "{{" that is not closed, or
// that does not hold a name, is a problem: it would otherwise be sent as
// it stands. The problem never quotes s, which may hold a secret.
func parseTemplate(s string) ([]templateRef, string) {
	var refs []templateRef
	for i := 0; ; {
		open := strings.Index(s[i:], "{{")
		if open < 0 {
			return refs, ""
		}
		open += i
		closing := strings.Index(s[open+2:], "}}")
		if closing < 0 {
			return nil, "a {{ is not closed by }}; a template is {{name}}"
		}
		closing += open + 2
		name := strings.TrimSpace(s[open+2 : closing])
		if !varName.MatchString(name) {
			return nil, "a {{...}} does not name a capture; a template is {{name}}, the name in lower-case letters, digits and _"
		}
		refs = append(refs, templateRef{name: name, start: open, end: closing + 2})
		i = closing + 2
	}
}

// HasTemplate reports whether s holds a {{name}} reference.
func HasTemplate(s string) bool {
	refs, _ := parseTemplate(s)
	return len(refs) > 0
}

// Expand replaces every {{name}} in s with escape(value(name)). The
// loader has checked that every name is defined; value is called only for
// names s holds. A string without templates is returned as it is.
func Expand(s string, value func(name string) string, escape func(string) string) string {
	refs, problem := parseTemplate(s)
	if problem != "" || len(refs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, r := range refs {
		b.WriteString(s[last:r.start])
		b.WriteString(escape(value(r.name)))
		last = r.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// placeholder is s with every reference replaced by a neutral word, so
// that a templated URL can be checked as a URL at load.
func placeholder(s string) string {
	return Expand(s, func(string) string { return "x" }, func(v string) string { return v })
}
