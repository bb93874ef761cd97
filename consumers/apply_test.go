package consumers

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

// The seed-000 consumer: both documented layouts, everything else refused
// with a code of its own. Keep in step with select_results.yaml.
const (
	selectResults = `let raw = response.results;
(type(raw) == "array" ? raw
  : type(raw) == "map" && type(raw?.items) == "array" ? raw.items
  : fail("unsupported_results_container", "results is " + type(raw)))
| filter(.score >= 0.75)
`
	validateResults = `type(.id) == "string" && type(.score) in ["int", "float"]
`
)

func mustCompile(t testing.TB, src Source) *Consumer {
	t.Helper()
	if src.Name == "" {
		src.Name = "test"
	}
	c, errs := Compile(src)
	if errs != nil {
		t.Fatalf("Compile: %v", errs)
	}
	return c
}

func selectResultsConsumer(t testing.TB) *Consumer {
	return mustCompile(t, Source{Name: "select_results", Version: "2", Select: selectResults, Validate: validateResults})
}

func mustDecode(t testing.TB, body string) any {
	t.Helper()
	v, err := DecodeJSON([]byte(body))
	if err != nil {
		t.Fatalf("DecodeJSON(%s): %v", body, err)
	}
	return v
}

// checkVerdict is the assertion the outcome rules rely on (SPEC §1): an
// empty list is never a pass when min_results ≥ 1, and a failure is never
// an empty list. Every Apply in these tests goes through it.
func checkVerdict(v Verdict, minResults int) error {
	if v.Selected < 0 || v.Validated < 0 || v.Validated > v.Selected {
		return fmt.Errorf("counts selected=%d validated=%d are impossible", v.Selected, v.Validated)
	}
	if v.Err == nil {
		if minResults >= 1 && v.Validated == 0 {
			return fmt.Errorf("an empty selection passed with min_results %d", minResults)
		}
		if v.Validated < minResults {
			return fmt.Errorf("passed with %d validated items, min_results %d", v.Validated, minResults)
		}
		return nil
	}
	if v.Err.Code == "" || v.Err.Message == "" {
		return fmt.Errorf("error without code or message: %+v", *v.Err)
	}
	if v.Err.Code.Outcome() != results.ContractError || v.Err.Retryable {
		return fmt.Errorf("code %s is not a non-retryable contract_error code", v.Err.Code)
	}
	switch v.Err.Code {
	case results.CodeEmptySelection:
		if v.Validated != 0 {
			return fmt.Errorf("empty_selection with %d validated items", v.Validated)
		}
	case results.CodeTooFewResults:
		if v.Validated == 0 || v.Validated >= minResults {
			return fmt.Errorf("too_few_results with %d validated items, min_results %d", v.Validated, minResults)
		}
	}
	return nil
}

type applyCase struct {
	name     string
	select_  string // "" means the seed-000 select_results rules
	validate string
	body     string
	min      int
	// want
	code      results.Code // "" means pass
	selected  int
	validated int
	msg       string // a fragment of the message

	fixture string // the fixture's name in select_results.yaml, if it has one
}

