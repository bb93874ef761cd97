package consumers

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// itemsBody is {"items": [0, 1, ..., n-1]}.
func itemsBody(t testing.TB, n int) any {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	return mustDecode(t, `{"items":[`+strings.Join(items, ",")+`]}`)
}

// applyBounded runs Apply but gives up after a minute, so that a broken
// budget fails the test instead of hanging it (the goroutine is leaked).
func applyBounded(t *testing.T, c *Consumer, in Input) (Verdict, time.Duration) {
	t.Helper()
	done := make(chan Verdict, 1)
	start := time.Now()
	go func() { done <- c.Apply(in, 0) }()
	select {
	case v := <-done:
		return v, time.Since(start)
	case <-time.After(time.Minute):
		t.Fatalf("Apply still running after a minute: the evaluation is not bounded")
		return Verdict{}, 0
	}
}

func TestRuleSizeLimit(t *testing.T) {
	atLimit := `["` + strings.Repeat("x", maxRuleBytes-4) + `"]`
	if _, errs := Compile(Source{Select: atLimit}); errs != nil {
		t.Errorf("a rule of exactly %d bytes: %v, want it compiled", maxRuleBytes, errs)
	}
	over := `["` + strings.Repeat("x", maxRuleBytes-3) + `"]`
	for _, src := range []Source{{Select: over}, {Select: "response.items", Validate: over}} {
		_, errs := Compile(src)
		want := fmt.Sprintf("rule is %d bytes; the limit is %d", maxRuleBytes+1, maxRuleBytes)
		if len(errs) != 1 || errs[0].Message != want || errs[0].Line != 1 || errs[0].Column != 1 {
			t.Errorf("Compile(%d-byte rule) = %v, want one error at 1:1 %q", len(over), errs, want)
		}
	}
}

func TestRuleNodeLimit(t *testing.T) {
	list := func(n int) string { return "[" + strings.Repeat("1,", n-1) + "1]" }
	if _, errs := Compile(Source{Select: list(maxRuleNodes - 100)}); errs != nil {
		t.Errorf("a rule of %d nodes: %v, want it compiled", maxRuleNodes-100, errs)
	}
	rule := list(maxRuleNodes + 1)
	if len(rule) > maxRuleBytes {
		t.Fatalf("the test rule is %d bytes: it would hit the size limit, not the node limit", len(rule))
	}
	_, errs := Compile(Source{Select: rule})
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "exceeds maximum allowed nodes") {
		t.Errorf("Compile(%d nodes) = %v, want the node limit", maxRuleNodes+1, errs)
	}
}

