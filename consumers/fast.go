package consumers

import (
	"reflect"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// The programs without charges (cost.go says when they run) are compiled
// from the charged tree after expr's optimizer, so that they do exactly
// what the charged programs do, charges aside. Two more rewrites make them
// cheaper without changing what they do; FuzzCostBound and
// TestCostBoundHolds compare their verdicts with the charged programs'.

// withoutCharges compiles the charged tree with every charge replaced by
// the expression it charges, member reads through fetch, and, for validate,
// without its wrapper. unwrapped reports the last: the run then needs a
// memory budget one smaller. It consumes the tree.
func (r *compiledRule) withoutCharges(validate bool) (_ *vm.Program, unwrapped bool, _ error) {
	stripCharges(&r.tree.Node)
	rewrite(&r.tree.Node, fetchMembers)
	if validate {
		unwrapped = unwrapValidate(&r.tree.Node)
	}
	p, err := compiler.Compile(r.tree, r.config)
	return p, unwrapped, err
}

// stripCharges replaces every charge in the tree at n with the expression
// it charges.
func stripCharges(n *ast.Node) {
	rewrite(n, func(n *ast.Node) {
		if v, ok := chargedValue(*n); ok {
			*n = v
		}
	})
}

// rewrite calls f on every node of the tree at n, children first. Unlike
// ast.Walk it also enters the map body the optimizer fuses into a filter.
func rewrite(n *ast.Node, f func(*ast.Node)) {
	ast.Walk(n, rewriter(f))
}

type rewriter func(*ast.Node)

func (f rewriter) Visit(n *ast.Node) {
	if b, ok := (*n).(*ast.BuiltinNode); ok && b.Map != nil {
		rewrite(&b.Map, f)
	}
	f(n)
}

var (
	anyType   = reflect.TypeOf((*any)(nil)).Elem()
	fetchType = reflect.TypeOf(fetch)
)

// fetch is runtime.Fetch, the member read of a value of unknown type, with
// the JSON cases done directly: runtime.Fetch reads a map through
// reflection, at about twice the cost and an allocation per read. Anything
// else, and every error, is runtime.Fetch's.
func fetch(from, key any) any {
	switch f := from.(type) {
	case map[string]any:
		if k, ok := key.(string); ok {
			return f[k]
		}
	case []any:
		if i, ok := key.(int); ok && 0 <= i && i < len(f) {
			return f[i]
		}
	}
	return runtime.Fetch(from, key)
}

// fetchMembers turns a member read of a value of unknown type, which expr
// compiles to runtime.Fetch, into a call of fetch, which compiles to a
// direct call. An optional read (a?.b) stays: its nil check is part of
// the member's compilation.
func fetchMembers(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok || m.Method || m.Optional {
		return
	}
	if t := m.Node.Type(); t != nil && t.Kind() != reflect.Interface &&
		(t.Kind() != reflect.Map || t.Key().Kind() != reflect.String || t.Elem() != anyType) {
		return // an env field, or a typed value: not a runtime.Fetch
	}
	switch m.Property.(type) {
	case *ast.StringNode, *ast.IntegerNode:
	default:
		return
	}
	callee := &ast.IdentifierNode{Value: fetchFn}
	callee.SetType(fetchType)
	callee.SetLocation(m.Location())
	call := &ast.CallNode{Callee: callee, Arguments: []ast.Node{m.Node, m.Property}}
	call.SetType(m.Type())
	// A failed read is reported where expr reports it: at the member.
	call.SetLocation(m.Location())
	*n = call
}

// unwrapValidate turns map([item], {body}) into [body] with the wrapper's
// # and #index (not those of loops inside body) read directly: item and 0.
// That saves a list, a loop and its scope per item. The one-element list
// that remains is what validateItem expects, and is allocated where map
// allocated its result: only the [item] list's one unit of memory budget
// is gone, which the run makes up for with a budget one smaller.
func unwrapValidate(root *ast.Node) bool {
	wrapper, ok := (*root).(*ast.BuiltinNode)
	if !ok || wrapper.Name != "map" || wrapper.Map != nil || len(wrapper.Arguments) != 2 {
		return false
	}
	list, ok := wrapper.Arguments[0].(*ast.ArrayNode)
	if !ok || len(list.Nodes) != 1 {
		return false
	}
	if id, ok := list.Nodes[0].(*ast.IdentifierNode); !ok || id.Value != itemVar {
		return false
	}
	pred, ok := wrapper.Arguments[1].(*ast.PredicateNode)
	if !ok {
		return false
	}
	body := pred.Node
	if !replaceWrapperPointers(&body) {
		return false
	}
	out := &ast.ArrayNode{Nodes: []ast.Node{body}}
	out.SetType(wrapper.Type())
	out.SetLocation(wrapper.Location())
	*root = out
	return true
}

// replaceWrapperPointers replaces the pointers of the tree at n that are
// not inside a predicate of its own; false when one of them is neither #
// nor #index.
func replaceWrapperPointers(n *ast.Node) bool {
	switch p := (*n).(type) {
	case *ast.PointerNode:
		var v ast.Node
		switch p.Name {
		case "":
			v = &ast.IdentifierNode{Value: itemVar}
			v.SetType(anyType)
		case "index":
			v = &ast.IntegerNode{Value: 0}
			v.SetType(reflect.TypeOf(0))
		default:
			return false
		}
		v.SetLocation(p.Location())
		*n = v
		return true
	case *ast.PredicateNode:
		return true // its pointers are its own loop's
	case *ast.BuiltinNode:
		// Map is a predicate body too (filter fused with map).
		for i := range p.Arguments {
			if !replaceWrapperPointers(&p.Arguments[i]) {
				return false
			}
		}
		return true
	}
	ok := true
	for _, c := range children(*n) {
		ok = ok && replaceWrapperPointers(c)
	}
	return ok
}

// children are the child slots of n, as ast.Walk visits them.
func children(n ast.Node) []*ast.Node {
	switch n := n.(type) {
	case *ast.UnaryNode:
		return []*ast.Node{&n.Node}
	case *ast.BinaryNode:
		return []*ast.Node{&n.Left, &n.Right}
	case *ast.ChainNode:
		return []*ast.Node{&n.Node}
	case *ast.MemberNode:
		return []*ast.Node{&n.Node, &n.Property}
	case *ast.SliceNode:
		out := []*ast.Node{&n.Node}
		if n.From != nil {
			out = append(out, &n.From)
		}
		if n.To != nil {
			out = append(out, &n.To)
		}
		return out
	case *ast.CallNode:
		out := []*ast.Node{&n.Callee}
		for i := range n.Arguments {
			out = append(out, &n.Arguments[i])
		}
		return out
	case *ast.BuiltinNode:
		out := make([]*ast.Node, 0, len(n.Arguments)+1)
		for i := range n.Arguments {
			out = append(out, &n.Arguments[i])
		}
		if n.Map != nil {
			out = append(out, &n.Map)
		}
		return out
	case *ast.PredicateNode:
		return []*ast.Node{&n.Node}
	case *ast.VariableDeclaratorNode:
		return []*ast.Node{&n.Value, &n.Expr}
	case *ast.SequenceNode:
		out := make([]*ast.Node, len(n.Nodes))
		for i := range n.Nodes {
			out[i] = &n.Nodes[i]
		}
		return out
	case *ast.ConditionalNode:
		return []*ast.Node{&n.Cond, &n.Exp1, &n.Exp2}
	case *ast.ArrayNode:
		out := make([]*ast.Node, len(n.Nodes))
		for i := range n.Nodes {
			out[i] = &n.Nodes[i]
		}
		return out
	case *ast.MapNode:
		out := make([]*ast.Node, len(n.Pairs))
		for i := range n.Pairs {
			out[i] = &n.Pairs[i]
		}
		return out
	case *ast.PairNode:
		return []*ast.Node{&n.Key, &n.Value}
	}
	return nil
}
