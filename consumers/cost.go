package consumers

import (
	"math"
	"reflect"

	"github.com/expr-lang/expr/ast"
)

// Charging costs: on the seed-000 consumer and a 20-result answer the
// charges took over half of Apply's CPU (a call each, and walks of the values
// whose size is charged). Most rules in use cannot come near the budget on a
// body of ordinary size: they look at each item of a list once. costBound
// proves that from the charged tree, as a bound on what the charges would
// add up to,
//
//	spent ≤ c + s·S
//
// where S measures everything a rule can read (response, headers, request,
// probe, status; result and tool for an MCP probe). Apply measures S, and
// when the bound is within maxEvalCost it runs the same programs with the
// charges taken out: the charged run could not have failed on the budget,
// so both give the same verdict. Otherwise, or when no bound exists (a loop over the input inside
// a loop over the input, the whole input used inside a loop, a builtin that
// can build more than it was given, reduce, groupBy, ...), Apply runs the
// charged programs as before. The memory budget applies to both.
//
// The bound is an abstract interpretation of the charged tree after expr's
// optimizer, that is of exactly the charges that run. For each value it
// keeps a bound on its size; for each loop (predicate) a bound on how many
// passes it makes over the whole Apply, and on the sizes of its items summed
// over those passes. A loop over a list of size n makes at most n passes and
// its items add up to at most n, so a loop over a part of an outer loop's
// item adds no factor: looking at each part of the input once stays linear
// however deep the parts nest. Anything it does not understand makes the
// rule unbounded.
//
// Two measures of S are tried, each giving its own bound: the charges' own
// (one per value, one per 16 bytes of text), with which a string, iterated
// byte by byte, makes up to 16 passes per unit; and one that counts every
// byte of text, with which it makes one. The first suits long strings, the
// second short ones.

// measure is how costBound and sizer size a value.
type measure int

const (
	chargeUnits measure = iota // as chargeSize
	textBytes                  // one per value, one per byte of a string or key
)

// form is the bound c + s·S.
type form struct{ c, s float64 }

func (a form) add(b form) form         { return form{a.c + b.c, a.s + b.s} }
func (a form) scale(k float64) form    { return form{a.c * k, a.s * k} }
func (a form) max(b form) form         { return form{math.Max(a.c, b.c), math.Max(a.s, b.s)} }
func (a form) at(size float64) float64 { return a.c + a.s*size }

// mul multiplies two bounds; it fails when both grow with S, the product
// then being quadratic.
func mul(a, b form) (form, bool) {
	if a.s > 0 && b.s > 0 {
		return form{}, false
	}
	return form{a.c * b.c, a.c*b.s + a.s*b.c}, true
}

// size bounds the size of one value: at most whole, plus k times the size
// of the current item of loop item (a part of that item).
type size struct {
	whole form
	item  *loop
	k     float64
}

func constSize(c float64) size { return size{whole: form{c: c}} }

// loop is a predicate body, or the top of a rule.
type loop struct {
	runs    form // times a node directly in the body runs, over one Apply
	items   form // sizes of the current item, summed over those runs
	itemMax form // size of one current item
}

// bottom is the size of a value that never exists (fail's result).
var bottom = size{}

// costBound is the bound of one rule's charged tree: its analysis state.
type costBound struct {
	measure measure
	total   form
	vars    map[string]size
	// itemScope is where the validate wrapper's __toolpulse_item lives;
	// nil for select.
	itemScope *loop
	failed    bool
	why       string // the first reason the rule is unbounded, for tests
}

func (b *costBound) fail(why string) size {
	if !b.failed {
		b.failed, b.why = true, why
	}
	return bottom
}

// perRun bounds one value of s.
func (b *costBound) perRun(s size) form {
	f := s.whole
	if s.item != nil {
		f = f.add(s.item.itemMax.scale(s.k))
	}
	return f
}

