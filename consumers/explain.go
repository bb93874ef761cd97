package consumers

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/toolpulse/toolpulse/results"
)

// clause is one operand of a validate rule's top-level `&&` chain,
// compiled on its own so that an invalid_item can name the clause that was
// false and the values it read, instead of leaving the reader to diff the
// rule against the item by eye.
type clause struct {
	text  string // as expr prints it: `type(.priority) == "int"`
	prog  *vm.Program
	reads []fieldRead
}

// fieldRead is a field of the item a clause reads, such as `.priority`.
type fieldRead struct {
	name  string // "priority", "b.c"
	typed bool   // read inside type(): its type is what matters, not its value
	prog  *vm.Program
}

// explainable lists the nodes a clause may hold to be explained: none
// loops or builds, so running a clause again costs no more than the item
// and the rule's own literals, without the evaluation budget.
func explainable(n ast.Node) bool {
	ok := true
	ast.Walk(&n, visitor(func(n *ast.Node) {
		switch m := (*n).(type) {
		case *ast.BinaryNode, *ast.UnaryNode, *ast.MemberNode, *ast.ChainNode, *ast.PointerNode,
			*ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode,
			*ast.ArrayNode, *ast.ConditionalNode, *ast.IdentifierNode:
		case *ast.BuiltinNode:
			switch m.Name {
			case "type", "len", "int", "float", "abs":
			default:
				ok = false
			}
		default:
			ok = false
		}
	}))
	return ok
}

type visitor func(*ast.Node)

func (f visitor) Visit(n *ast.Node) { f(n) }

// compileClauses splits a validate rule into its clauses; nil when the rule
// cannot be explained clause by clause (a loop, a let, a call that builds).
func compileClauses(text string) []clause {
	tree, err := parser.Parse(validatePrefix + text + "\n})")
	if err != nil {
		return nil
	}
	b, ok := tree.Node.(*ast.BuiltinNode)
	if !ok || len(b.Arguments) != 2 {
		return nil
	}
	p, ok := b.Arguments[1].(*ast.PredicateNode)
	if !ok {
		return nil
	}
	parts := andClauses(p.Node)
	out := make([]clause, 0, len(parts))
	for _, part := range parts {
		if !explainable(part) {
			return nil
		}
		c := clause{text: part.String()}
		if c.prog = compileOnItem(c.text); c.prog == nil {
			return nil
		}
		c.reads = fieldReads(part)
		out = append(out, c)
	}
	return out
}

// compileOnItem compiles an expression over the item, as validate runs.
func compileOnItem(text string) *vm.Program {
	prog, err := expr.Compile(validatePrefix+text+"\n})", compileOptions()...)
	if err != nil {
		return nil
	}
	return prog
}

// fieldReads lists the outermost reads of the item's fields in n, in order
// and without repeats.
func fieldReads(n ast.Node) []fieldRead {
	var reads []fieldRead
	seen := map[string]int{}
	var walk func(n ast.Node, typed bool)
	walk = func(n ast.Node, typed bool) {
		switch m := n.(type) {
		case *ast.ChainNode:
			walk(m.Node, typed)
			return
		case *ast.MemberNode:
			if text := m.String(); onItem(m) && strings.HasPrefix(text, ".") {
				if i, ok := seen[text]; ok {
					reads[i].typed = reads[i].typed && typed
					return
				}
				if prog := compileOnItem(text); prog != nil {
					seen[text] = len(reads)
					reads = append(reads, fieldRead{name: strings.TrimPrefix(strings.ReplaceAll(text, "?.", "."), "."), typed: typed, prog: prog})
				}
				return
			}
		case *ast.BuiltinNode:
			for _, a := range m.Arguments {
				walk(a, m.Name == "type")
			}
			return
		}
		for _, c := range clauseChildren(n) {
			walk(c, false)
		}
	}
	walk(n, false)
	return reads
}

// onItem reports whether a member chain starts at the item (`.a.b`).
func onItem(m *ast.MemberNode) bool {
	for {
		switch n := m.Node.(type) {
		case *ast.PointerNode:
			return n.Name == ""
		case *ast.MemberNode:
			m = n
		case *ast.ChainNode:
			inner, ok := n.Node.(*ast.MemberNode)
			if !ok {
				return false
			}
			m = inner
		default:
			return false
		}
	}
}

func clauseChildren(n ast.Node) []ast.Node {
	switch m := n.(type) {
	case *ast.BinaryNode:
		return []ast.Node{m.Left, m.Right}
	case *ast.UnaryNode:
		return []ast.Node{m.Node}
	case *ast.ConditionalNode:
		return []ast.Node{m.Cond, m.Exp1, m.Exp2}
	case *ast.ArrayNode:
		return m.Nodes
	case *ast.MemberNode:
		return []ast.Node{m.Node, m.Property}
	}
	return nil
}

// explainInvalid says which clause of the validate rule was false for item
// and what it read there: "`type(.priority) == "int"` was false: priority
// is string". It returns "" when the rule has no clauses to explain or no
// clause can be shown false on its own.
func (c *Consumer) explainInvalid(st *applyState) string {
	for _, cl := range c.clauses {
		out, err := runOnItem(cl.prog, st)
		if err != nil {
			return ""
		}
		if v, ok := out.(bool); !ok || v {
			continue
		}
		saw := make([]string, 0, len(cl.reads))
		for _, r := range cl.reads {
			v, err := runOnItem(r.prog, st)
			switch {
			case err != nil:
				continue
			case v == nil && missing(st.env.Item, r.name):
				saw = append(saw, r.name+" is missing")
			case r.typed:
				saw = append(saw, r.name+" is "+typeName(v))
			default:
				saw = append(saw, fmt.Sprintf("%s is %s %s", r.name, typeName(v), results.ClipBytes(preview(v), 60)))
			}
		}
		msg := "`" + cl.text + "` was false"
		if len(saw) > 0 {
			msg += ": " + strings.Join(saw, ", ")
		}
		return msg
	}
	return ""
}

func runOnItem(prog *vm.Program, st *applyState) (any, error) {
	out, err := expr.Run(prog, &st.env)
	if err != nil {
		return nil, err
	}
	if l, ok := out.([]any); ok && len(l) == 1 {
		return l[0], nil
	}
	return nil, fmt.Errorf("clause produced %s", typeName(out))
}

// missing reports whether the item lacks the field at the dotted path
// (rather than holding null there).
func missing(item any, path string) bool {
	for _, k := range strings.Split(path, ".") {
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		if item, ok = m[k]; !ok {
			return true
		}
	}
	return false
}

// andClauses splits n at its top-level && (or and) chain, in order; a
// rule without one is one clause.
func andClauses(n ast.Node) []ast.Node {
	if b, ok := n.(*ast.BinaryNode); ok && (b.Operator == "&&" || b.Operator == "and") {
		return append(andClauses(b.Left), andClauses(b.Right)...)
	}
	return []ast.Node{n}
}
