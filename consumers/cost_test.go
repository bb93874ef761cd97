package consumers

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

// unboundedRules must keep their charges on every input: each can spend
// more than the budget on a body a probe accepts. If costBound found a
// bound for one of them, a runaway rule would run without its charges.
var unboundedRules = []Source{
	// A loop over the input inside a loop over the input.
	{Select: `filter(response.items, any(response.items, # == 1))`},
	{Select: `filter(response.items, all(response.items, true))`},
	{Select: `filter(response.items, none(response.items, # > 5))`},
	{Select: `filter(response.items, one(response.items, # == 1))`},
	{Select: `filter(response.items, count(response.items, true) > 0)`},
	{Select: `filter(response.items, find(response.items, # == 1) != nil)`},
	{Select: `filter(response.items, findLastIndex(response.items, # == 1) > 0)`},
	{Select: `filter(response.items, sum(response.items, #) > 0)`},
	{Select: `map(response.items, filter(response.items, true))`},
	{Select: `map(response.items, map(response.items, #))`},
	{Select: `sortBy(response.items, count(response.items, true))`},
	{Select: `response.items | filter(# > 0) | map(len(filter(response.items, true)))`},
	// reduce's accumulator and groupBy's groups are not bounded by the
	// items they are built from.
	{Select: `[reduce(response.items, #acc + 1, 0)]`},
	{Select: `[reduce(response.items, #acc + toJSON(response), "")]`},
	{Select: `[groupBy(response.items, #)]`},
	{Select: `values(groupBy(response.items, #))`},
	// The whole input inside a loop over it.
	{Select: `filter(response.items, response == response)`},
	{Select: `filter(response.items, -1 in response.items)`},
	{Select: `filter(response.items, len(response.items) > 0)`},
	{Select: `filter(response.items, type(response) == "map")`},
	{Select: `filter(response.items, response.s + "x" != "")`},
	{Select: `filter(response.items, len(toJSON(response)) > 0)`},
	{Select: `filter(response.items, $env.response != nil)`},
	{Select: `filter(response.items, headers["a"] == "b" && request.json == nil)`},
	// A list bound once and iterated twice, or a value of an outer loop
	// inside an inner loop.
	{Select: `let l = response.items; filter(l, any(l, # == 1))`},
	{Select: `let l = response.items; map(l, len(l))`},
	{Select: `let s = response.s; filter(response.items, s + "x" != "")`},
	{Select: `let l = response.items; let m = l; filter(l, m[0] == #)`},
	{Select: `filter(response.items, let x = #; any(response.items, # == x))`},
	{Select: `filter(response.items, (response.items ?? [])[0] == #)`},
	{Select: `map(response.items, response.items | filter(# > 0))`},
	// Builtins that build more than they are given, or whose result is
	// iterated in a way the bound does not follow.
	{Select: `[repeat(response.s, 100)]`},
	{Select: `split(response.s, "")`},
	{Select: `[toJSON(response)]`},
	{Select: `[string(response)]`},
	{Select: `[upper(response.s)]`},
	{Select: `concat(response.items, response.items)`},
	{Select: `flatten(response.items)`},
	{Select: `keys(response)`},
	{Select: `[join(response.items, ",")]`},
	{Select: `[replace(response.s, "a", response.s)]`},
	// String concatenation in a loop: of the whole input, or growing by
	// repeat.
	{Select: `map(response.items, response.s + response.s)`},
	{Select: `map(1..1000, repeat("x", 1000))`},
	// A range as long as the memory budget, looped with a large body.
	{Select: `map(1..900000, # + 1 + 2 + 3 + 4 + 5 + 6)`},
	// The validate rule runs once per item: the input in it is a loop.
	{Select: `response.items`, Validate: `all(response.items, # >= 0)`},
	{Select: `response.items`, Validate: `# in response.items`},
	{Select: `response.items`, Validate: `len(response.items) > 0`},
	{Select: `response.items`, Validate: `response == response`},
	{Select: `response.items`, Validate: `# != toJSON(response)`},
	// The selection's items each hold the whole input.
	{Select: `map(response.items, response)`, Validate: `#.s != ""`},
}