// seedCases are the seed-000 fixtures, each through the two-layout consumer.
var seedCases = []applyCase{
	{name: "original list layout", fixture: "original list layout",
		body: `{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":null}`,
		min:  1, selected: 1, validated: 1},
	{name: "new items layout", fixture: "new items layout",
		body: `{"results":{"items":[{"id":"doc_784","title":"API migration guide","score":0.93}]},"next_cursor":null}`,
		min:  1, selected: 1, validated: 1},
	{name: "missing results", fixture: "missing results", body: `{"next_cursor":null}`, min: 1,
		code: "unsupported_results_container", msg: "results is nil"},
	{name: "results null", fixture: "results null", body: `{"results":null,"next_cursor":null}`, min: 1,
		code: "unsupported_results_container", msg: "results is nil"},
	{name: "non-object items", fixture: "non-object items", body: `{"results":["doc_784"]}`, min: 1,
		code: results.CodeRuleError, msg: "select rule 5:11: cannot read a field of a list or a string"},
	{name: "missing score", fixture: "missing score", body: `{"results":[{"id":"doc_784","title":"API migration guide"}]}`, min: 1,
		code: results.CodeRuleError, msg: "select rule 5:17: invalid operation: <nil> >= float64"},
	{name: "string score", fixture: "string score", body: `{"results":[{"id":"doc_784","score":"0.93"}]}`, min: 1,
		code: results.CodeRuleError, msg: "string >= float64"},
	{name: "boolean score", fixture: "boolean score", body: `{"results":[{"id":"doc_784","score":true}]}`, min: 1,
		code: results.CodeRuleError, msg: "bool >= float64"},
	{name: "empty but valid list, min_results 1", fixture: "empty but valid list", body: `{"results":[],"next_cursor":null}`, min: 1,
		code: results.CodeEmptySelection, msg: "select returned no items: the answer's results had 0; at least 1 expected"},
	// The positive control: "never trust an empty list" must not break the
	// legitimate empty answer.
	{name: "empty but valid list, min_results 0", body: `{"results":[],"next_cursor":null}`, min: 0},
	{name: "results object without items", fixture: "results object without items", body: `{"results":{"hits":[]}}`, min: 1,
		code: "unsupported_results_container", msg: "results is map"},
	{name: "scores below the threshold", fixture: "scores below the threshold", body: `{"results":[{"id":"doc_1","score":0.5}]}`, min: 1,
		code: results.CodeEmptySelection, msg: "select returned no items, though the answer's results had 1; at least 1 expected"},
	{name: "wrapped items all below the threshold", body: `{"results":{"items":[{"id":"a","score":0.1},{"id":"b","score":0.2}]}}`, min: 1,
		code: results.CodeEmptySelection, msg: "select returned no items, though the answer's results.items had 2; at least 1 expected"},
}

// longList is a list literal longer than what a message may quote of a rule.
var longList = func() string {
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprintf("doc_%02d", i+10))
	}
	return strings.Join(ids, ", ")
}()

