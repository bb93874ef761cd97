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
	"github.com/expr-lang/expr/ast"
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

	// selectProg and validateProg are the rules as written, for reading
	// (ReadFields); selectRun and validateRun are the same rules with the
	// charges of maxEvalCost, for running.
	selectProg   *vm.Program
	validateProg *vm.Program // nil when Validate is empty
	selectRun    *vm.Program
	validateRun  *vm.Program
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
// rule checks; users write `.field` or `#`, never its name. A rule can read the whole of it as $env (toJSON($env) shows these names);
// nothing else of the process, its environment or its files is reachable.
type ruleEnv struct {
	Response any            `expr:"response" json:"response"`
	Status   int            `expr:"status" json:"status"`
	Headers  map[string]any `expr:"headers" json:"headers"`
	Request  map[string]any `expr:"request" json:"request"`
	Probe    string         `expr:"probe" json:"probe"`
	Item     any            `expr:"__toolpulse_item" json:"-"`
	// Budget is the evaluation budget of one Apply; only the calls that
	// instrumentRule inserts use it.
	Budget *evalBudget `expr:"__toolpulse_budget" json:"-"`
}

const (
	itemVar   = "__toolpulse_item"
	budgetVar = "__toolpulse_budget"
	chargeFn  = "__toolpulse_charge"
)

// validatePrefix turns a per-item predicate into a program over one item,
// so that `.id` and `#` mean the item exactly as inside expr's own filter.
const validatePrefix = "map([" + itemVar + "], {"

// maxRuleBytes bounds a rule's text: evaluation cannot be cancelled, so the
// size of the program is one of the few limits we have.
const maxRuleBytes = 16 << 10

// maxRuleNodes bounds the syntax tree of a rule (expr's MaxNodes), so that
// the work a rule does outside its loops is bounded whatever its text.
const maxRuleNodes = 4096

// maxEvalCost is the evaluation budget of one Apply: the select run and
// every validate run together. expr cannot cancel an evaluation, so each
// rule is compiled with a charge inserted where work grows with the input:
// every pass through a predicate ({...} in filter, map, any, all, count,
// sum, sortBy and the rest, and the validate rule on each item) costs the
// number of syntax nodes in its body, and every non-literal operand of +,
// ==, !=, in, contains, startsWith, endsWith and matches, and every
// argument and result of a builtin that takes no predicate, costs its size
// (one per value inside it, however deep, and one per 16 bytes of a
// string). A rule that spends more fails with rule_error "evaluation budget
// exceeded". On a 2-core machine the slowest runaway rule measured
// (toJSON of the body inside a loop) stops within a second; a filter over
// 10,000 items with a 20-node predicate costs about 200,000.
const maxEvalCost = 10_000_000

// maxEvalMemory is expr's own memory budget for one rule run
// (vm.VM.MemoryBudget): it counts the elements of ranges, list and map
// literals, sorted lists and repeat()'s bytes, not Go allocations.
const maxEvalMemory = 1_000_000

// budgetExceeded starts the message of every budget failure, so that an
// operator can tell a runaway rule from a wrong one.
const budgetExceeded = "evaluation budget exceeded"

// evalBudget counts what one Apply has spent. It is used by one goroutine.
type evalBudget struct {
	spent, limit int
}

func newEvalBudget() *evalBudget { return &evalBudget{limit: maxEvalCost} }

// chargeFunc is __toolpulse_charge(budget, units, value): it adds units
// plus the size of value to the budget and returns value unchanged, or
// fails once the budget is spent.
func chargeFunc(params ...any) (any, error) {
	b, _ := params[0].(*evalBudget)
	units, _ := params[1].(int)
	v := params[2]
	if b == nil {
		return v, nil
	}
	b.spent += units
	b.chargeSize(v)
	if b.spent > b.limit {
		return nil, fmt.Errorf("%s: the rules spent more than %d units (see Limits in the README)", budgetExceeded, b.limit)
	}
	return v, nil
}

// chargeSize adds v's size: one for each value in it, however deep, and
// one per 16 bytes of each string. It stops walking once the budget is
// spent, so that measuring costs no more than the budget allows.
func (b *evalBudget) chargeSize(v any) {
	b.spent++
	if b.spent > b.limit {
		return
	}
	switch t := v.(type) {
	case string:
		b.spent += len(t) / 16
	case []any:
		for _, x := range t {
			if b.chargeSize(x); b.spent > b.limit {
				return
			}
		}
	case map[string]any:
		for k, x := range t {
			b.spent += len(k) / 16
			if b.chargeSize(x); b.spent > b.limit {
				return
			}
		}
	case nil, bool, int, float64:
	default:
		switch rv := reflect.ValueOf(v); rv.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map:
			// Typed lists come from builtins such as split() and keys():
			// flat values, counted without walking them.
			b.spent += rv.Len()
		case reflect.String:
			b.spent += rv.Len() / 16
		}
	}
}

