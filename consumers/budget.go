package consumers

import (
	"fmt"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm/runtime"
)

// maxEvalCost is the evaluation budget of one Apply: the select run and
// every validate run together. expr cannot cancel an evaluation, so each
// rule is compiled with a charge inserted where work grows with the input:
// every pass through a predicate ({...} in filter, map, any, all, count,
// sum, sortBy and the rest, and the validate rule on each item) costs the
// number of syntax nodes in its body, and every non-literal operand of +,
// ==, !=, in, contains, startsWith, endsWith and matches, and every
// argument and result of a builtin that takes no predicate, costs its size
// (one per value inside it, however deep, and one per 16 bytes of a
// string). Work that the size of the operands does not bound is charged
// before it runs, from the operands: matches against a pattern that is
// not a literal, repeat and replace (evalBudget.matches, repeat, replace).
// A rule that spends more fails with rule_error "evaluation budget
// exceeded". On a 2-core machine the slowest runaway rule measured
// (toJSON of the body inside a loop) stops within a second; a filter over
// 10,000 items with a 20-node predicate costs about 200,000.
//
// Apply skips the charges when costBound proves, before running, that the
// rules cannot spend the budget on this input (see cost.go); the verdict is
// the same either way.
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

// charge is __toolpulse_charge(units, value): it adds units plus the size
// of value to the budget and returns value unchanged, or panics with the
// budget error once the budget is spent; expr turns the panic into a
// run-time error positioned at the charged expression. A rule cannot call
// it (Compile refuses the name), and negative units count as none, so that
// nothing can give budget back.
func (b *evalBudget) charge(units, v any) any {
	if u, _ := units.(int); u > 0 {
		b.spent += u
	}
	b.chargeSize(v)
	if b.spent > b.limit {
		panic(fmt.Errorf("%s: the rules spent more than %d units (see Limits in docs/consumers.md)", budgetExceeded, b.limit))
	}
	return v
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

// spend adds units, the cost of what would otherwise run unmeasured,
// before it runs: it panics with the budget error naming what (the
// operation and its sizes) once the budget would be spent.
func (b *evalBudget) spend(units float64, what string) {
	if units > float64(b.limit-b.spent) {
		panic(fmt.Errorf("%s: %s would cost %.0f units, more than the %d left of the rules' %d (see Limits in docs/consumers.md)",
			budgetExceeded, what, units, max(0, b.limit-b.spent), b.limit))
	}
	b.spent += int(units)
}

// matches is `text matches pattern` for a pattern that is not a literal of
// the rule, so possibly the provider's own. Go's regexp is linear, but in
// text × program: a 10 KB pattern on an 80 KB body is nearly a billion
// steps, which expr cannot stop. It charges parsing by the pattern's
// length, then compiling by the size of the program the pattern expands to
// (a{1000} is a thousand instructions) and matching by the text's length
// times that size, and runs only if the budget allows all of it. Its
// results and errors are expr's own.
func (b *evalBudget) matches(text, pattern any) any {
	if runtime.IsNil(text) || runtime.IsNil(pattern) {
		return false
	}
	p, ok := pattern.(string)
	if !ok {
		panic(fmt.Errorf("matches: the pattern is %s, want a string", typeName(pattern)))
	}
	var n int
	switch t := text.(type) {
	case string:
		n = len(t)
	case []byte:
		n = len(t)
	default:
		panic(fmt.Errorf("matches: the text is %s, want a string", typeName(text)))
	}
	b.spend(float64(1+len(p)/16), fmt.Sprintf("parsing a %d-byte pattern", len(p)))
	parsed, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		panic(err)
	}
	size := max(programSize(parsed), float64(len(p)))
	b.spend(size*float64(1+n), fmt.Sprintf("matches with a pattern that is not a literal (%d bytes, %.0f instructions) on %d bytes of text", len(p), size, n))
	re, err := regexp.Compile(p)
	if err != nil {
		panic(err)
	}
	if s, ok := text.(string); ok {
		return re.MatchString(s)
	}
	return re.Match(text.([]byte))
}

// programSize bounds the number of instructions re compiles to: a repeat
// copies its body up to its maximum.
func programSize(re *syntax.Regexp) float64 {
	size := 1.0
	for _, sub := range re.Sub {
		size += programSize(sub)
	}
	switch re.Op {
	case syntax.OpLiteral:
		size += float64(len(re.Rune))
	case syntax.OpRepeat:
		copies := re.Max
		if copies < 0 {
			copies = re.Min + 1
		}
		size *= float64(max(1, copies))
	}
	return size
}