// codeCases reach every code Apply can produce.
var codeCases = []applyCase{
	{name: "empty_selection: a list answer filtered out", select_: `response | filter(.score > 0.5)`, body: `[{"score":0.1}]`, min: 1,
		code: results.CodeEmptySelection, msg: "select returned no items, though the answer had 1 item; at least 1 expected"},
	{name: "empty_selection: an empty list answer", select_: `response`, body: `[]`, min: 2,
		code: results.CodeEmptySelection, msg: "select returned no items: the answer had 0 items; at least 2 expected"},
	{name: "empty_selection: reads unknown", select_: `keys(response) | filter(# == "zz")`, body: `{"a":[1]}`, min: 1,
		code: results.CodeEmptySelection, msg: "select returned no items; at least 1 expected"},
	{name: "integer score passes", body: `{"results":[{"id":"a","score":1}]}`, min: 1, selected: 1, validated: 1},
	{name: "selection_not_list: map", select_: `response.results`, body: `{"results":{"a":1}}`, min: 1,
		code: results.CodeSelectionNotList, msg: "select returned map, want a list"},
	{name: "selection_not_list: missing is nil, not empty", select_: `response.results`, body: `{}`, min: 1,
		code: results.CodeSelectionNotList, msg: "select returned nil, want a list"},
	{name: "typed list from split is a list", select_: `split(response.csv, ",")`, body: `{"csv":"a,b"}`, min: 2,
		selected: 2, validated: 2},
	{name: "invalid_item", body: `{"results":[{"id":"a","score":0.8},{"id":784,"score":0.93}]}`, min: 1,
		code: results.CodeInvalidItem, selected: 2, validated: 1,
		msg: "item 1 failed validate: `type(.id) == \"string\"` was false: id is int (item {\"id\":784,\"score\":0.93})"},
	// invalid_item names the clause that was false and what it read.
	{name: "invalid_item: the type clause", validate: `type(.id) == "string" && type(.priority) == "int"`,
		body: `{"results":[{"id":"a","score":1,"priority":"high"}]}`, min: 1, code: results.CodeInvalidItem, selected: 1,
		msg: "item 0 failed validate: `type(.priority) == \"int\"` was false: priority is string (item "},
	{name: "invalid_item: a comparison shows the value", validate: `.id != "" and .meta.rank <= 3`,
		body: `{"results":[{"id":"a","score":1,"meta":{"rank":7}}]}`, min: 1, code: results.CodeInvalidItem, selected: 1,
		msg: "item 0 failed validate: `.meta.rank <= 3` was false: meta.rank is int 7 (item "},
	{name: "invalid_item: a missing field", validate: `.id != nil && .fresh == true`,
		body: `{"results":[{"id":"a","score":1}]}`, min: 1, code: results.CodeInvalidItem, selected: 1,
		msg: "item 0 failed validate: `.fresh == true` was false: fresh is missing (item "},
	{name: "invalid_item: a long clause gives way to what it read", validate: `.id in [` + longList + `]`,
		body: `{"results":[{"id":"doc_9","score":1}]}`, min: 1, code: results.CodeInvalidItem, selected: 1,
		msg: "…` was false: id is string \"doc_9\" (item "},
	{name: "invalid_item: a rule with a loop is quoted whole", validate: `all(.tags, # != "")`,
		body: `{"results":[{"id":"a","score":1,"tags":[""]}]}`, min: 1, code: results.CodeInvalidItem, selected: 1,
		msg: `item 0 failed validate: {"id":"a","score":1,"tags":[""]}`},
	{name: "too_few_results", body: `{"results":[{"id":"a","score":0.8},{"id":"b","score":0.9}]}`, min: 3,
		code: results.CodeTooFewResults, selected: 2, validated: 2, msg: "2 validated items; at least 3 expected"},
	{name: "enough results", body: `{"results":[{"id":"a","score":0.8},{"id":"b","score":0.9}]}`, min: 2,
		selected: 2, validated: 2},
	{name: "rule_error: iterating an object", select_: `filter(response.results, .score >= 0.75)`,
		body: `{"results":{"items":[]}}`, min: 1,
		code: results.CodeRuleError, msg: "select rule 1:26: cannot iterate over a map"},
	{name: "rule_error: missing key used as a number", select_: `response.results | filter(.score * 2 >= 1.5)`,
		body: `{"results":[{"id":"a"}]}`, min: 1,
		code: results.CodeRuleError, msg: "invalid operation: <nil> * int"},
	{name: "rule_error: index out of range", select_: `[response.results[3]]`, body: `{"results":[]}`, min: 1,
		code: results.CodeRuleError, msg: "index out of range"},
	{name: "rule_error: integer division by zero", select_: `[response.n % response.z]`, body: `{"n":1,"z":0}`, min: 1,
		code: results.CodeRuleError, msg: "integer divide by zero"},
	{name: "rule_error: fetching from a null body", body: `null`, min: 1,
		code: results.CodeRuleError, msg: "cannot fetch results from <nil>"},
	{name: "custom fail code from select", body: `{"results":"doc_784"}`, min: 1,
		code: "unsupported_results_container", msg: "results is string"},
	{name: "custom fail code from validate", validate: `.fresh || fail("stale_result", "item " + .id + " is stale")`,
		body: `{"results":[{"id":"a","score":1,"fresh":true},{"id":"b","score":1,"fresh":false}]}`, min: 1,
		code: "stale_result", selected: 2, validated: 1, msg: "item b is stale"},
	// A literal bad code is refused at load (TestCompileErrors); one read
	// from the body can only be refused at run time.
	{name: "fail with a non-snake_case code", select_: `fail(response.code, "x")`, body: `{"code":"Bad-Code"}`, min: 1,
		code: results.CodeRuleError, msg: `select rule: fail code "Bad-Code" is not snake_case`},
	{name: "fail cannot claim unavailable", select_: `fail(response.code, "pretend")`, body: `{"code":"timeout"}`, min: 1,
		code: results.CodeRuleError, msg: `fail code "timeout" is reserved for unavailable outcomes`},
	{name: "fail with a code read from the body", select_: `fail(response.code, "x")`, body: `{"code":7}`, min: 1,
		code: results.CodeRuleError, msg: `fail code "" is not snake_case`},
	{name: "validate returning a number", validate: `.score`, body: `{"results":[{"id":"a","score":0.9}]}`, min: 1,
		code: results.CodeRuleError, selected: 1, msg: "item 0: validate returned float, want a bool"},
	{name: "validate returning nil", validate: `.missing`, body: `{"results":[{"id":"a","score":0.9}]}`, min: 1,
		code: results.CodeRuleError, selected: 1, msg: "validate returned nil, want a bool"},
	{name: "validate run-time error is positioned in the rule", validate: `.id + 1 > 0`,
		body: `{"results":[{"id":"a","score":0.9}]}`, min: 1,
		code: results.CodeRuleError, selected: 1, msg: "item 0: validate rule 1:5: invalid operation: string + int"},
	{name: "long fail message is clipped", select_: `fail("too_long", repeat("x", 5000))`, body: `{}`, min: 1,
		code: "too_long", msg: strings.Repeat("x", maxMessageBytes-10)},
}

