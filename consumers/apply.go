package consumers

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/toolpulse/toolpulse/results"
)

// Input is what a rule sees of one exchange (SPEC §4). Response holds JSON
// values as DecodeJSON returns them: maps, lists, strings, bools, nil, int
// for integral numbers and float64 for the rest. Request.JSON must hold the
// same kind of values (pass a YAML fixture through Normalize once, at load).
type Input struct {
	Response any
	Status   int
	Headers  map[string]string // names are lower-cased before a rule sees them
	Request  Request
	Probe    string
	// Result and Tool are an MCP probe's (SPEC §10): the whole
	// CallToolResult and the tool's tools/list entry, as rule values
	// (DecodeJSON or Normalize); nil for an HTTP probe. Response is then
	// what the rule sees of the result.
	Result map[string]any
	Tool   map[string]any
	// Vars are the captures of the earlier steps of a multi-step probe
	// (SPEC §11), as rule values; nil outside one.
	Vars map[string]any
}

// Request is the probe's fixture as a rule sees it.
type Request struct {
	JSON  any
	Query map[string]string
}

// Verdict is what a consumer made of one response. Err is nil exactly when
// the response passed; otherwise its code is a contract_error code. Selected
// and Validated count what the rules got through before any failure, so an
// empty selection (0, 0, empty_selection) never looks like a rule that could
// not run (0, 0, rule_error).
type Verdict struct {
	Selected  int
	Validated int
	Err       *results.Error
}

// maxMessageBytes bounds a verdict's message: it is stored, shown in the CLI
// and sent to Slack, and a rule can build a string as large as the body.
const maxMessageBytes = 512

// Apply runs the consumer on in and requires at least minResults selected
// and validated items. It never panics on hostile input: every failure of
// the rules becomes a typed contract error, and a panic in toolpulse's own
// code becomes internal_error rather than taking the runner down.
func (c *Consumer) Apply(in Input, minResults int) Verdict {
	v, _ := c.apply(in, minResults, chargesIfNeeded)
	return v
}

// chargeMode says whether apply runs the charged programs.
type chargeMode int

const (
	chargesIfNeeded chargeMode = iota // the programs without charges when fastCost allows
	alwaysCharge                      // what Apply did before cost.go, for tests
	neverCharge                       // for tests that compare the two; ignores the budget
)

// apply is Apply; it also returns what the charges spent (0 when they did
// not run).
func (c *Consumer) apply(in Input, minResults int, mode chargeMode) (v Verdict, spent int) {
	defer func() {
		if p := recover(); p != nil {
			v.Err = results.NewError(results.CodeInternalError,
				"consumer panicked: %s", results.ClipBytes(fmt.Sprint(p), maxMessageBytes))
		}
	}()
	if c == nil || c.selectRun == nil {
		// A Consumer not made by Compile; failing loudly beats a nil
		// dereference inside expr.
		return Verdict{Err: results.NewError(results.CodeInternalError, "consumer is not compiled")}, 0
	}
	st := applyStates.Get().(*applyState)
	st.fill(in)
	selectProg, validateProg, validateMemory := c.selectRun, c.validateRun, uint(maxEvalMemory)
	switch {
	case mode == neverCharge && c.selectFast != nil,
		mode == chargesIfNeeded && c.selectFast != nil && st.withinBound(&c.fastCost):
		selectProg, validateProg, validateMemory = c.selectFast, c.validateFast, c.validateFastMemory
	}
	v = c.judge(st, selectProg, validateProg, validateMemory, minResults)
	spent = st.budget.spent
	st.release()
	return v, spent
}

// judge runs the select program, then the validate program on each item.
func (c *Consumer) judge(st *applyState, selectProg, validateProg *vm.Program, validateMemory uint, minResults int) (v Verdict) {
	st.machine.MemoryBudget = maxEvalMemory
	out, err := st.machine.Run(selectProg, &st.env)
	if err != nil {
		return Verdict{Err: runError("select", c.Select, err, 0)}
	}
	items, ok := asList(out)
	if !ok {
		return Verdict{Err: results.NewError(results.CodeSelectionNotList,
			"select returned %s, want a list", typeName(out))}
	}
	v.Selected = len(items)

	st.machine.MemoryBudget = validateMemory
	for i, item := range items {
		valid, err := c.validateItem(st, validateProg, item)
		if err != nil {
			if err.Code == results.CodeRuleError {
				// The author's own fail() message is kept verbatim;
				// a run-time error needs the item to be traced.
				err.Message = results.ClipBytes(fmt.Sprintf("item %d: %s", i, err.Message), maxMessageBytes)
			}
			v.Err = err
			return v
		}
		if !valid {
			if why := c.explainInvalid(st); why != "" {
				v.Err = results.NewError(results.CodeInvalidItem,
					"item %d failed validate: %s (item %s)", i, results.Shorten(why, maxMessageBytes/2), preview(item))
			} else {
				v.Err = results.NewError(results.CodeInvalidItem,
					"item %d failed validate: %s", i, preview(item))
			}
			return v
		}
		v.Validated++
	}

	switch {
	case minResults <= 0:
	case v.Validated == 0:
		// An invalid item ends the run as invalid_item, so nothing
		// validated means select returned an empty list.
		v.Err = c.emptySelection(st.env.Response, minResults)
	case v.Validated < minResults:
		v.Err = results.NewError(results.CodeTooFewResults,
			"%d validated items; at least %d expected", v.Validated, minResults)
	}
	return v
}

