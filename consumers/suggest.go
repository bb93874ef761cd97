package consumers

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/parser"
)

// Suggest returns the known word closest to a misspelt one, or "" when none
// is close: the "did you mean" of config keys, probe names, rule names and
// consumer files. Close is at most two edits (an insertion, a deletion, a
// substitution or two neighbours swapped) and fewer than half the word, so
// that a short name such as id is not "corrected" into an unrelated one.
// Of equally close words the first in known wins.
func Suggest(word string, known []string) string {
	best, bestDist := "", min(3, (len(word)+1)/2)
	for _, k := range known {
		if dist := editDistance(word, k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	return best
}

// editDistance is the optimal string alignment distance: Levenshtein's
// edits plus the swap of two neighbouring bytes, the commonest typo.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1) // the row before prev
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// otherLanguages maps names a rule author brings from jq or JavaScript to
// expr's own, so that length(...) and its typos point at len.
var otherLanguages = map[string]string{"length": "len"}

// ruleVars are the names a rule may read as values: the env's fields (SPEC
// §4 and §10), toolpulse's internal names left out.
var ruleVars = func() []string {
	var names []string
	t := reflect.TypeFor[ruleEnv]()
	for i := range t.NumField() {
		if n := t.Field(i).Tag.Get("expr"); n != "" && !strings.HasPrefix(n, "__") {
			names = append(names, n)
		}
	}
	return names
}()

// hintUnknownName adds the closest known name to expr's "unknown name X".
// A name called as a function is compared with fail, expr's builtins and
// the names other languages use for them; any other with the env and the
// rule's own let variables, so that a placeholder such as nope is not
// taken for the builtin none.
func hintUnknownName(msg, source string) string {
	name, ok := strings.CutPrefix(msg, "unknown name ")
	if !ok || strings.ContainsAny(name, " \n") {
		return msg
	}
	lets, called := readRule(source, name)
	var known []string
	if called {
		known = append([]string{"fail"}, builtin.Names...)
		for other := range otherLanguages {
			known = append(known, other)
		}
	} else {
		known = append(slices.Clone(ruleVars), lets...)
	}
	s := Suggest(name, known)
	if to, ok := otherLanguages[s]; ok {
		s = to
	}
	if s == "" || s == name {
		return msg
	}
	return fmt.Sprintf("%s (did you mean %s?)", msg, s)
}

// readRule returns the variables source declares with let and whether it
// calls name as a function.
func readRule(source, name string) (lets []string, called bool) {
	tree, err := parser.Parse(source)
	if err != nil {
		return nil, false
	}
	v := ruleReader{name: name}
	ast.Walk(&tree.Node, &v)
	return v.lets, v.called
}

type ruleReader struct {
	name   string
	lets   []string
	called bool
}

func (v *ruleReader) Visit(n *ast.Node) {
	switch m := (*n).(type) {
	case *ast.VariableDeclaratorNode:
		v.lets = append(v.lets, m.Name)
	case *ast.CallNode:
		if id, ok := m.Callee.(*ast.IdentifierNode); ok && id.Value == v.name {
			v.called = true
		}
	}
}