// TestEvaluationBudget runs rules that would take seconds to hours, or
// gigabytes, on a 10,000-item answer: each must stop with rule_error and
// say that the budget was exceeded. Durations are logged, not asserted.
// Measured without the budget on a 2-core machine: nested-any 3.6 s,
// all-in-filter 1.5 s, string doubling 128 MB in 0.2 s, the triple loop
// hours.
//
// The rows with a body are a hostile provider's: a pattern of its own
// choosing, which costs text × pattern (a 10 KB one took 10 s on an 80 KB
// body, uncancellable), and repeat or replace of its text, which built
// their whole result (a gigabyte) before a charge could count it. Those
// must be refused before they run, by a message naming the operation, and
// repeat and replace before they allocate their result.
func TestEvaluationBudget(t *testing.T) {
	in := Input{Response: itemsBody(t, 10_000), Status: 200}
	text80K := strings.Repeat("a", 80<<10)
	text20K := strings.Repeat("a", 20<<10)
	tests := []struct {
		name, rule string
		body       any    // the answer, when not the 10,000 items
		want       string // in the message, besides budgetExceeded
		builds     int    // bytes of a result that must never be allocated
	}{
		{"triple loop, 10^12 passes", `filter(response.items, all(response.items, all(response.items, true)))`, nil, "", 0},
		{"double loop that never matches", `filter(response.items, any(response.items, # > 99999))`, nil, "", 0},
		{"double loop through all", `filter(response.items, all(response.items, true))`, nil, "", 0},
		{"membership scan in a loop", `filter(response.items, -1 in response.items)`, nil, "", 0},
		{"deep equality in a loop", `filter(response.items, response == response)`, nil, "", 0},
		{"toJSON of the body in a loop", `filter(response.items, len(toJSON(response)) > 0)`, nil, "", 0},
		{"repeat a billion", `[repeat("x", 1000000000)]`, nil, "", 0},
		{"range to a billion", `map(1..1000000000, #)`, nil, "", 0},
		{"string doubling", `let a = repeat("x", 500000); let b = a + a; let c = b + b; let d = c + c;
			let e = d + d; let f = e + e; let g = f + f; let h = g + g; let i = h + h; [len(i)]`, nil, "", 0},
		{"validate loops on each item", ``, nil, "", 0},
		{name: "10 KB pattern from the answer on an 80 KB body", rule: `[response.text matches response.pattern]`,
			body: map[string]any{"text": text80K, "pattern": strings.Repeat("(a|aa)*", 1500) + "c"}, want: "matches"},
		{name: "short pattern from the answer that expands", rule: `[response.text matches response.pattern]`,
			body: map[string]any{"text": text20K[:1000], "pattern": strings.Repeat("a{1000}", 40)}, want: "matches"},
		{name: "pattern from the answer in validate", rule: `response.items`,
			body: map[string]any{"items": []any{map[string]any{"text": text80K, "pattern": strings.Repeat("(a|aa)*", 1400) + "b"}}},
			want: "matches"},
		{name: "repeat of the answer's text", rule: `[repeat(response.text, 20000)]`,
			body: map[string]any{"text": text20K}, want: "repeat", builds: 20 << 10 * 20000},
		{name: "replace with the answer's text", rule: `[replace(response.text, "a", response.text)]`,
			body: map[string]any{"text": text20K}, want: "replace", builds: 20 << 10 * 20 << 10},
		{name: "replace of n occurrences", rule: `[replace(response.text, "a", response.text, 10000)]`,
			body: map[string]any{"text": text20K + "a"}, want: "replace", builds: 10000 * 20 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, in := Source{Select: tt.rule}, in
			switch {
			case tt.rule == "":
				src = Source{Select: "response.items", Validate: `all(response.items, # >= 0)`}
			case strings.HasPrefix(tt.name, "pattern from the answer in validate"):
				src.Validate = `.text matches .pattern`
			}
			if tt.body != nil {
				in = Input{Response: tt.body, Status: 200}
			}
			c := mustCompile(t, src)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			v, took := applyBounded(t, c, in)
			runtime.ReadMemStats(&after)
			t.Logf("stopped after %v: %v", took, v.Err)
			if v.Err == nil || v.Err.Code != results.CodeRuleError || !strings.Contains(v.Err.Message, budgetExceeded) ||
				!strings.Contains(v.Err.Message, tt.want) {
				t.Errorf("Apply = %+v, want rule_error %q naming %q", v, budgetExceeded, tt.want)
			}
			if allocated := after.TotalAlloc - before.TotalAlloc; tt.builds > 0 && allocated >= uint64(tt.builds) {
				t.Errorf("Apply allocated %d bytes, want the %d-byte result refused before it is built", allocated, tt.builds)
			}
		})
	}
}

// TestEvaluationBudgetFitsRealRules keeps the budget from being so tight that
// a sane rule on a large answer fails: the seed-000 consumer on 10,000
// results, and a validate rule with a small inner loop on each.
func TestEvaluationBudgetFitsRealRules(t *testing.T) {
	body := mustDecode(t, string(searchBody(10_000)))
	for _, c := range []*Consumer{
		selectResultsConsumer(t),
		mustCompile(t, Source{Select: `response.results`,
			Validate: `type(.id) == "string" && none(split(.title, " "), # == "") && .score > 0`}),
	} {
		start := time.Now()
		v := c.Apply(Input{Response: body, Status: 200}, 1)
		t.Logf("10,000 results in %v: %+v", time.Since(start), v)
		if v.Err != nil || v.Validated == 0 {
			t.Errorf("Apply = %+v, want a pass", v)
		}
	}
}