// instrumentRule is the patch that inserts the charges maxEvalCost
// describes; see compileRule for why it runs on a second compile.
type instrumentRule struct{}

// linearOperators are the binary operators whose cost grows with their
// operands.
var linearOperators = map[string]bool{
	"+": true, "==": true, "!=": true, "in": true, "not in": true,
	"contains": true, "startsWith": true, "endsWith": true, "matches": true,
}

func (instrumentRule) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.PredicateNode:
		n.Node = charge(countNodes(n.Node), n.Node)
	case *ast.BinaryNode:
		if linearOperators[n.Operator] {
			n.Left = chargeOperand(n.Left)
			n.Right = chargeOperand(n.Right)
		}
	case *ast.BuiltinNode:
		for _, a := range n.Arguments {
			if _, ok := a.(*ast.PredicateNode); ok {
				return
			}
		}
		for i, a := range n.Arguments {
			n.Arguments[i] = chargeOperand(a)
		}
		// The result too: toJSON, join or replace can build far more than
		// they were given.
		*node = charge(0, n)
	}
}

func charge(units int, n ast.Node) ast.Node {
	call := &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: chargeFn},
		Arguments: []ast.Node{&ast.IdentifierNode{Value: budgetVar}, &ast.IntegerNode{Value: units}, n},
	}
	call.SetLocation(n.Location())
	call.Callee.SetLocation(n.Location())
	call.Arguments[0].SetLocation(n.Location())
	call.Arguments[1].SetLocation(n.Location())
	return call
}

// chargeOperand charges n's size, unless n is a literal whose cost the
// rule's size already bounds.
func chargeOperand(n ast.Node) ast.Node {
	switch n.(type) {
	case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode,
		*ast.StringNode, *ast.ConstantNode, *ast.PredicateNode:
		return n
	}
	return charge(0, n)
}

func countNodes(n ast.Node) int {
	c := nodeCounter(0)
	ast.Walk(&n, &c)
	return int(c)
}

type nodeCounter int

func (c *nodeCounter) Visit(*ast.Node) { *c++ }

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
		prog, run, err := compileRule("select", src.Select, "")
		if err != nil {
			errs = append(errs, err)
		}
		c.selectProg, c.selectRun = prog, run
	}
	if strings.TrimSpace(src.Validate) != "" {
		prog, run, err := compileRule("validate", src.Validate, validatePrefix)
		if err != nil {
			errs = append(errs, err)
		}
		c.validateProg, c.validateRun = prog, run
	}
	if len(errs) > 0 {
		return nil, errs
	}
	sum := sha256.Sum256([]byte(src.Select + "\x00" + src.Validate))
	c.RuleHash = hex.EncodeToString(sum[:8])
	return c, nil
}

// compileRule compiles one rule twice: as written, which gives the author's
// compile errors, the static type and the tree ReadFields reads, and with
// the charges of maxEvalCost, which is what Apply runs. The wrappers are
// typed any, so checking the plain rule first hides no compile error.
func compileRule(rule, text, prefix string) (prog, run *vm.Program, _ *RuleError) {
	if len(text) > maxRuleBytes {
		return nil, nil, &RuleError{Rule: rule, Line: 1, Column: 1,
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
		return nil, nil, ruleError(rule, text, err, len([]rune(prefix)))
	}
	run, err = expr.Compile(source, append(compileOptions(), expr.Patch(instrumentRule{}))...)
	if err != nil {
		return nil, nil, ruleError(rule, text, err, len([]rune(prefix)))
	}
	if prefix == "" {
		// expr types what it can see: a select rule that can only yield a
		// number or a string is a config error now rather than a
		// selection_not_list on every run. Values read from JSON are
		// `any` and are checked at run time instead.
		if t := prog.Node().Type(); t != nil && t.Kind() != reflect.Interface &&
			t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return nil, nil, &RuleError{Rule: rule, Line: 1, Column: 1,
				Message: fmt.Sprintf("select must evaluate to a list; this rule gives %s", kindName(t))}
		}
	}
	return prog, run, nil
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
		expr.Function(chargeFn, chargeFunc),
		expr.MaxNodes(maxRuleNodes),
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
