package consumers

import (
	"fmt"
	"reflect"

	"github.com/expr-lang/expr/ast"
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
// string). A rule that spends more fails with rule_error "evaluation budget
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
		panic(fmt.Errorf("%s: the rules spent more than %d units (see Limits in the README)", budgetExceeded, b.limit))
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