// boundedRules have a bound: each looks at each part of the input a fixed
// number of times. TestCostBoundHolds checks the bound against what the
// charges spend on costBodies.
var boundedRules = []Source{
	{Select: selectResults, Validate: validateResults},
	{Select: `response.results | filter(.score >= 0.75) | sortBy(.score, "desc")`, Validate: `type(.id) == "string"`},
	{Select: `map(response.results, .id)`},
	{Select: `map(response.results, # + #)`},
	{Select: `map(response.results, ({"id": .id, "t": .title, "n": #index}))`},
	{Select: `let l = response.results; filter(l, .score > 0.8) | map(.id)`},
	{Select: `[find(response.results, .id == "doc_701"), findLast(response.results, .score > 0.9)]`},
	{Select: `[count(response.results, .score > 0.8), findIndex(response.results, .score > 0.8)]`},
	{Select: `response.results[0:3]`},
	{Select: `[response.results[0].title + response.results[1].title]`},
	{Select: `[response.next_cursor ?? "none", response.missing ?? response.next_cursor]`},
	{Select: `map(1..5, # * 2)`},
	{Select: `map([1, 2, 3], #index)`},
	{Select: `map(1..response.n, #)`},
	{Select: `let a = response.s + response.s; let b = a + a; let c = b + b; [len(c + c)]`},
	{Select: `filter(response.results, .id matches "^doc_7" && .title contains "part 1" && .url startsWith "https")`},
	{Select: `[first(response.results), last(response.results), get(response, "s")]`},
	{Select: `filter(response.s, true)`},
	{Select: `map(response.s, #)`, Validate: `# >= 0`},
	{Select: `filter(response.items, all(.tags, # != ""))`, Validate: `all(.tags, type(#) == "string")`},
	{Select: `response.items`, Validate: `#index == 0 && (.id ?? "") != "z" && any(.tags ?? [""], # == .tags[0])`},
	{Select: `response.items`, Validate: `.id + .id != ""`},
	{Select: `response.items`, Validate: `let t = .tags; count(t, # != "") <= len(t)`},
	{Select: `response.results`, Validate: `len(.title) > 3 && type(.score) in ["int", "float"] && .id in ["doc_700", "doc_701"]`},
	// expr's optimizer makes `x in [strings]` a map lookup that fails on a
	// number x; the charged rule, whose list is charged, answers false.
	{Select: `filter(response.results, .id in ["doc_700", "doc_701"])`},
	{Select: `[status, probe, headers["content-type"], request.query.lang, request.json?.limit]`},
	{Select: `type(response) == "map" ? [response] : []`, Validate: `.s == nil || trim(.s) != ""`},
	{Select: `[len(1..3000000)]`}, // over the memory budget, either way
	// The validate wrapper's two lists count against the memory budget;
	// the programs without charges drop one (unwrapValidate).
	{Select: `[1, 2]`, Validate: `len(1..999997) > 0`},
	{Select: `[1]`, Validate: `len(1..999998) > 0`},
	{Select: `[1]`, Validate: `len(1..999999) > 0`},
	{Select: `[response.items[-1]]`},
	{Select: `[response.items[99]]`},
	{Select: `[response.results[0].id, response.results?.x, response?.results?.y]`},
	{Select: `response.items`, Validate: `any(1..1000, # > 0) && any(1..1000, # > 0)`},
	{Select: `response.results | filter(.score >= 0.75 && .url startsWith "https://" && len(.title) > 10) | sortBy(.score, "desc")`,
		Validate: `type(.id) == "string" && .score > 0 && all([.id, .title, .url], len(#) > 0)`},
}

// costBodies are the inputs both tables run on.
var costBodies = []string{
	string(searchBody(3)),
	string(searchBody(40)),
	`{"items":[{"id":"a","tags":["x","y",""]},{"id":"b","tags":[]},{"id":"c","tags":["` + strings.Repeat("z", 300) + `"]}],"s":"abc","n":3}`,
	`{"items":[1,2,3,"4",null,{"a":[1,[2,[3]]]}],"s":"` + strings.Repeat("long text ", 200) + `","n":100}`,
	`{"results":"` + strings.Repeat("doc ", 500) + `","items":"` + strings.Repeat("é", 100) + `","s":7}`,
	`{"results":{"items":[{"id":"doc_1","score":0.9,"title":"a title","url":"https://x"}]},"n":-5}`,
	`{"results":[{"id":7,"score":"0.9"}],"items":[[]],"s":null}`,
	`[]`, `null`, `"` + strings.Repeat("x", 5000) + `"`,
}

func costInput(t testing.TB, body string) Input {
	return Input{Response: mustDecode(t, body), Status: 200,
		Headers: map[string]string{"Content-Type": "application/json", "X-Request-Id": "r-1"},
		Request: Request{JSON: map[string]any{"limit": 5, "q": "guide"}, Query: map[string]string{"lang": "en"}},
		Probe:   "external_search"}
}

// inputSize is S of in, by both measures.
func inputSize(in Input) (units, bytes int) {
	st := applyStates.Get().(*applyState)
	defer st.release()
	st.fill(in)
	z := sizer{units: math.MaxInt, bytes: math.MaxInt}
	st.sizeInput(&z)
	return math.MaxInt - z.units, math.MaxInt - z.bytes
}