// summed bounds the sizes of the values of s that a node directly in l
// produces, over all its runs.
func (b *costBound) summed(s size, l *loop) form {
	f, ok := mul(s.whole, l.runs)
	if !ok {
		b.fail("a value that grows with the input is used inside a loop over the input")
		return form{}
	}
	if s.item == nil {
		return f
	}
	if s.item == l {
		return f.add(l.items.scale(s.k))
	}
	g, ok := mul(s.item.itemMax.scale(s.k), l.runs)
	if !ok {
		b.fail("an outer loop's item is used inside an inner loop")
		return form{}
	}
	return f.add(g)
}

func join(a, b size) size {
	switch {
	case a == bottom:
		return b
	case b == bottom:
		return a
	}
	out := size{whole: a.whole.max(b.whole)}
	switch {
	case a.item == b.item:
		out.item, out.k = a.item, math.Max(a.k, b.k)
	case a.item == nil:
		out.item, out.k = b.item, b.k
	case b.item == nil:
		out.item, out.k = a.item, a.k
	default: // parts of two different items: bound one by its largest
		out.item, out.k = a.item, a.k
		out.whole = out.whole.add(b.item.itemMax.scale(b.k))
	}
	return out
}

func plus(a, b size) size {
	if a.item != nil && b.item != nil && a.item != b.item {
		b = size{whole: b.whole.add(b.item.itemMax.scale(b.k))}
	}
	out := size{whole: a.whole.add(b.whole), k: a.k + b.k}
	out.item = a.item
	if out.item == nil {
		out.item = b.item
	}
	return out
}

func (s size) scale(k float64) size {
	return size{whole: s.whole.scale(k), item: s.item, k: s.k * k}
}

// boundSelect bounds the charges of a select rule's tree; it also bounds
// the size of the selection, for boundValidate.
func boundSelect(n ast.Node, m measure) (spent form, selection form, why string) {
	b := &costBound{measure: m, vars: map[string]size{}}
	top := &loop{runs: form{c: 1}}
	out := b.visit(n, top)
	if b.failed {
		return form{}, form{}, b.why
	}
	return b.total, b.perRun(out), ""
}

// boundValidate bounds the charges of a validate rule's tree over every
// item of a selection whose size is at most selection: its items number at
// most that many (a list counts one per element at least) and their sizes
// add up to at most that much.
func boundValidate(n ast.Node, selection form, m measure) (spent form, why string) {
	b := &costBound{measure: m, vars: map[string]size{}}
	b.itemScope = &loop{runs: selection, items: selection, itemMax: selection}
	b.visit(n, b.itemScope)
	if b.failed {
		return form{}, b.why
	}
	return b.total, ""
}

// boundRules bounds the charges of one Apply: the select tree, and the
// validate tree (nil when there is none) on every selected item.
func boundRules(selectTree, validateTree ast.Node, m measure) (form, string) {
	spent, selection, why := boundSelect(selectTree, m)
	if why != "" || validateTree == nil {
		return spent, why
	}
	v, why := boundValidate(validateTree, selection, m)
	return spent.add(v), why
}

// textSize is the size of a string of n bytes.
func (b *costBound) textSize(n int) float64 {
	if b.measure == textBytes {
		return float64(1 + n)
	}
	return float64(1 + n/16)
}

// envNames are what a rule reads of ruleEnv, each part of S.
var envNames = map[string]bool{"response": true, "headers": true, "request": true, "probe": true, "result": true, "tool": true, "$env": true}