func runApplyCases(t *testing.T, cases []applyCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := Source{Name: "select_results", Version: "2", Select: selectResults, Validate: validateResults}
			if tc.select_ != "" {
				src.Select, src.Validate = tc.select_, ""
			}
			if tc.validate != "" {
				src.Validate = tc.validate
			}
			c := mustCompile(t, src)
			got := c.Apply(Input{Response: mustDecode(t, tc.body), Status: 200}, tc.min)
			if err := checkVerdict(got, tc.min); err != nil {
				t.Errorf("verdict %+v breaks the outcome rules: %v", got, err)
			}
			var code results.Code
			var msg string
			if got.Err != nil {
				code, msg = got.Err.Code, got.Err.Message
			}
			if code != tc.code {
				t.Errorf("code = %q (%s), want %q", code, msg, tc.code)
			}
			if got.Selected != tc.selected || got.Validated != tc.validated {
				t.Errorf("selected, validated = %d, %d; want %d, %d", got.Selected, got.Validated, tc.selected, tc.validated)
			}
			if !strings.Contains(msg, tc.msg) {
				t.Errorf("message = %q, want it to contain %q", msg, tc.msg)
			}
			if len(msg) > maxMessageBytes+len("…") {
				t.Errorf("message is %d bytes, over the %d limit", len(msg), maxMessageBytes)
			}
		})
	}
}

func TestApplySeedFixtures(t *testing.T) { runApplyCases(t, seedCases) }

func TestApplyCodes(t *testing.T) { runApplyCases(t, codeCases) }

// TestCheckVerdictCatchesEmptyPass is the seed-003 mutation check for this
// layer: reproduce the broken parser (an empty selection reported as a
// pass) and require the assertion the table uses to reject it. If it did
// not, the table would only be checking that some verdict came back.
func TestCheckVerdictCatchesEmptyPass(t *testing.T) {
	c := selectResultsConsumer(t)
	empty := Input{Response: mustDecode(t, `{"results":[],"next_cursor":null}`)}

	real := c.Apply(empty, 1)
	if err := checkVerdict(real, 1); err != nil || real.Err == nil || real.Err.Code != results.CodeEmptySelection {
		t.Fatalf("real verdict %+v (check: %v), want empty_selection accepted by the check", real, err)
	}

	mutated := real
	mutated.Err = nil // the empty-selection branch "forgot" its error
	if err := checkVerdict(mutated, 1); err == nil {
		t.Fatalf("checkVerdict accepted the mutation %+v: an empty list passed with min_results 1", mutated)
	}
	// Also the other way round: the seed-000 bug turned a broken container
	// into an empty success.
	broken := c.Apply(Input{Response: mustDecode(t, `{"results":{"hits":[]}}`)}, 1)
	if err := checkVerdict(Verdict{Selected: broken.Selected, Validated: broken.Validated}, 1); err == nil {
		t.Fatal("checkVerdict accepted a failed container reported as an empty success")
	}

	// Positive control: the legitimate empty answer still passes.
	if got := c.Apply(empty, 0); got.Err != nil || checkVerdict(got, 0) != nil {
		t.Fatalf("empty list with min_results 0 = %+v, want a pass the check accepts", got)
	}
}