// TestRuleEnvironment proves what a rule can reach: the names of SPEC §4
// (and §10's result and tool, §11's vars) and fail(), nothing of the process. $env holds exactly those values, and
// the probe's request headers (where tokens live) are not among them.
func TestRuleEnvironment(t *testing.T) {
	const secret = "s3cret-from-the-environment"
	t.Setenv("TOOLPULSE_TEST_SECRET", secret)

	var names []string
	typ := reflect.TypeOf(ruleEnv{})
	for i := range typ.NumField() {
		names = append(names, typ.Field(i).Tag.Get("expr"))
	}
	sort.Strings(names)
	want := []string{"__toolpulse_charge", "__toolpulse_fetch", "__toolpulse_item", "__toolpulse_matches",
		"__toolpulse_repeat", "__toolpulse_replace", "headers", "probe", "request", "response", "result", "status", "tool", "vars"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("rule environment = %v, want %v", names, want)
	}
	if n := reflect.TypeOf(&ruleEnv{}).NumMethod(); n != 0 {
		t.Errorf("ruleEnv has %d methods; each would be callable from a rule", n)
	}

	for _, rule := range []string{
		`[getenv("TOOLPULSE_TEST_SECRET")]`, `[env("TOOLPULSE_TEST_SECRET")]`, `[os.Getenv("HOME")]`,
		`[readFile("/etc/passwd")]`, `[open("/etc/passwd")]`, `[exec("id")]`, `[$env.TOOLPULSE_TEST_SECRET]`,
	} {
		if _, errs := Compile(Source{Select: rule}); errs == nil {
			t.Errorf("Compile(%s) succeeded, want an unknown name", rule)
		}
	}

	c := mustCompile(t, Source{Select: `fail("env_dump", toJSON($env))`})
	in := Input{Response: map[string]any{"a": 1}, Status: 200,
		Headers: map[string]string{"Content-Type": "application/json"},
		Request: Request{JSON: map[string]any{"q": "x"}, Query: map[string]string{"k": "v"}}, Probe: "p"}
	v := c.Apply(in, 0)
	if v.Err == nil || v.Err.Code != "env_dump" {
		t.Fatalf("Apply = %+v, want the env_dump failure", v)
	}
	var dump map[string]any
	if err := json.Unmarshal([]byte(v.Err.Message), &dump); err != nil {
		t.Fatalf("toJSON($env) = %s: %v", v.Err.Message, err)
	}
	wantDump := map[string]any{
		"response": map[string]any{"a": float64(1)}, "status": float64(200),
		"headers": map[string]any{"content-type": "application/json"},
		"request": map[string]any{"json": map[string]any{"q": "x"}, "query": map[string]any{"k": "v"}},
		"probe":   "p",
	}
	if !reflect.DeepEqual(dump, wantDump) {
		t.Errorf("toJSON($env) = %s, want exactly %v", v.Err.Message, wantDump)
	}
	if strings.Contains(v.Err.Message, secret) || strings.Contains(v.Err.Message, os.Getenv("HOME")+`"`) {
		t.Errorf("toJSON($env) = %s leaks the process environment", v.Err.Message)
	}
	if _, ok := reflect.TypeOf(Input{}).FieldByName("RequestHeaders"); ok {
		t.Errorf("Input carries request headers; they hold tokens and must stay out of rules")
	}
	if _, ok := reflect.TypeOf(Request{}).FieldByName("Headers"); ok {
		t.Errorf("Request carries headers; they hold tokens and must stay out of rules")
	}
}

// TestChargedOperationsKeepTheirResults: the operations charged before
// they run give what expr's own give on an ordinary answer.
func TestChargedOperationsKeepTheirResults(t *testing.T) {
	body := map[string]any{"s": "a-b-a", "p": "^a.b", "bad": "(", "n": float64(2)}
	for _, tt := range []struct{ rule, want string }{
		{`[response.s matches response.p]`, "[true]"},
		{`[response.s matches ("^" + "b")]`, "[false]"},
		{`[response.missing matches response.p]`, "[false]"},
		{`[repeat(response.s, response.n)]`, `["a-b-aa-b-a"]`},
		{`[replace(response.s, "a", "xy")]`, `["xy-b-xy"]`},
		{`[replace(response.s, "a", "xy", 1)]`, `["xy-b-a"]`},
		{`[replace(response.s, "", ".")]`, `[".a.-.b.-.a."]`},
		{`[response.s matches response.bad]`, "rule_error"},
		{`[repeat(response.s, -1)]`, "rule_error"},
	} {
		c := mustCompile(t, Source{Select: tt.rule})
		out, failure := (&Expression{Rule: "select", Text: tt.rule, run: c.selectRun}).Eval(Input{Response: body})
		got := fmt.Sprint(failure)
		if failure == nil {
			b, _ := json.Marshal(out)
			got = string(b)
		} else {
			got = string(failure.Code)
		}
		if got != tt.want {
			t.Errorf("%s = %s (%v), want %s", tt.rule, got, failure, tt.want)
		}
	}
}
