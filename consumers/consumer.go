// Package consumers runs a consumer's own selection logic, written as expr
// rules, on a provider's answer: `select` picks the items the caller would
// use, `validate` checks each one, and the verdict says whether at least
// min_results validated items came back (SPEC §4). It owns the expr
// dependency and the rule environment, including how JSON becomes values.
package consumers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/toolpulse/toolpulse/results"
)

// Source is a consumer as written: its name, the version its author gives
// it, and the text of its two rules.
type Source struct {
	Name     string
	Version  string
	Select   string
	Validate string // optional: "" accepts every selected item

	Fixtures        []Fixture
	AcceptMutations []AcceptedMutation
}

// Consumer is a compiled consumer. Its programs are safe to share across
// goroutines; Apply may be called concurrently.
type Consumer struct {
	Name     string
	Version  string
	Select   string
	Validate string
	// RuleHash is 16 hex characters of SHA-256 over both rule texts: it
	// changes whenever the logic does, whatever the version says.
	RuleHash string

	Fixtures        []Fixture
	AcceptMutations []AcceptedMutation

	selectProg   *vm.Program
	validateProg *vm.Program // nil when Validate is empty
}

// Ref names the consumer in a result.
func (c *Consumer) Ref() results.ConsumerRef {
	return results.ConsumerRef{Name: c.Name, Version: c.Version, RuleHash: c.RuleHash}
}

// RuleError is a compile error of one rule, positioned inside the rule's
// text: Line and Column are 1-based, counted in runes.
type RuleError struct {
	Rule    string // "select" or "validate"
	Line    int
	Column  int
	Message string
}

// Error formats e as "select rule 2:5: message", the position being inside
// the rule's own text, as an operator sees it in the consumer file.
func (e *RuleError) Error() string {
	return fmt.Sprintf("%s rule %d:%d: %s", e.Rule, e.Line, e.Column, e.Message)
}

// ruleEnv is what a rule sees (SPEC §4). Item carries the item a validate
// rule checks; users write `.field` or `#`, never its name.
type ruleEnv struct {
	Response any            `expr:"response"`
	Status   int            `expr:"status"`
	Headers  map[string]any `expr:"headers"`
	Request  map[string]any `expr:"request"`
	Probe    string         `expr:"probe"`
	Item     any            `expr:"__toolpulse_item"`
}

const itemVar = "__toolpulse_item"

// validatePrefix turns a per-item predicate into a program over one item,
// so that `.id` and `#` mean the item exactly as inside expr's own filter.
const validatePrefix = "map([" + itemVar + "], {"

// maxRuleBytes bounds a rule's text: evaluation cannot be cancelled, so the
// size of the program is one of the few limits we have.
const maxRuleBytes = 16 << 10

// Compile compiles both rules of src. It returns every compile error found,
// each positioned inside its rule, or a consumer ready to Apply.
func Compile(src Source) (*Consumer, []*RuleError) {
	var errs []*RuleError
	if strings.TrimSpace(src.Select) == "" {
		errs = append(errs, &RuleError{Rule: "select", Line: 1, Column: 1, Message: "select rule is empty"})
	}
	c := &Consumer{
		Name: src.Name, Version: src.Version, Select: src.Select, Validate: src.Validate,
		Fixtures: src.Fixtures, AcceptMutations: src.AcceptMutations,
	}
	if len(errs) == 0 {
		prog, err := compileRule("select", src.Select, "")
		if err != nil {
			errs = append(errs, err)
		}
		c.selectProg = prog
	}
	if strings.TrimSpace(src.Validate) != "" {
		prog, err := compileRule("validate", src.Validate, validatePrefix)
		if err != nil {
			errs = append(errs, err)
		}
		c.validateProg = prog
	}
	if len(errs) > 0 {
		return nil, errs
	}
	sum := sha256.Sum256([]byte(src.Select + "\x00" + src.Validate))
	c.RuleHash = hex.EncodeToString(sum[:8])
	return c, nil
}

func compileRule(rule, text, prefix string) (*vm.Program, *RuleError) {
	if len(text) > maxRuleBytes {
		return nil, &RuleError{Rule: rule, Line: 1, Column: 1,
			Message: fmt.Sprintf("rule is %d bytes; the limit is %d", len(text), maxRuleBytes)}
	}
	source := text
	if prefix != "" {
		// The closing newline keeps a trailing comment in the rule from
		// swallowing the wrapper's closing brackets.
		source = prefix + text + "\n})"
	}
	prog, err := expr.Compile(source, compileOptions()...)
	if err != nil {
		return nil, ruleError(rule, text, err, len([]rune(prefix)))
	}
	if prefix == "" {
		// expr types what it can see: a select rule that can only yield a
		// number or a string is a config error now rather than a
		// selection_not_list on every run. Values read from JSON are
		// `any` and are checked at run time instead.
		if t := prog.Node().Type(); t != nil && t.Kind() != reflect.Interface &&
			t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return nil, &RuleError{Rule: rule, Line: 1, Column: 1,
				Message: fmt.Sprintf("select must evaluate to a list; this rule gives %s", kindName(t))}
		}
	}
	return prog, nil
}

// kindName names a static type the way expr's type() names its values.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "int"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "uint"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.String:
		return "string"
	case reflect.Map:
		return "map"
	}
	return t.String()
}

func compileOptions() []expr.Option {
	return []expr.Option{
		expr.Env(ruleEnv{}),
		expr.Function("fail", failFunc, new(func(string, string) any)),
	}
}

// ruleError turns an expr error into a RuleError positioned in the user's
// text; prefixRunes is the length of the wrapper on the rule's first line.
// A position that falls in the wrapper after the text (the parser ran out
// of rule inside the wrapper) is reported at the end of the text, so a
// validate rule reports what a select rule would.
func ruleError(rule, text string, err error, prefixRunes int) *RuleError {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return &RuleError{Rule: rule, Line: 1, Column: 1, Message: err.Error()}
	}
	line, col, msg := fe.Line, fe.Column+1, fe.Message // expr's columns are 0-based
	if line < 1 {
		line = 1
	}
	if line == 1 {
		col -= prefixRunes
	}
	if col < 1 {
		col = 1
	}
	// Trailing blank lines (a YAML block always ends with one) are not
	// where a reader looks for the end of the rule.
	lines := strings.Split(strings.TrimRight(text, " \t\r\n"), "\n")
	last := utf8.RuneCountInString(lines[len(lines)-1]) + 1
	if line > len(lines) || (line == len(lines) && col > last) {
		line, col = len(lines), last
		if strings.HasPrefix(msg, "unexpected token") {
			// What expr says for the same text as a select rule, so
			// both rules read alike.
			msg = "unexpected token EOF"
		}
	}
	return &RuleError{Rule: rule, Line: line, Column: col, Message: msg}
}

// failError is what fail(code, message) raises; Apply recovers it with
// errors.As and turns it into a contract_error with the rule's code.
type failError struct {
	code    string
	message string
}

func (e *failError) Error() string { return "fail(" + e.code + "): " + e.message }

func failFunc(params ...any) (any, error) {
	// The declared signature makes expr check literal arguments at compile
	// time; values read from JSON are `any` and arrive as whatever they are.
	code, _ := params[0].(string)
	message, ok := params[1].(string)
	if !ok {
		message = fmt.Sprint(params[1])
	}
	return nil, &failError{code: code, message: message}
}