// The builtins without a predicate whose result is a number or a bool
// (sizeOne; type gives a short string) or no larger than their arguments
// (sizeOfArgs), and those with a predicate (loopResults). Every other
// builtin makes a rule unbounded: string, toJSON, repeat, split, join,
// replace, upper, concat, flatten, keys, groupBy, reduce, ...
var (
	sizeOne = map[string]bool{
		"len": true, "abs": true, "ceil": true, "floor": true, "round": true,
		"int": true, "float": true, "sum": true, "mean": true, "median": true,
		"indexOf": true, "lastIndexOf": true, "hasPrefix": true, "hasSuffix": true,
	}
	sizeOfArgs = map[string]bool{
		"first": true, "last": true, "get": true, "take": true, "max": true, "min": true,
		"trim": true, "trimPrefix": true, "trimSuffix": true,
	}
	// loopResults are the builtins with a predicate: what they return.
	loopResults = map[string]string{
		"all": "one", "any": "one", "none": "one", "one": "one", "count": "one",
		"findIndex": "one", "findLastIndex": "one", "sum": "one",
		"find": "item", "findLast": "item", "filter": "list", "sortBy": "list", "map": "map",
	}
	oneResultOperators = map[string]bool{
		"-": true, "*": true, "/": true, "%": true, "**": true, "^": true,
		"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true,
		"&&": true, "||": true, "and": true, "or": true, "in": true, "not in": true,
		"contains": true, "startsWith": true, "endsWith": true, "matches": true,
	}
)

// visit bounds the size of n's value, n running directly in l, and adds the
// charges inside n to the total.
func (b *costBound) visit(n ast.Node, l *loop) size {
	if b.failed {
		return bottom
	}
	switch n := n.(type) {
	case *ast.NilNode, *ast.BoolNode, *ast.IntegerNode, *ast.FloatNode:
		return constSize(1)
	case *ast.StringNode:
		return constSize(b.textSize(len(n.Value)))
	case *ast.BytesNode:
		return constSize(float64(1 + len(n.Value)))
	case *ast.ConstantNode:
		// The optimizer folds a list of literals into one.
		z := sizer{units: math.MaxInt, bytes: math.MaxInt}
		if z.add(n.Value, 0); z.wrong {
			return b.fail("constant of another type")
		}
		if b.measure == textBytes {
			return constSize(float64(math.MaxInt - z.bytes))
		}
		return constSize(float64(math.MaxInt - z.units))
	case *ast.IdentifierNode:
		if s, ok := b.vars[n.Value]; ok {
			return s
		}
		switch {
		case envNames[n.Value]:
			return size{whole: form{s: 1}}
		case n.Value == "status":
			return constSize(1)
		case n.Value == itemVar && b.itemScope != nil:
			return size{item: b.itemScope, k: 1}
		case n.Value == itemVar:
			return constSize(1) // nil outside validate
		}
		return b.fail("unknown name " + n.Value)
	case *ast.PointerNode:
		switch n.Name {
		case "":
			return size{item: l, k: 1}
		case "index":
			return constSize(1)
		}
		return b.fail("pointer #" + n.Name)
	case *ast.ChainNode:
		return b.visit(n.Node, l)
	case *ast.MemberNode:
		if n.Method {
			return b.fail("method call")
		}
		b.visit(n.Property, l)
		return b.visit(n.Node, l) // a part of the value is no larger
	case *ast.SliceNode:
		if n.From != nil {
			b.visit(n.From, l)
		}
		if n.To != nil {
			b.visit(n.To, l)
		}
		return b.visit(n.Node, l)
	case *ast.UnaryNode:
		b.visit(n.Node, l)
		return constSize(1)
	case *ast.BinaryNode:
		left, right := b.visit(n.Left, l), b.visit(n.Right, l)
		switch {
		case n.Operator == "+":
			// Strings and lists: the result is no larger than both
			// operands; numbers are one.
			return plus(left, right)
		case n.Operator == "??":
			return join(left, right)
		case n.Operator == "..":
			lo, okLo := n.Left.(*ast.IntegerNode)
			hi, okHi := n.Right.(*ast.IntegerNode)
			if okLo && okHi {
				return constSize(float64(1 + max(0, hi.Value-lo.Value+1)))
			}
			// The memory budget fails a longer range before it exists.
			return constSize(1 + maxEvalMemory)
		case oneResultOperators[n.Operator]:
			return constSize(1)
		}
		return b.fail("operator " + n.Operator)
	case *ast.ConditionalNode:
		b.visit(n.Cond, l)
		return join(b.visit(n.Exp1, l), b.visit(n.Exp2, l))
	case *ast.VariableDeclaratorNode:
		v := b.visit(n.Value, l)
		old, shadowed := b.vars[n.Name]
		b.vars[n.Name] = v
		out := b.visit(n.Expr, l)
		if shadowed {
			b.vars[n.Name] = old
		} else {
			delete(b.vars, n.Name)
		}
		return out
	case *ast.SequenceNode:
		out := constSize(1)
		for _, x := range n.Nodes {
			out = b.visit(x, l)
		}
		return out
	case *ast.ArrayNode:
		out := constSize(1)
		for _, x := range n.Nodes {
			out = plus(out, b.visit(x, l))
		}
		return out
	case *ast.MapNode:
		out := constSize(1)
		for _, p := range n.Pairs {
			p, ok := p.(*ast.PairNode)
			if !ok {
				return b.fail("map literal")
			}
			out = plus(out, plus(b.visit(p.Key, l), b.visit(p.Value, l)))
		}
		return out
	case *ast.CallNode:
		if v, ok := chargedValue(n); ok {
			units, ok := n.Arguments[0].(*ast.IntegerNode)
			if !ok {
				return b.fail("charge without constant units")
			}
			s := b.visit(v, l)
			b.total = b.total.add(l.runs.scale(float64(units.Value))).add(b.summed(s, l))
			return s
		}
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && id.Value == "fail" {
			for _, a := range n.Arguments {
				b.visit(a, l)
			}
			return bottom
		}
		return b.fail("call")
	case *ast.BuiltinNode:
		return b.builtin(n, l)
	}
	return b.fail("node " + reflect.TypeOf(n).String())
}