func TestApplyEnvironment(t *testing.T) {
	c0 := Input{
		Response: mustDecode(t, `{"i":1,"neg":-7,"f":0.5,"whole":1.0,"exp":1e2,"huge":100000000000000000000000000000,"max":9223372036854775807,"s":"x","b":true,"n":null,"l":[],"m":{}}`),
		Status:   201,
		Headers:  map[string]string{"X-Request-Id": "r-1", "content-type": "application/json"},
		Request:  Request{JSON: mustDecode(t, `{"query":"API migration guide","limit":5}`), Query: map[string]string{"lang": "en"}},
		Probe:    "external_search",
	}
	for _, rule := range []string{
		`status == 201`,
		`type(status) == "int"`,
		`headers["x-request-id"] == "r-1"`,
		`headers["content-type"] == "application/json"`,
		`headers["X-Request-Id"] == nil`,
		`request.json.query == "API migration guide"`,
		`type(request.json.limit) == "int"`,
		`request.query.lang == "en"`,
		`probe == "external_search"`,
		`type(response.i) == "int" && type(response.neg) == "int" && type(response.max) == "int"`,
		`type(response.f) == "float" && type(response.whole) == "float" && type(response.exp) == "float"`,
		`type(response.huge) == "float" && response.huge == 1e29`,
		`type(response.s) == "string" && type(response.b) == "bool" && type(response.n) == "nil"`,
		`type(response.l) == "array" && type(response.m) == "map"`,
		`response.i + 1 == 2 && response.i * 2 == 2 && response.f + response.i == 1.5`,
		`response.max == 9223372036854775807`,
	} {
		t.Run(rule, func(t *testing.T) {
			c := mustCompile(t, Source{Select: `(` + rule + `) ? [1] : fail("env_mismatch", "false")`})
			if got := c.Apply(c0, 1); got.Err != nil || got.Validated != 1 {
				t.Errorf("got %+v, want the rule to hold", got)
			}
		})
	}
}

// TestApplyYAMLValues shows why fixtures must go through Normalize: goccy's
// uint64 would read as "uint" to type() and fail the seed validate rule.
func TestApplyYAMLValues(t *testing.T) {
	c := selectResultsConsumer(t)
	yamlLike := map[string]any{"results": []any{map[string]any{"id": "doc_784", "score": uint64(1)}}}
	if got := c.Apply(Input{Response: yamlLike}, 1); got.Err == nil || got.Err.Code != results.CodeInvalidItem {
		t.Fatalf("raw YAML value: got %+v, want invalid_item (type(uint64) is \"uint\")", got)
	}
	if got := c.Apply(Input{Response: Normalize(yamlLike)}, 1); got.Err != nil || got.Validated != 1 {
		t.Fatalf("normalized YAML value: got %+v, want a pass", got)
	}
}

// TestApplyNeverPanics feeds Apply what Compile would never produce and Go
// values no decoder would: the verdict must still be a contract error.
func TestApplyNeverPanics(t *testing.T) {
	var nilConsumer *Consumer
	if got := nilConsumer.Apply(Input{}, 1); got.Err == nil || got.Err.Code != results.CodeInternalError {
		t.Errorf("nil consumer: got %+v, want internal_error", got)
	}
	if got := (&Consumer{}).Apply(Input{}, 1); got.Err == nil || got.Err.Code != results.CodeInternalError {
		t.Errorf("zero consumer: got %+v, want internal_error", got)
	}
	c := mustCompile(t, Source{Select: `response.results`, Validate: `# > 0`})
	for name, resp := range map[string]any{
		"channel items": map[string]any{"results": []any{make(chan int)}},
		"func items":    map[string]any{"results": []any{func() {}}},
		"typed nil map": map[string]any{"results": map[string]any(nil)},
		"struct body":   struct{ Results []int }{[]int{1}},
		"pointer body":  &struct{}{},
		"nil map body":  map[string]any(nil),
	} {
		t.Run(name, func(t *testing.T) {
			got := c.Apply(Input{Response: resp}, 1)
			t.Logf("%+v", got.Err)
			if err := checkVerdict(got, 1); err != nil || got.Err == nil {
				t.Errorf("got %+v (check: %v), want a contract error", got, err)
			}
		})
	}
}

