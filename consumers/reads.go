package consumers

import (
	"reflect"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
)

// FieldSet is what a consumer's rules read: the member names they access.
// Names are not tied to a position in the response: a name read anywhere
// counts as read everywhere.
type FieldSet struct {
	// Known is false when reads could not be determined (e.g. dynamic member
	// access with a non-constant key): then every field counts as read.
	Known bool
	Names map[string]bool
}

// Reads reports whether the rules may read field: true when s is not Known
// or when they access a member of that name.
func (s FieldSet) Reads(field string) bool {
	return !s.Known || s.Names[field]
}

// ReadFields returns the member names both rules of c access: `a.b`,
// `a?.b`, `a["b"]`, `.b` inside predicates and the validate rule, `"b" in a`
// and `get(a, "b")`. Names read from headers, request and tool are not
// response fields and are left out. Reads are unknown (Known false) when a rule
// accesses a member with a key that is not a constant string, tests
// membership with a non-constant key, or calls keys, values, toPairs or
// toJSON, which observe every key of a value; a constant integer index reads
// an element, not a field, and leaves Known as it is. A consumer not made by
// Compile reads unknown fields.
func (c *Consumer) ReadFields() FieldSet {
	if c == nil || c.selectProg == nil {
		return FieldSet{}
	}
	r := readWalker{names: map[string]bool{}}
	progs := []ast.Node{c.selectProg.Node()}
	if c.validateProg != nil {
		progs = append(progs, c.validateProg.Node())
	}
	for _, n := range progs {
		r.walk(n)
	}
	if r.unknown {
		return FieldSet{}
	}
	delete(r.names, itemVar)
	return FieldSet{Known: true, Names: r.names}
}

// ReadsInput reports whether the rules can see the rule input name (SPEC
// §4 and §10: response, status, headers, request, probe, result, tool):
// true when either rule names it, or names $env, which holds every input.
// A caller may leave out an input the rules cannot see, such as an MCP
// probe's result, which costs a decode of the whole answer. A consumer not
// made by Compile sees every input.
func (c *Consumer) ReadsInput(name string) bool {
	if c == nil || c.inputs == nil {
		return true
	}
	return c.inputs[name] || c.inputs["$env"]
}

// inputNames returns the identifiers the programs use: the inputs they
// name, and the variables of their lets. A member's name (response.result)
// is not an identifier.
func inputNames(progs ...*vm.Program) map[string]bool {
	names := map[string]bool{}
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		if id, ok := n.(*ast.IdentifierNode); ok {
			names[id.Value] = true
		}
		eachChild(n, walk)
	}
	for _, p := range progs {
		if p != nil {
			walk(p.Node())
		}
	}
	return names
}

type readWalker struct {
	names   map[string]bool
	unknown bool
}

// wholeValueBuiltins observe every key of their argument, so a rule that
// calls one may depend on any field.
var wholeValueBuiltins = map[string]bool{"keys": true, "values": true, "toPairs": true, "toJSON": true}

// notResponse names the rule inputs whose members are not response fields.
// A read of result counts: its structuredContent is what response holds.
var notResponse = map[string]bool{"headers": true, "request": true, "tool": true}

func (r *readWalker) walk(n ast.Node) {
	switch n := n.(type) {
	case *ast.MemberNode:
		if !outsideResponse(n) {
			r.key(n.Property)
		}
	case *ast.BinaryNode:
		if n.Operator == "in" && !literalCollection(n.Right) && !outsideResponse(n.Right) {
			r.key(n.Left)
		}
	case *ast.BuiltinNode:
		switch {
		case wholeValueBuiltins[n.Name]:
			r.unknown = true
		case n.Name == "get" && len(n.Arguments) == 2:
			r.key(n.Arguments[1])
		}
	}
	eachChild(n, r.walk)
}

// key records what reading the member named by the node k means.
func (r *readWalker) key(k ast.Node) {
	switch k := k.(type) {
	case *ast.StringNode:
		r.names[k.Value] = true
		return
	case *ast.IntegerNode:
		return
	case *ast.ConstantNode:
		switch v := k.Value.(type) {
		case string:
			r.names[v] = true
			return
		case int, int64:
			return
		}
	}
	r.unknown = true
}

// outsideResponse reports whether n is headers, request or tool or a
// member access starting at one of them: their keys are header names,
// fixture keys and the tool's definition, not response fields. expr
// refuses a let that redeclares any of them, so the identifier is always
// the built-in one.
func outsideResponse(n ast.Node) bool {
	for {
		switch t := n.(type) {
		case *ast.MemberNode:
			n = t.Node
		case *ast.ChainNode:
			n = t.Node
		case *ast.IdentifierNode:
			return notResponse[t.Value]
		default:
			return false
		}
	}
}

// literalCollection reports whether n is a list or range written in the
// rule, so that `x in n` tests membership rather than reading a key.
func literalCollection(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.ArrayNode:
		return true
	case *ast.ConstantNode:
		// The optimizer turns a literal list into a set or a slice.
		k := reflect.ValueOf(n.Value).Kind()
		return k == reflect.Map || k == reflect.Slice || k == reflect.Array
	case *ast.BinaryNode:
		return n.Operator == ".."
	}
	return false
}

// eachChild calls f on every child of n. It exists besides ast.Walk because
// Walk skips BuiltinNode.Map, where the optimizer moves the body of a
// map() that follows a filter().
func eachChild(n ast.Node, f func(ast.Node)) {
	visit := func(c ast.Node) {
		if c != nil {
			f(c)
		}
	}
	switch n := n.(type) {
	case *ast.UnaryNode:
		visit(n.Node)
	case *ast.BinaryNode:
		visit(n.Left)
		visit(n.Right)
	case *ast.ChainNode:
		visit(n.Node)
	case *ast.MemberNode:
		visit(n.Node)
		visit(n.Property)
	case *ast.SliceNode:
		visit(n.Node)
		visit(n.From)
		visit(n.To)
	case *ast.CallNode:
		visit(n.Callee)
		for _, a := range n.Arguments {
			visit(a)
		}
	case *ast.BuiltinNode:
		for _, a := range n.Arguments {
			visit(a)
		}
		visit(n.Map)
	case *ast.PredicateNode:
		visit(n.Node)
	case *ast.VariableDeclaratorNode:
		visit(n.Value)
		visit(n.Expr)
	case *ast.SequenceNode:
		for _, c := range n.Nodes {
			visit(c)
		}
	case *ast.ConditionalNode:
		visit(n.Cond)
		visit(n.Exp1)
		visit(n.Exp2)
	case *ast.ArrayNode:
		for _, c := range n.Nodes {
			visit(c)
		}
	case *ast.MapNode:
		for _, c := range n.Pairs {
			visit(c)
		}
	case *ast.PairNode:
		visit(n.Key)
		visit(n.Value)
	}
}

// Union is every field a or b may read: unknown when either is.
func Union(a, b FieldSet) FieldSet {
	if !a.Known || !b.Known {
		return FieldSet{}
	}
	names := make(map[string]bool, len(a.Names)+len(b.Names))
	for n := range a.Names {
		names[n] = true
	}
	for n := range b.Names {
		names[n] = true
	}
	return FieldSet{Known: true, Names: names}
}