func (b *costBound) builtin(n *ast.BuiltinNode, l *loop) size {
	var pred *ast.PredicateNode
	for i, a := range n.Arguments {
		if p, ok := a.(*ast.PredicateNode); ok {
			if i != 1 || pred != nil {
				return b.fail("predicate in an unexpected place in " + n.Name)
			}
			pred = p
		}
	}
	if pred == nil {
		if n.Map != nil {
			return b.fail("fused map without a predicate")
		}
		var out size
		for _, a := range n.Arguments {
			out = join(out, b.visit(a, l))
		}
		switch {
		case sizeOne[n.Name]:
			return constSize(1)
		case n.Name == "type":
			return constSize(b.textSize(len("unknown"))) // the longest name it gives a value a rule can hold
		case sizeOfArgs[n.Name]:
			return out
		}
		return b.fail("builtin " + n.Name)
	}
	result, ok := loopResults[n.Name]
	if !ok {
		return b.fail("builtin " + n.Name + " with a predicate")
	}
	list := b.visit(n.Arguments[0], l)
	for _, a := range n.Arguments[2:] { // sortBy's order
		b.visit(a, l)
	}
	// A string is iterated byte by byte: with the charges' measure, up to
	// 16 passes per unit of its size. A value typed as a list is not one.
	factor := 1.0
	if t := n.Arguments[0].Type(); b.measure == chargeUnits &&
		(t == nil || t.Kind() != reflect.Slice && t.Kind() != reflect.Array) {
		factor = 16
	}
	passes := b.summed(list, l).scale(factor)
	inner := &loop{runs: passes, items: passes, itemMax: b.perRun(list).scale(factor)}
	if lit, ok := n.Arguments[0].(*ast.ArrayNode); ok {
		// A list literal, such as the validate wrapper's [item]: exactly
		// its elements, once each per run.
		inner = b.literalLoop(lit, l)
	}
	body := b.visit(pred.Node, inner)
	if n.Map != nil { // filter fused with the map that followed it
		result = "map"
		body = b.visit(n.Map, inner)
	}
	if b.failed {
		return bottom
	}
	switch result {
	case "one":
		return constSize(1)
	case "item", "list":
		// A part of the list, or a list of its items (of its bytes for a
		// string, each of size one).
		return list.scale(factor)
	}
	// map: one value per pass, so per run of the builtin the result is
	// at most the list's size (passes) times a value of the body, where the
	// body's own items add up to the list.
	per := body.whole
	if body.item != nil && body.item != inner {
		per = b.perRun(body) // a part of an outer item: bounded by its largest
	}
	own := 0.0
	if body.item == inner {
		own = body.k
	}
	if per.s == 0 {
		return plus(constSize(1), list.scale(factor*(per.c+own)))
	}
	most := b.perRun(list.scale(factor))
	if most.s > 0 {
		return b.fail("map of a value that grows with the input over the input")
	}
	return size{whole: per.scale(most.c).add(form{c: most.c*own + 1})}
}