// repeat is expr's repeat(s, n), charged the size of its result (one per
// 16 bytes, as chargeSize counts a string) before it builds it; a result
// larger than expr's memory budget, which expr's own repeat counts only
// once built, is refused first.
func (b *evalBudget) repeat(s, n any) any {
	str, ok := s.(string)
	if !ok {
		panic(fmt.Errorf("repeat: want a string, got %s", typeName(s)))
	}
	count := runtime.ToInt(n)
	if count < 0 {
		panic(fmt.Errorf("invalid argument for repeat (expected positive integer, got %d)", count))
	}
	size := float64(len(str)) * float64(count)
	if size > maxEvalMemory {
		panic(fmt.Errorf("%s: repeat would build %.0f bytes, more than the %d a rule may build (see Limits in docs/consumers.md)",
			budgetExceeded, size, maxEvalMemory))
	}
	b.spend(1+size/16, fmt.Sprintf("repeat building %.0f bytes", size))
	return strings.Repeat(str, count)
}

// replace is expr's replace(s, old, new) (n < 0) and replace(s, old, new,
// n), charged the size of its result before it builds it: len(s) plus, for
// each replacement, the difference between new and old.
func (b *evalBudget) replace(s, old, repl, n any) any {
	str, ok1 := s.(string)
	o, ok2 := old.(string)
	r, ok3 := repl.(string)
	if !ok1 || !ok2 || !ok3 {
		panic(fmt.Errorf("replace: want strings, got %s, %s and %s", typeName(s), typeName(old), typeName(repl)))
	}
	limit := runtime.ToInt(n)
	count := utf8.RuneCountInString(str) + 1 // what an empty old matches
	if o != "" {
		count = strings.Count(str, o)
	}
	if limit >= 0 {
		count = min(count, limit)
	}
	size := float64(len(str)) + float64(count)*float64(len(r)-len(o))
	b.spend(1+size/16, fmt.Sprintf("replace building %.0f bytes", size))
	return strings.Replace(str, o, r, limit)
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
		if _, literal := n.Right.(*ast.StringNode); n.Operator == "matches" && !literal {
			// expr compiles such a pattern on every run and matches in
			// time text × pattern: evalBudget.matches charges that first.
			*node = call(matchFn, n, n.Left, n.Right)
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
		// repeat and replace build their result before a charge after them
		// could count it: evalBudget charges it from their arguments first.
		switch {
		case n.Name == "repeat" && len(n.Arguments) == 2:
			*node = call(repeatFn, n, n.Arguments...)
			return
		case n.Name == "replace" && len(n.Arguments) == 3:
			*node = call(replacFn, n, append(n.Arguments, &ast.IntegerNode{Value: -1})...)
			return
		case n.Name == "replace" && len(n.Arguments) == 4:
			*node = call(replacFn, n, n.Arguments...)
			return
		}
		// The result too: toJSON, join or replace can build far more than
		// they were given.
		*node = charge(0, n)
	}
}

// charge wraps n in __toolpulse_charge(units, n).
func charge(units int, n ast.Node) ast.Node {
	call := &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: chargeFn},
		Arguments: []ast.Node{&ast.IntegerNode{Value: units}, n},
	}
	call.SetLocation(n.Location())
	call.Callee.SetLocation(n.Location())
	call.Arguments[0].SetLocation(n.Location())
	return call
}

// call is a call of the env's function fn on args, in n's place.
func call(fn string, n ast.Node, args ...ast.Node) ast.Node {
	c := &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: args}
	c.SetLocation(n.Location())
	c.Callee.SetLocation(n.Location())
	for _, a := range args {
		if a.Location() == (file.Location{}) {
			a.SetLocation(n.Location())
		}
	}
	return c
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

// chargedValue returns the expression n charges, if n is a charge.
func chargedValue(n ast.Node) (ast.Node, bool) {
	call, ok := n.(*ast.CallNode)
	if !ok || len(call.Arguments) != 2 {
		return nil, false
	}
	if id, ok := call.Callee.(*ast.IdentifierNode); !ok || id.Value != chargeFn {
		return nil, false
	}
	return call.Arguments[1], true
}

func countNodes(n ast.Node) int {
	c := nodeCounter(0)
	ast.Walk(&n, &c)
	return int(c)
}

type nodeCounter int

func (c *nodeCounter) Visit(*ast.Node) { *c++ }
