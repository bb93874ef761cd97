package consumers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/toolpulse/toolpulse/results"
)

// Expression is one rule outside a consumer: a step's capture or its
// until (SPEC §11). It sees what a select rule sees, vars included, and
// runs under the same evaluation budget, so a capture over a huge or
// hostile answer is bounded like any rule.
type Expression struct {
	Rule string // what to call it in messages: "capture access_token", "until"
	Text string

	prog    *vm.Program // as written, for reading
	run     *vm.Program // with the budget's charges, for running
	clauses []untilClause
}

// CompileExpression compiles text as the rule called rule ("capture
// refund_id", "until"); its errors are positioned inside text.
func CompileExpression(rule, text string) (*Expression, *RuleError) {
	if strings.TrimSpace(text) == "" {
		return nil, &RuleError{Rule: rule, Line: 1, Column: 1, Message: "rule is empty"}
	}
	r, err := compileRule(rule, text, "")
	if err != nil {
		return nil, err
	}
	return &Expression{Rule: rule, Text: text, prog: r.prog, run: r.run, clauses: compileUntilClauses(text)}, nil
}

// Eval runs the expression on in. A failure is a typed contract error:
// the rule's own fail(), or rule_error; a panic is internal_error.
func (x *Expression) Eval(in Input) (out any, failure *results.Error) {
	defer func() {
		if p := recover(); p != nil {
			out, failure = nil, results.NewError(results.CodeInternalError,
				"%s rule panicked: %s", x.Rule, results.ClipBytes(fmt.Sprint(p), maxMessageBytes))
		}
	}()
	st := applyStates.Get().(*applyState)
	defer st.release()
	st.fill(in)
	st.machine.MemoryBudget = maxEvalMemory
	v, err := st.machine.Run(x.run, &st.env)
	if err != nil {
		return nil, runError(x.Rule, x.Text, err, 0)
	}
	return v, nil
}

// Vars lists the names the expression reads as vars.NAME (or
// vars["NAME"]), in order and without repeats, so that the loader can
// refuse a name no earlier step captures. dynamic reports a read of vars
// whose name only the run knows (vars[x], or vars as a whole), which no
// load-time check can follow.
func (x *Expression) Vars() (names []string, dynamic bool) {
	return varsRead(x.prog.Node())
}

// Vars lists the captures the consumer's rules read as vars.NAME, as
// Expression.Vars does: a consumer on a step may read those of earlier
// steps (SPEC §11).
func (c *Consumer) Vars() (names []string, dynamic bool) {
	if c == nil || c.selectProg == nil {
		return nil, false
	}
	names, dynamic = varsRead(c.selectProg.Node())
	if c.validateProg != nil {
		more, d := varsRead(c.validateProg.Node())
		for _, n := range more {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		dynamic = dynamic || d
	}
	return names, dynamic
}

// varsRead walks n for reads of the vars identifier.
func varsRead(n ast.Node) (names []string, dynamic bool) {
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		if n == nil {
			return
		}
		switch m := n.(type) {
		case *ast.MemberNode:
			if id, ok := m.Node.(*ast.IdentifierNode); ok && id.Value == "vars" {
				if p, ok := m.Property.(*ast.StringNode); ok {
					if !slices.Contains(names, p.Value) {
						names = append(names, p.Value)
					}
					return
				}
				dynamic = true
				walk(m.Property)
				return
			}
		case *ast.IdentifierNode:
			if m.Value == "vars" {
				dynamic = true
			}
			return
		}
		for _, c := range children(n) {
			walk(*c)
		}
	}
	walk(n)
	return names, dynamic
}

// untilClause is one operand of an until rule's top-level && chain, with
// the values it reads, so that a claim still false at the deadline can
// say what was observed (`state: "pending"`) instead of only "false".
type untilClause struct {
	text  string
	prog  *vm.Program
	reads []untilRead
}

type untilRead struct {
	name string // as shown: "state" for response.state, "vars.refund_id"
	prog *vm.Program
}