// literalLoop is the loop over the elements of lit, lit running directly
// in l (its elements were visited with it).
func (b *costBound) literalLoop(lit *ast.ArrayNode, l *loop) *loop {
	inner := &loop{runs: l.runs.scale(float64(len(lit.Nodes)))}
	total := b.total
	for _, x := range lit.Nodes {
		e := b.visit(x, l)
		inner.items = inner.items.add(b.summed(e, l))
		inner.itemMax = inner.itemMax.max(b.perRun(e))
	}
	b.total = total // their charges were counted when the list was visited
	return inner
}

// withinBound reports whether the charges of a run on st's input stay
// within maxEvalCost by one of the bounds: it measures S both ways, and
// stops as soon as S is too large for both. It also refuses values other
// than those DecodeJSON and Normalize return, for which the bounds do not
// hold: chargeSize counts a typed container without its contents.
func (st *applyState) withinBound(bounds *[2]form) bool {
	z := sizer{units: sizeLimit(bounds[chargeUnits]), bytes: sizeLimit(bounds[textBytes])}
	if z.units < 0 && z.bytes < 0 {
		return false
	}
	st.sizeInput(&z)
	return !z.wrong && (z.units >= 0 || z.bytes >= 0)
}

// sizeInput subtracts S, what a rule can read, from z.
func (st *applyState) sizeInput(z *sizer) {
	z.add(st.env.Response, 0)
	z.add(st.env.Headers, 0)
	z.add(st.env.Request, 0)
	z.add(st.env.Probe, 0)
	z.add(st.env.Status, 0)
	// Only an MCP probe has them: an HTTP input measures as it always has.
	if st.env.Result != nil {
		z.add(st.env.Result, 0)
	}
	if st.env.Tool != nil {
		z.add(st.env.Tool, 0)
	}
	// Only a step of a multi-step probe has them.
	if st.env.Vars != nil {
		z.add(st.env.Vars, 0)
	}
}

// sizeLimit is the largest S for which f stays within maxEvalCost, or -1.
func sizeLimit(f form) int {
	switch {
	case f.c > maxEvalCost:
		return -1
	case f.s == 0:
		return math.MaxInt
	}
	return int(math.Min((maxEvalCost-f.c)/f.s, 1<<50))
}

// sizer subtracts the sizes of values from what is left of both limits.
type sizer struct {
	units, bytes int  // left of each limit; negative once exceeded
	wrong        bool // a value of another type, or nested too deep
}

// maxSizedDepth bounds the recursion; DecodeJSON's values nest at most
// maxJSONDepth deep, and deeper hand-built values take the charged path.
const maxSizedDepth = 2 * maxJSONDepth

func (z *sizer) add(v any, depth int) {
	z.units--
	z.bytes--
	switch t := v.(type) {
	case nil, bool, int, float64:
	case string:
		z.units -= len(t) / 16
		z.bytes -= len(t)
	case map[string]any:
		if depth > maxSizedDepth {
			z.wrong = true
			return
		}
		for k, x := range t {
			z.units -= len(k) / 16
			z.bytes -= len(k)
			if z.add(x, depth+1); z.wrong || z.units < 0 && z.bytes < 0 {
				return
			}
		}
	case []any:
		if depth > maxSizedDepth {
			z.wrong = true
			return
		}
		for _, x := range t {
			if z.add(x, depth+1); z.wrong || z.units < 0 && z.bytes < 0 {
				return
			}
		}
	default:
		z.wrong = true
	}
}