// emptySelection is the empty_selection error. An empty selection alone
// does not say whether the provider answered nothing or the rule filtered
// everything out, so the message adds how many items the answer's lists
// held where the rules read (at most two of them, found through objects
// only): "select returned no items, though the answer's results had 12;
// at least 1 expected", or "select returned no items: the answer's
// results had 0; ...". A rule whose reads are unknown, or an answer
// without a list where it reads, gets the bare sentence.
func (c *Consumer) emptySelection(response any, minResults int) *results.Error {
	lists := answerLists(response, c.ReadFields(), "", 0, nil)
	if len(lists) == 0 {
		return results.NewError(results.CodeEmptySelection, "select returned no items; at least %d expected", minResults)
	}
	parts := make([]string, len(lists))
	some := false
	for i, l := range lists {
		some = some || l.n > 0
		switch {
		case l.path == "" && l.n == 1:
			parts[i] = "the answer had 1 item"
		case l.path == "":
			parts[i] = fmt.Sprintf("the answer had %d items", l.n)
		default:
			parts[i] = fmt.Sprintf("the answer's %s had %d", l.path, l.n)
		}
	}
	sep := ": "
	if some {
		sep = ", though "
	}
	return results.NewError(results.CodeEmptySelection, "select returned no items%s%s; at least %d expected",
		sep, strings.Join(parts, " and "), minResults)
}

// listAt is a list in an answer and how many items it held.
type listAt struct {
	path string // "results.items"; "" for the answer itself
	n    int
}

// maxListsShown and maxListDepth bound what emptySelection looks for.
const (
	maxListsShown = 2
	maxListDepth  = 3
)