// compileUntilClauses splits text at its top-level && chain; nil when a
// clause cannot be run on its own without the budget (a loop, a call that
// builds).
func compileUntilClauses(text string) []untilClause {
	tree, err := parser.Parse(text)
	if err != nil {
		return nil
	}
	parts := andClauses(tree.Node)
	out := make([]untilClause, 0, len(parts))
	for _, part := range parts {
		if !explainable(part) {
			return nil
		}
		c := untilClause{text: part.String()}
		prog, err := expr.Compile(c.text, compileOptions()...)
		if err != nil {
			return nil
		}
		c.prog = prog
		c.reads = operandReads(part)
		out = append(out, c)
	}
	return out
}

// operandReads lists the outermost member reads of n rooted at a rule
// input (response.state, vars.refund_id, status), in order, without
// repeats.
func operandReads(n ast.Node) []untilRead {
	var reads []untilRead
	seen := map[string]bool{}
	add := func(text string) {
		if seen[text] {
			return
		}
		seen[text] = true
		prog, err := expr.Compile(text, compileOptions()...)
		if err != nil {
			return
		}
		name := strings.ReplaceAll(text, "?.", ".")
		name = strings.TrimPrefix(name, "response.")
		reads = append(reads, untilRead{name: name, prog: prog})
	}
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		switch m := n.(type) {
		case *ast.ChainNode:
			walk(m.Node)
			return
		case *ast.MemberNode:
			if root := memberRoot(m); root != "" {
				add(m.String())
				return
			}
		case *ast.IdentifierNode:
			if m.Value == "status" {
				add(m.Value)
			}
			return
		case *ast.BuiltinNode:
			for _, a := range m.Arguments {
				walk(a)
			}
			return
		}
		for _, c := range clauseChildren(n) {
			walk(c)
		}
	}
	walk(n)
	return reads
}

// memberRoot is the rule input a member chain starts at, or "".
func memberRoot(m *ast.MemberNode) string {
	for {
		switch n := m.Node.(type) {
		case *ast.IdentifierNode:
			switch n.Value {
			case "response", "vars", "result", "headers":
				return n.Value
			}
			return ""
		case *ast.MemberNode:
			m = n
		case *ast.ChainNode:
			inner, ok := n.Node.(*ast.MemberNode)
			if !ok {
				return ""
			}
			m = inner
		default:
			return ""
		}
	}
}

// maxObservedRunes bounds what Observed says: half a verdict's message,
// leaving room for the verification's own words around it.
const maxObservedRunes = maxMessageBytes / 2

// Observed says what in showed of a false expression: the first clause
// of its && chain that is false, and the values that clause read, as
// "`response.state == "refunded"` was false: state: "pending"". It is ""
// when the rule cannot be explained clause by clause; then the caller
// shows the rule alone.
func (x *Expression) Observed(in Input) string {
	st := applyStates.Get().(*applyState)
	defer st.release()
	st.fill(in)
	for _, cl := range x.clauses {
		out, err := expr.Run(cl.prog, &st.env)
		if err != nil {
			return ""
		}
		if v, ok := out.(bool); ok && v {
			continue
		}
		saw := make([]string, 0, len(cl.reads))
		for _, r := range cl.reads {
			v, err := expr.Run(r.prog, &st.env)
			if err != nil {
				continue
			}
			saw = append(saw, r.name+": "+results.ClipBytes(preview(v), 80))
		}
		msg := "`" + cl.text + "` was false"
		if len(saw) > 0 {
			msg += ": " + strings.Join(saw, ", ")
		}
		// A long clause gives way to the values, which are the point.
		return results.Shorten(msg, maxObservedRunes)
	}
	return ""
}

// ReadFields is what the expression may read of the answer, as a
// consumer's ReadFields.
func (x *Expression) ReadFields() FieldSet {
	r := readWalker{names: map[string]bool{}}
	r.walk(x.prog.Node())
	if r.unknown {
		return FieldSet{}
	}
	return FieldSet{Known: true, Names: r.names}
}