func TestCostBoundRefuses(t *testing.T) {
	for _, src := range unboundedRules {
		t.Run(src.Select+" / "+src.Validate, func(t *testing.T) {
			c := mustCompile(t, src)
			if c.selectFast != nil || c.validateFast != nil {
				t.Errorf("bound %+v found: this rule would run without its charges", c.fastCost)
			}
			if c.unbounded == "" {
				t.Errorf("no reason given for the missing bound")
			}
			t.Logf("unbounded: %s", c.unbounded)
		})
	}
}

// TestCostBoundHolds runs each bounded rule with its charges and checks
// that they spent no more than the bound allows, by each measure, and that
// the rule without its charges gives the same verdict.
func TestCostBoundHolds(t *testing.T) {
	for _, src := range boundedRules {
		t.Run(src.Select+" / "+src.Validate, func(t *testing.T) {
			c := mustCompile(t, src)
			if c.selectFast == nil || (src.Validate != "") != (c.validateFast != nil) {
				t.Fatalf("no bound: %s", c.unbounded)
			}
			for _, body := range costBodies {
				checkFastMatchesCharged(t, c, costInput(t, body))
			}
		})
	}
}

// checkFastMatchesCharged is the contract of the programs without charges:
// wherever the bound lets Apply use them, the charges could not have run
// out, and the verdict is the one the charged programs give.
func checkFastMatchesCharged(t *testing.T, c *Consumer, in Input) {
	t.Helper()
	charged, spent := c.apply(in, 1, alwaysCharge)
	units, bytes := inputSize(in)
	for m, s := range map[measure]int{chargeUnits: units, textBytes: bytes} {
		if bound := c.fastCost[m].at(float64(s)); float64(spent) > bound {
			t.Errorf("%.80v: the charges spent %d, over the bound %+v at S=%d (measure %d): %.0f",
				in.Response, spent, c.fastCost[m], s, m, bound)
		}
	}
	if charged.Err != nil && strings.Contains(charged.Err.Message, budgetExceeded+": the rules spent") {
		return // the fast programs ignore the budget; Apply would not run them
	}
	fast, fastSpent := c.apply(in, 1, neverCharge)
	if fastSpent != 0 {
		t.Errorf("the program without charges spent %d", fastSpent)
	}
	if got, want := verdictText(fast), verdictText(charged); got != want {
		t.Errorf("%.80v:\nwithout charges: %s\nwith charges:    %s", in.Response, got, want)
	}
	if got, want := verdictText(c.Apply(in, 1)), verdictText(charged); got != want {
		t.Errorf("%.80v:\nApply:        %s\nwith charges: %s", in.Response, got, want)
	}
}

func verdictText(v Verdict) string {
	if v.Err == nil {
		return fmt.Sprintf("pass %d/%d", v.Validated, v.Selected)
	}
	return fmt.Sprintf("%d/%d %s: %s", v.Validated, v.Selected, v.Err.Code, v.Err.Message)
}

// TestApplyUsesChargesPastTheBound: a rule with a bound still fails with
// the budget error when the input is too large for it, as every rule did
// before the bound existed.
func TestApplyUsesChargesPastTheBound(t *testing.T) {
	pred := strings.Repeat("# >= 0 && ", 100) + "true"
	c := mustCompile(t, Source{Select: `filter(response.items, ` + pred + `)`})
	if c.selectFast == nil {
		t.Fatalf("no bound: %s", c.unbounded)
	}
	small := Input{Response: itemsBody(t, 100)}
	if v := c.Apply(small, 1); v.Err != nil || v.Validated != 100 {
		t.Fatalf("100 items: %+v, want a pass", v)
	}
	st := applyStates.Get().(*applyState)
	st.fill(small)
	if !st.withinBound(&c.fastCost) {
		t.Errorf("100 items are not within the bound %+v", c.fastCost)
	}
	st.release()

	large := Input{Response: itemsBody(t, 50_000)} // ≈ 400 units per item: 20M
	st = applyStates.Get().(*applyState)
	st.fill(large)
	if st.withinBound(&c.fastCost) {
		t.Errorf("50,000 items are within the bound %+v", c.fastCost)
	}
	st.release()
	v, took := applyBounded(t, c, large)
	t.Logf("stopped after %v: %v", took, v.Err)
	if v.Err == nil || v.Err.Code != results.CodeRuleError || !strings.Contains(v.Err.Message, budgetExceeded) {
		t.Errorf("Apply = %+v, want rule_error %q", v, budgetExceeded)
	}
}

