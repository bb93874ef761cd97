package checks

import (
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

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