// TestApplyConcurrent shares one compiled consumer across goroutines, as the
// runner does; run it under -race.
func TestApplyConcurrent(t *testing.T) {
	c := selectResultsConsumer(t)
	type job struct {
		in   Input
		min  int
		want Verdict
	}
	var jobs []job
	for _, tc := range seedCases {
		in := Input{Response: mustDecode(t, tc.body), Headers: map[string]string{"X-A": "b"}, Probe: "p"}
		jobs = append(jobs, job{in, tc.min, c.Apply(in, tc.min)})
	}
	const workers, rounds = 8, 50
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				j := jobs[(w+r)%len(jobs)]
				got := c.Apply(j.in, j.min)
				if got.Selected != j.want.Selected || got.Validated != j.want.Validated ||
					(got.Err == nil) != (j.want.Err == nil) ||
					(got.Err != nil && *got.Err != *j.want.Err) {
					errs <- fmt.Sprintf("worker %d: got %+v, want %+v", w, got, j.want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestPreviewIsBounded(t *testing.T) {
	deep := any("leaf")
	for range 1000 {
		deep = []any{deep}
	}
	wide := make([]any, 100000)
	for i := range wide {
		wide[i] = map[string]any{"k": strings.Repeat("v", 1000)}
	}
	for name, v := range map[string]any{"deep": deep, "wide": wide, "long string": strings.Repeat("é", 10000)} {
		if got := preview(v); len(got) > previewBytes+len("…") {
			t.Errorf("%s: preview is %d bytes, want at most %d", name, len(got), previewBytes)
		}
	}
	if got, want := preview(map[string]any{"b": 1, "a": []any{true, nil, 0.5, "x"}}), `{"a":[true,null,0.5,"x"],"b":1}`; got != want {
		t.Errorf("preview = %s, want %s", got, want)
	}
}

// TestSelectResultsFileMatchesTable keeps select_results.yaml and this table
// in step: same rule text, and every seed fixture present with the outcome
// the table proves. The config loader owns YAML; its tests load the file
// for real and run its fixtures.
func TestSelectResultsFileMatchesTable(t *testing.T) {
	data, err := os.ReadFile("select_results.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := string(data)
	indent := func(rule string) string {
		return "  " + strings.ReplaceAll(strings.TrimSuffix(rule, "\n"), "\n", "\n  ") + "\n"
	}
	for name, rule := range map[string]string{"select": selectResults, "validate": validateResults} {
		if !strings.Contains(file, indent(rule)) {
			t.Errorf("select_results.yaml: %s rule differs from the one this table tests:\n%s", name, rule)
		}
	}
	var fixtures int
	for _, line := range strings.Split(file, "\n") {
		if strings.HasPrefix(line, "  - name: ") {
			fixtures++
		}
	}
	var named int
	for _, tc := range seedCases {
		if tc.fixture == "" {
			continue
		}
		named++
		want := "    expect: pass\n"
		if tc.code != "" {
			want = fmt.Sprintf("    expect: {outcome: contract_error, code: %s}\n", tc.code)
		}
		i := strings.Index(file, "  - name: "+tc.fixture+"\n")
		if i < 0 {
			t.Errorf("select_results.yaml has no fixture %q", tc.fixture)
			continue
		}
		entry := file[i+1:]
		if j := strings.Index(entry, "  - name: "); j >= 0 {
			entry = entry[:j]
		}
		if !strings.Contains(entry, want) {
			t.Errorf("fixture %q: want %q in\n%s", tc.fixture, want, entry)
		}
	}
	if fixtures != named {
		t.Errorf("select_results.yaml has %d fixtures, the table names %d", fixtures, named)
	}
}

func TestExpectationMismatch(t *testing.T) {
	tests := []struct {
		x        Expectation
		outcome  results.Outcome
		code     results.Code
		selected int
		want     string
	}{
		{Expectation{Outcome: results.Pass}, results.Pass, "", 0, ""},
		{Expectation{Outcome: results.Pass}, results.ContractError, "rule_error", 0, "got contract_error, want pass"},
		{Expectation{Outcome: results.ContractError}, results.ContractError, "anything", 0, ""},
		{Expectation{Outcome: results.ContractError, Code: "rule_error"}, results.ContractError, "invalid_item", 0, "got code invalid_item, want rule_error"},
		{Expectation{Outcome: results.Pass, MinSelected: 2}, results.Pass, "", 1, "selected 1, want at least 2"},
		{Expectation{Outcome: results.Pass, MinSelected: 2}, results.Pass, "", 2, ""},
	}
	for _, tt := range tests {
		if got := tt.x.Mismatch(tt.outcome, tt.code, tt.selected); got != tt.want {
			t.Errorf("%v.Mismatch(%s, %s, %d) = %q, want %q", tt.x, tt.outcome, tt.code, tt.selected, got, tt.want)
		}
	}
	if got := (Expectation{Outcome: results.ContractError, Code: "rule_error", MinSelected: 0}).String(); got != "contract_error rule_error" {
		t.Errorf("String = %q", got)
	}
}