// TestApplyRefusesValuesTheBoundDoesNotKnow: a response of Go types that
// DecodeJSON never returns takes the charged programs.
func TestApplyRefusesValuesTheBoundDoesNotKnow(t *testing.T) {
	c := mustCompile(t, Source{Select: `response.results`})
	for name, resp := range map[string]any{
		"typed list":  map[string]any{"results": []string{"a"}},
		"typed map":   map[string]any{"results": map[string]string{"a": "b"}},
		"struct":      struct{ Results []int }{[]int{1}},
		"uint":        map[string]any{"results": []any{uint(1)}},
		"deep":        deepList(3 * maxJSONDepth),
		"json number": map[string]any{"results": []any{fmt.Stringer(nil)}},
	} {
		st := applyStates.Get().(*applyState)
		st.fill(Input{Response: resp})
		if name != "json number" && st.withinBound(&c.fastCost) {
			t.Errorf("%s: within the bound", name)
		}
		st.release()
	}
}

func deepList(n int) any {
	var v any = 1
	for range n {
		v = []any{v}
	}
	return v
}

// TestChargeNameIsReserved: a rule cannot call the budget's charge itself,
// which could give budget back, nor reach it through $env.
func TestChargeNameIsReserved(t *testing.T) {
	for _, tc := range []struct{ select_, validate string }{
		{select_: `filter(response.items, __toolpulse_charge(-100000, true))`},
		{select_: `[__toolpulse_charge]`},
		{select_: `[$env.__toolpulse_charge(1, 2)]`},
		{select_: `[$env["__toolpulse_charge"]]`},
		{select_: `[__toolpulse_fetch(response, "a")]`},
		{select_: `[__toolpulse_matches("a", "a")]`},
		{select_: `[__toolpulse_repeat("a", 2)]`},
		{select_: `[$env.__toolpulse_replace("a", "a", "b", -1)]`},
		// The optimizer moves this map's body into the filter.
		{select_: `map(filter(response.items, true), __toolpulse_charge(-100000, #))`},
		{select_: `response.items`, validate: "true &&\n  __toolpulse_charge(0, #)"},
	} {
		_, errs := Compile(Source{Select: tc.select_, Validate: tc.validate})
		if len(errs) != 1 || !strings.Contains(errs[0].Message, "unknown name __toolpulse_") {
			t.Errorf("Compile(%q, %q) = %v, want unknown name __toolpulse_...", tc.select_, tc.validate, errs)
		}
	}
	_, errs := Compile(Source{Select: `response.items`, Validate: "true &&\n  __toolpulse_charge(0, #)"})
	if len(errs) == 1 && (errs[0].Line != 2 || errs[0].Column != 3) {
		t.Errorf("error at %d:%d, want 2:3 in the rule's text", errs[0].Line, errs[0].Column)
	}
	b := evalBudget{limit: 10}
	b.charge(-1000, nil)
	if b.spent != 1 {
		t.Errorf("a charge of -1000 units left %d spent, want 1 (the value)", b.spent)
	}
}

// TestMemoryBudgetWithoutCharges: the programs without charges run under
// expr's memory budget as the charged ones do, to the same element, the
// validate rule's included (unwrapValidate drops one of its lists).
func TestMemoryBudgetWithoutCharges(t *testing.T) {
	for _, tc := range []struct {
		src  Source
		fail bool
	}{
		{Source{Select: `[len(1..999998)]`}, false},
		{Source{Select: `[len(1..999999)]`}, true},
		{Source{Select: `[1]`, Validate: `len(1..999997) > 0`}, false},
		{Source{Select: `[1]`, Validate: `len(1..999998) > 0`}, true}, // with the wrapper's two lists
	} {
		c := mustCompile(t, tc.src)
		in := Input{Response: mustDecode(t, `{}`)}
		st := applyStates.Get().(*applyState)
		st.fill(in)
		fast := c.selectFast != nil && st.withinBound(&c.fastCost)
		st.release()
		if !fast {
			t.Fatalf("%+v: Apply would run the charged programs (%s)", tc.src, c.unbounded)
		}
		v := c.Apply(in, 1)
		failed := v.Err != nil && strings.Contains(v.Err.Message, "memory budget exceeded")
		if failed != tc.fail {
			t.Errorf("%+v: Apply = %+v, want the memory budget exceeded: %v", tc.src, v, tc.fail)
		}
		if charged, _ := c.apply(in, 1, alwaysCharge); verdictText(charged) != verdictText(v) {
			t.Errorf("%+v: with charges %s, without %s", tc.src, verdictText(charged), verdictText(v))
		}
	}
}
