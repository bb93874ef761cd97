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
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
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
	// selectFast and validateFast are selectRun and validateRun without
	// the charges, for an input on which fastCost proves the charges could
	// not reach maxEvalCost (cost.go); both nil when no bound exists, and
	// unbounded then says why.
	selectFast   *vm.Program
	validateFast *vm.Program
	fastCost     [2]form // by measure
	unbounded    string
	// validateFastMemory is the memory budget of a validateFast run (see
	// unwrapValidate).
	validateFastMemory uint
	// clauses explain an invalid_item (explain.go); nil when the validate
	// rule cannot be split into clauses safe to run on their own.
	clauses []clause
	// inputs are the top-level names the rules use (ReadsInput).
	inputs map[string]bool
}

// Ref names the consumer in a result; a nil consumer (a multi-step
// probe's, whose steps have their own) has the zero ref.
func (c *Consumer) Ref() results.ConsumerRef {
	if c == nil {
		return results.ConsumerRef{}
	}
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

// ruleEnv is what a rule sees (SPEC §4, and §10 for result and tool).
// Item carries the item a validate rule checks; users write `.field` or
// `#`, never its name. A rule can read the whole of it as $env
// (toJSON($env) shows these names, result and tool only when an MCP probe
// gives them); nothing else of the process, its environment or its files
// is reachable. result and tool are declared for every rule, since a
// consumer does not know which kind of probe will use it; for an HTTP
// probe they are nil, and reading a member of either gives nil.
type ruleEnv struct {
	Response any            `expr:"response" json:"response"`
	Status   int            `expr:"status" json:"status"`
	Headers  map[string]any `expr:"headers" json:"headers"`
	Request  map[string]any `expr:"request" json:"request"`
	Probe    string         `expr:"probe" json:"probe"`
	// Result is an MCP probe's whole CallToolResult (content,
	// structuredContent, isError) and Tool the tool's listed definition
	// (name, description, inputSchema, outputSchema, annotations).
	Result map[string]any `expr:"result" json:"result,omitempty"`
	Tool   map[string]any `expr:"tool" json:"tool,omitempty"`
	// Vars are the captures of a multi-step probe's earlier steps (SPEC
	// §11), by name; nil outside one.
	Vars map[string]any `expr:"vars" json:"vars,omitempty"`
	Item any            `expr:"__toolpulse_item" json:"-"`
	// Charge is the evaluation budget of one Apply (evalBudget.charge);
	// only the calls instrumentRule inserts may use it: Compile refuses a
	// rule that names it. A field of this exact type compiles to a direct
	// call, where a function registered with expr.Function goes through an
	// argument slice that is allocated anew once a loop has used it up.
	Charge func(units, value any) any `expr:"__toolpulse_charge" json:"-"`
	// Fetch is fetch, the member read of the programs without charges.
	Fetch func(from, key any) any `expr:"__toolpulse_fetch" json:"-"`
	// Matches, Repeat and Replace run the operations whose cost their
	// operands do not bound (a pattern that is not a literal, repeat,
	// replace), charging what they will cost before they run
	// (evalBudget.matches, repeat and replace); like Charge, only the
	// calls instrumentRule inserts may use them.
	Matches func(text, pattern any) any   `expr:"__toolpulse_matches" json:"-"`
	Repeat  func(s, n any) any            `expr:"__toolpulse_repeat" json:"-"`
	Replace func(s, old, repl, n any) any `expr:"__toolpulse_replace" json:"-"`
}

const (
	itemVar  = "__toolpulse_item"
	chargeFn = "__toolpulse_charge"
	fetchFn  = "__toolpulse_fetch"
	matchFn  = "__toolpulse_matches"
	repeatFn = "__toolpulse_repeat"
	replacFn = "__toolpulse_replace"
)

// reservedNames are the env's functions for toolpulse's own rewrites.
var reservedNames = map[string]bool{chargeFn: true, fetchFn: true, matchFn: true, repeatFn: true, replacFn: true}

// validatePrefix turns a per-item predicate into a program over one item,
// so that `.id` and `#` mean the item exactly as inside expr's own filter.
const validatePrefix = "map([" + itemVar + "], {"

// maxRuleBytes bounds a rule's text: evaluation cannot be cancelled, so the
// size of the program is one of the few limits we have.
const maxRuleBytes = 16 << 10

// maxRuleNodes bounds the syntax tree of a rule (expr's MaxNodes), so that
// the work a rule does outside its loops is bounded whatever its text.
const maxRuleNodes = 4096

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
	var sel, val *compiledRule
	if len(errs) == 0 {
		r, err := compileRule("select", src.Select, "")
		if err != nil {
			errs = append(errs, err)
		} else {
			sel, c.selectProg, c.selectRun = r, r.prog, r.run
		}
	}
	if strings.TrimSpace(src.Validate) != "" {
		r, err := compileRule("validate", src.Validate, validatePrefix)
		if err != nil {
			errs = append(errs, err)
		} else {
			val, c.validateProg, c.validateRun = r, r.prog, r.run
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c.compileFast(sel, val)
	c.inputs = inputNames(c.selectProg, c.validateProg)
	if val != nil {
		c.clauses = compileClauses(src.Validate)
	}
	sum := sha256.Sum256([]byte(src.Select + "\x00" + src.Validate))
	c.RuleHash = hex.EncodeToString(sum[:8])
	return c, nil
}

// compileFast bounds the charges of both rules (cost.go) and, when a bound
// exists, compiles the charged trees again without their charges.
func (c *Consumer) compileFast(sel, val *compiledRule) {
	var validateTree ast.Node
	if val != nil {
		validateTree = val.tree.Node
	}
	for _, m := range []measure{chargeUnits, textBytes} {
		if c.fastCost[m], c.unbounded = boundRules(sel.tree.Node, validateTree, m); c.unbounded != "" {
			return
		}
	}
	if sizeLimit(c.fastCost[chargeUnits]) < 0 && sizeLimit(c.fastCost[textBytes]) < 0 {
		c.unbounded = "the rules can spend the budget on any input"
		return
	}
	selectFast, _, err := sel.withoutCharges(false)
	if err != nil {
		c.unbounded = err.Error()
		return
	}
	var validateFast *vm.Program
	c.validateFastMemory = maxEvalMemory
	if val != nil {
		var unwrapped bool
		if validateFast, unwrapped, err = val.withoutCharges(true); err != nil {
			c.unbounded = err.Error()
			return
		}
		if unwrapped {
			c.validateFastMemory--
		}
	}
	c.selectFast, c.validateFast = selectFast, validateFast
}

// compiledRule is one rule compiled: prog as written, run with the charges
// of maxEvalCost, and run's tree after expr's optimizer with the config
// that compiled it, for costBound and withoutCharges.
type compiledRule struct {
	prog, run *vm.Program
	tree      *parser.Tree
	config    *conf.Config
}

// compileRule compiles one rule twice: as written, which gives the author's
// compile errors, the static type and the tree ReadFields reads, and with
// the charges of maxEvalCost, which is what Apply runs. The wrappers are
// typed any, so checking the plain rule first hides no compile error.
func compileRule(rule, text, prefix string) (*compiledRule, *RuleError) {
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
	prefixRunes := len([]rune(prefix))
	prog, err := expr.Compile(source, compileOptions()...)
	if err != nil {
		re := ruleError(rule, text, err, prefixRunes)
		re.Message = hintUnknownName(re.Message, source)
		return nil, re
	}
	if err := reservedName(prog.Node()); err != nil {
		return nil, ruleError(rule, text, err.Bind(prog.Source()), prefixRunes)
	}
	if err := literalFailCode(prog.Node()); err != nil {
		return nil, ruleError(rule, text, err.Bind(prog.Source()), prefixRunes)
	}
	r := &compiledRule{prog: prog}
	if err := r.compileCharged(source); err != nil {
		return nil, ruleError(rule, text, err, prefixRunes)
	}
	if rule == "select" {
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
	return r, nil
}

// compileCharged is expr.Compile (v1.17.8) with instrumentRule, step by
// step, so that the optimized tree stays at hand: costBound must read the
// charges that run, and withoutCharges must start from the same tree, since
// expr's optimizer rewrites a plain rule in ways that change what it does
// (`x in ["a", "b"]` becomes a map lookup that panics on a number x, where
// the charged rule, whose list is wrapped in a charge, answers false).
func (r *compiledRule) compileCharged(source string) error {
	config := conf.CreateNew()
	for _, op := range append(compileOptions(), expr.Patch(instrumentRule{})) {
		op(config)
	}
	for name := range config.Disabled {
		delete(config.Builtins, name)
	}
	config.Check()
	tree, err := checker.ParseCheck(source, config)
	if err != nil {
		return err
	}
	if config.Optimize {
		if err := optimizer.Optimize(&tree.Node, config); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				return fe.Bind(tree.Source)
			}
			return err
		}
	}
	run, err := compiler.Compile(tree, config)
	if err != nil {
		return err
	}
	r.run, r.tree, r.config = run, tree, config
	return nil
}

// reservedName refuses a rule that names the env's functions: they are
// for the calls toolpulse inserts, never for a rule's own (a charge of
// negative units would give budget back).
func reservedName(n ast.Node) *file.Error {
	var found ast.Node
	var name string
	rewrite(&n, func(n *ast.Node) { // rewrite also enters fused map bodies
		if found != nil {
			return
		}
		switch m := (*n).(type) {
		case *ast.IdentifierNode:
			if reservedNames[m.Value] {
				found, name = m, m.Value
			}
		case *ast.MemberNode:
			if p, ok := m.Property.(*ast.StringNode); ok && reservedNames[p.Value] {
				found, name = m, p.Value
			}
		}
	})
	if found == nil {
		return nil
	}
	return &file.Error{Location: found.Location(), Message: "unknown name " + name}
}

// literalFailCode refuses a fail() whose code is a literal that Apply would
// refuse at run time (not snake_case, an unavailable code, or a word the
// metrics keep for themselves): the author learns it from validate, not
// from a rule_error the first time the branch runs. A code computed at run
// time is still checked by runError.
func literalFailCode(n ast.Node) *file.Error {
	var found *file.Error
	rewrite(&n, func(n *ast.Node) {
		if found != nil {
			return
		}
		call, ok := (*n).(*ast.CallNode)
		if !ok || len(call.Arguments) == 0 {
			return
		}
		if id, ok := call.Callee.(*ast.IdentifierNode); !ok || id.Value != "fail" {
			return
		}
		lit, ok := call.Arguments[0].(*ast.StringNode)
		if !ok || results.ValidCustomCode(lit.Value) {
			return
		}
		found = &file.Error{Location: lit.Location(), Message: invalidCodeMessage(lit.Value)}
	})
	return found
}

// invalidCodeMessage says why code cannot be raised by fail(), in the same
// words at load and at run time.
func invalidCodeMessage(code string) string {
	code = results.ClipBytes(code, 80)
	switch {
	case results.Code(code).Outcome() == results.Unavailable:
		return fmt.Sprintf("fail code %q is reserved for unavailable outcomes; a rule raises contract_error codes only", code)
	case code == "none" || code == "other":
		return fmt.Sprintf("fail code %q is reserved by the metrics", code)
	}
	return fmt.Sprintf("fail code %q is not snake_case (a lower-case letter, then up to 63 of a-z, 0-9 and _)", code)
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
