package consumers

import (
	"errors"
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"

	"github.com/toolpulse/toolpulse/results"
)

// Input is what a rule sees of one exchange (SPEC §4). Response holds JSON
// values as DecodeJSON returns them: maps, lists, strings, bools, nil, int
// for integral numbers and float64 for the rest.
type Input struct {
	Response any
	Status   int
	Headers  map[string]string // lower-case names
	Request  Request
	Probe    string
}

// Request is the probe's fixture as a rule sees it.
type Request struct {
	JSON  any
	Query map[string]string
}

// Verdict is what a consumer made of one response. Err is nil exactly when
// the response passed; otherwise its code is a contract_error code.
type Verdict struct {
	Selected  int
	Validated int
	Err       *results.Error
}

// Apply runs the consumer on in and requires at least minResults selected
// and validated items. It never panics on hostile input: every failure of
// the rules becomes a typed contract error.
func (c *Consumer) Apply(in Input, minResults int) (v Verdict) {
	defer func() {
		if p := recover(); p != nil {
			v.Err = results.NewError(results.CodeRuleError, "rule panicked: %v", p)
		}
	}()
	env := in.env()

	out, err := expr.Run(c.selectProg, *env)
	if err != nil {
		return Verdict{Err: runError("select", err, 0)}
	}
	items, ok := out.([]any)
	if !ok {
		return Verdict{Err: results.NewError(results.CodeSelectionNotList,
			"select returned %s, want a list", typeName(out))}
	}
	v.Selected = len(items)

	for i, item := range items {
		valid, err := c.validateItem(env, item)
		if err != nil {
			v.Err = err
			v.Err.Message = fmt.Sprintf("item %d: %s", i, v.Err.Message)
			return v
		}
		if !valid {
			v.Err = results.NewError(results.CodeInvalidItem,
				"item %d failed validate: %s", i, preview(item))
			return v
		}
		v.Validated++
	}

	switch {
	case minResults <= 0:
	case v.Validated == 0:
		v.Err = results.NewError(results.CodeEmptySelection,
			"select returned no items; at least %d expected", minResults)
	case v.Validated < minResults:
		v.Err = results.NewError(results.CodeTooFewResults,
			"%d validated items; at least %d expected", v.Validated, minResults)
	}
	return v
}

// validateItem runs the validate rule on one item; a nil error with false
// means the item was judged invalid.
func (c *Consumer) validateItem(env *ruleEnv, item any) (bool, *results.Error) {
	if c.validateProg == nil {
		return true, nil
	}
	env.Item = item
	out, err := expr.Run(c.validateProg, *env)
	if err != nil {
		return false, runError("validate", err, len([]rune(validatePrefix)))
	}
	list, ok := out.([]any)
	if !ok || len(list) != 1 {
		return false, results.NewError(results.CodeRuleError, "validate produced %s", typeName(out))
	}
	valid, ok := list[0].(bool)
	if !ok {
		return false, results.NewError(results.CodeRuleError,
			"validate returned %s, want a bool", typeName(list[0]))
	}
	return valid, nil
}

func (in Input) env() *ruleEnv {
	headers := make(map[string]any, len(in.Headers))
	for k, v := range in.Headers {
		headers[k] = v
	}
	query := make(map[string]any, len(in.Request.Query))
	for k, v := range in.Request.Query {
		query[k] = v
	}
	return &ruleEnv{
		Response: in.Response,
		Status:   in.Status,
		Headers:  headers,
		Request:  map[string]any{"json": in.Request.JSON, "query": query},
		Probe:    in.Probe,
	}
}

// runError maps a run-time failure of a rule to its contract code: the
// rule's own fail(code, message), or rule_error with the position inside
// the rule.
func runError(rule string, err error, prefixRunes int) *results.Error {
	var fail *failError
	if errors.As(err, &fail) {
		if !results.ValidCustomCode(fail.code) {
			return results.NewError(results.CodeRuleError,
				"%s rule called fail with invalid code %q (want snake_case, not an unavailable code): %s",
				rule, fail.code, fail.message)
		}
		return &results.Error{Code: results.Code(fail.code), Message: fail.message}
	}
	var fe *file.Error
	if errors.As(err, &fe) {
		re := ruleError(rule, err, prefixRunes)
		return results.NewError(results.CodeRuleError, "%s rule %d:%d: %s", rule, re.Line, re.Column, re.Message)
	}
	return results.NewError(results.CodeRuleError, "%s rule: %v", rule, err)
}

// typeName names a rule value's type the way expr's type() does.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "bool"
	case int, int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "map"
	}
	return fmt.Sprintf("%T", v)
}

// previewBytes bounds how much of an item a message quotes.
const previewBytes = 120

func preview(v any) string {
	s := fmt.Sprintf("%v", v)
	if len(s) > previewBytes {
		s = s[:previewBytes] + "…"
	}
	return s
}