// answerLists appends to out the lists in v at paths made of the member
// names the rules read, in name order, v itself first when it is one.
func answerLists(v any, reads FieldSet, path string, depth int, out []listAt) []listAt {
	if len(out) >= maxListsShown {
		return out
	}
	switch v := v.(type) {
	case []any:
		return append(out, listAt{path: path, n: len(v)})
	case map[string]any:
		if !reads.Known || depth >= maxListDepth {
			return out
		}
		for _, name := range slices.Sorted(maps.Keys(reads.Names)) {
			child, ok := v[name]
			if !ok {
				continue
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			out = answerLists(child, reads, p, depth+1, out)
		}
	}
	return out
}

// validateItem runs the validate rule on one item; a nil error with false
// means the item was judged invalid.
func (c *Consumer) validateItem(st *applyState, prog *vm.Program, item any) (bool, *results.Error) {
	if prog == nil {
		return true, nil
	}
	st.env.Item = item
	out, err := st.machine.Run(prog, &st.env)
	if err != nil {
		return false, runError("validate", c.Validate, err, len([]rune(validatePrefix)))
	}
	// The wrapper maps a one-item list, so anything else means the rule
	// text broke out of it.
	list, ok := out.([]any)
	if !ok || len(list) != 1 {
		return false, results.NewError(results.CodeRuleError, "validate produced %s, want a bool", typeName(out))
	}
	valid, ok := list[0].(bool)
	if !ok {
		return false, results.NewError(results.CodeRuleError,
			"validate returned %s, want a bool", typeName(list[0]))
	}
	return valid, nil
}

// asList accepts every list a rule can build: []any from JSON and most
// builtins, and typed slices such as split()'s []string.
func asList(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	l := make([]any, rv.Len())
	for i := range l {
		l[i] = rv.Index(i).Interface()
	}
	return l, true
}

// applyState is what one Apply works with: the VM, the rule environment
// and the budget. States are pooled: building them anew took five maps, a
// closure and the VM's stack and scopes per Apply. Nothing of an Apply's
// values is used after it returns (a Verdict holds only text); release
// drops the references it can reach, and the VM's own scope pool keeps the
// last run's lists only until the state is reused or collected.
type applyState struct {
	machine vm.VM // not safe to share: one Apply at a time
	env     ruleEnv
	budget  evalBudget
	// headers, query and request are env's maps, kept for their storage.
	headers, query, request map[string]any
}

var applyStates = sync.Pool{New: func() any {
	st := &applyState{headers: map[string]any{}, query: map[string]any{}, request: map[string]any{}}
	st.env.Charge = st.budget.charge // one closure for the state's life
	st.env.Fetch = fetch
	st.env.Matches, st.env.Repeat, st.env.Replace = st.budget.matches, st.budget.repeat, st.budget.replace
	return st
}}

func (st *applyState) fill(in Input) {
	for k, v := range in.Headers {
		st.headers[strings.ToLower(k)] = v
	}
	for k, v := range in.Request.Query {
		st.query[k] = v
	}
	st.request["json"] = in.Request.JSON
	st.request["query"] = st.query
	st.env.Response, st.env.Status, st.env.Probe = in.Response, in.Status, in.Probe
	st.env.Headers, st.env.Request = st.headers, st.request
	st.env.Result, st.env.Tool, st.env.Vars = in.Result, in.Tool, in.Vars
	st.env.Item = nil
	st.budget = evalBudget{limit: maxEvalCost}
}

// release drops every reference to the Apply's values and pools st.
func (st *applyState) release() {
	clear(st.headers)
	clear(st.query)
	clear(st.request)
	st.env.Response, st.env.Item, st.env.Probe = nil, nil, ""
	st.env.Result, st.env.Tool, st.env.Vars = nil, nil, nil
	clear(st.machine.Stack[:cap(st.machine.Stack)])
	clear(st.machine.Variables)
	applyStates.Put(st)
}

// runError maps a run-time failure of a rule to its contract code: the
// rule's own fail(code, message), or rule_error with the position inside
// the rule.
func runError(rule, text string, err error, prefixRunes int) *results.Error {
	var fail *failError
	if errors.As(err, &fail) {
		if !results.ValidCustomCode(fail.code) {
			return results.NewError(results.CodeRuleError, "%s rule: %s: %s",
				rule, invalidCodeMessage(fail.code), results.ClipBytes(fail.message, maxMessageBytes))
		}
		return &results.Error{Code: results.Code(fail.code), Message: results.ClipBytes(fail.message, maxMessageBytes)}
	}
	var fe *file.Error
	if errors.As(err, &fe) {
		re := ruleError(rule, text, err, prefixRunes)
		return results.NewError(results.CodeRuleError, "%s rule %d:%d: %s",
			rule, re.Line, re.Column, results.ClipBytes(explain(re.Message), maxMessageBytes))
	}
	return results.NewError(results.CodeRuleError, "%s rule: %s", rule, results.ClipBytes(err.Error(), maxMessageBytes))
}

// explain rewrites the expr run-time messages that only make sense to
// someone who knows expr's internals; the original stays in parentheses so
// that it can still be searched for.
func explain(msg string) string {
	switch {
	case msg == "invalid operation: int(string)":
		return "cannot read a field of a list or a string (" + msg + ")"
	case strings.HasPrefix(msg, "reflect: call of reflect.Value.Index on map"),
		strings.HasPrefix(msg, "reflect: call of reflect.Value.Len on map"):
		return "cannot iterate over a map, want a list (" + msg + ")"
	case strings.HasPrefix(msg, "memory budget exceeded"):
		return fmt.Sprintf("%s: the rule built more than %d values (%s)", budgetExceeded, maxEvalMemory, msg)
	}
	return msg
}

// typeName names a rule value's type the way expr's type() does.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "bool"
	case int, int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "map"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map:
		return "map"
	}
	return fmt.Sprintf("%T", v)
}

// previewBytes bounds how much of an item a message quotes.
const previewBytes = 120

// preview quotes the start of v in JSON-like text for a message. It stops
// after previewBytes and a few levels, so a huge or deep item costs no more
// than a small one.
func preview(v any) string {
	var b strings.Builder
	writePreview(&b, v, 0)
	return results.ClipBytes(b.String(), previewBytes)
}

const previewDepth = 4

func writePreview(b *strings.Builder, v any, depth int) {
	if b.Len() > previewBytes {
		return
	}
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case int:
		b.WriteString(strconv.Itoa(t))
	case float64:
		b.WriteString(strconv.FormatFloat(t, 'g', -1, 64))
	case string:
		b.WriteString(strconv.Quote(results.ClipBytes(t, previewBytes)))
	case []any:
		if depth >= previewDepth {
			b.WriteString("[…]")
			return
		}
		b.WriteByte('[')
		for i, x := range t {
			if b.Len() > previewBytes {
				break
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writePreview(b, x, depth+1)
		}
		b.WriteByte(']')
	case map[string]any:
		if depth >= previewDepth {
			b.WriteString("{…}")
			return
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if b.Len() > previewBytes {
				break
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(results.ClipBytes(k, previewBytes)))
			b.WriteByte(':')
			writePreview(b, t[k], depth+1)
		}
		b.WriteByte('}')
	default:
		b.WriteString(results.ClipBytes(fmt.Sprintf("%v", t), previewBytes))
	}
}
