package consumers

import (
	"reflect"
	"testing"
)

func names(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range s {
		m[n] = true
	}
	return m
}

func TestReadFields(t *testing.T) {
	for _, tc := range []struct {
		name              string
		select_, validate string
		want              FieldSet // Names ignored when !Known
	}{
		// The rules of select_results.yaml (apply_test.go keeps the
		// constants in step with the file).
		{"seed-000 two-layout rule", selectResults, validateResults,
			FieldSet{Known: true, Names: names("results", "items", "score", "id")}},
		{"plain member access", `response.results`, ``,
			FieldSet{Known: true, Names: names("results")}},
		{"optional chaining", `response?.data?.hits ?? []`, ``,
			FieldSet{Known: true, Names: names("data", "hits")}},
		{"constant index", `[response["x"], response["y z"]]`, ``,
			FieldSet{Known: true, Names: names("x", "y z")}},
		{"shorthand in validate", `response.results`, `.score > 0.5 && #.id != "" && #?.meta?.lang == "en"`,
			FieldSet{Known: true, Names: names("results", "score", "id", "meta", "lang")}},
		{"shorthand in select predicates", `filter(response.items, .ok) | map(.name)`, ``,
			FieldSet{Known: true, Names: names("items", "ok", "name")}},
		{"list index is not a field", `[response.results[0].id]`, ``,
			FieldSet{Known: true, Names: names("results", "id")}},
		{"key test with in", `"data" in response ? response.data : []`, ``,
			FieldSet{Known: true, Names: names("data")}},
		{"get with a constant key", `get(response, "data") ?? []`, ``,
			FieldSet{Known: true, Names: names("data")}},
		{"membership in a literal list reads no key", `response.results`, `.kind in ["a", "b"] && .n in 1..3`,
			FieldSet{Known: true, Names: names("results", "kind", "n")}},
		{"headers and request are not the response", `headers["x-total"] == "1" && request.json.query != "" && headers[probe] != "" ? response.results : []`, ``,
			FieldSet{Known: true, Names: names("results")}},
		{"membership in a fixture list", `response.results`, `.id in request.json.ids && "x-id" in headers`,
			FieldSet{Known: true, Names: names("results", "id")}},
		{"no member at all", `[response]`, ``,
			FieldSet{Known: true, Names: names()}},
		{"dynamic key", `response[probe]`, ``, FieldSet{}},
		{"dynamic key in validate", `response.results`, `#[string(#index)] != nil`, FieldSet{}},
		{"get with a dynamic key", `get(response, probe) ?? []`, ``, FieldSet{}},
		{"in with a dynamic key", `probe in response ? [] : []`, ``, FieldSet{}},
		{"membership in a response list", `response.results`, `.id in response.allowed`, FieldSet{}},
		{"keys observes every key", `len(keys(response)) == 2 ? response.results : fail("x", "y")`, ``, FieldSet{}},
		{"toJSON observes every key", `response.results`, `toJSON(#) != ""`, FieldSet{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCompile(t, Source{Select: tc.select_, Validate: tc.validate})
			got := c.ReadFields()
			if got.Known != tc.want.Known || got.Known && !reflect.DeepEqual(got.Names, tc.want.Names) {
				t.Errorf("ReadFields() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestReadFieldsIgnoresItemVariable: the wrapper around a validate rule
// names the item; it is an identifier of toolpulse's, not a field.
func TestReadFieldsIgnoresItemVariable(t *testing.T) {
	c := mustCompile(t, Source{Select: `response.results`, Validate: `$env.__toolpulse_item != nil`})
	got := c.ReadFields()
	if !got.Known || got.Names[itemVar] || len(got.Names) != 1 {
		t.Errorf("ReadFields() = %+v, want only results", got)
	}
}

func TestReadFieldsOfUncompiledConsumer(t *testing.T) {
	for _, c := range []*Consumer{nil, {Name: "hand-made"}} {
		if got := c.ReadFields(); got.Known {
			t.Errorf("ReadFields() of %v = %+v, want unknown", c, got)
		}
	}
}

func TestFieldSetReads(t *testing.T) {
	known := FieldSet{Known: true, Names: names("score")}
	for _, tc := range []struct {
		set   FieldSet
		field string
		want  bool
	}{
		{known, "score", true},
		{known, "title", false},
		{known, "", false},
		{FieldSet{}, "title", true},
		{FieldSet{Names: names("score")}, "title", true},
		{FieldSet{Known: true}, "score", false},
	} {
		if got := tc.set.Reads(tc.field); got != tc.want {
			t.Errorf("%+v.Reads(%q) = %v, want %v", tc.set, tc.field, got, tc.want)
		}
	}
}

// TestReadsInput: an input counts as seen when either rule names it,
// wherever (a let, a predicate, a map() body the optimizer moves), or
// names $env; a member of the same name does not count.
func TestReadsInput(t *testing.T) {
	for _, tc := range []struct {
		name              string
		select_, validate string
		result, tool      bool
	}{
		{"seed-000 rules", selectResults, validateResults, false, false},
		{"a member named result", `response.result ?? response.results`, `.tool != nil`, false, false},
		{"a string that says result", `response.results`, `type(.id) == "string" && .kind != "result"`, false, false},
		{"result in select", `result.isError != true ? response.results : []`, ``, true, false},
		{"tool in validate", `response.results`, `tool.name == "search"`, false, true},
		{"through a let", `let r = result; r.isError == true ? [] : response.results`, ``, true, false},
		{"inside a predicate", `filter(response.results, .score >= len(tool.name))`, ``, false, true},
		{"inside a map after a filter", `filter(response.results, .score > 0) | map(result.isError)`, ``, true, false},
		{"every input through $env", `$env.response.results`, ``, true, true},
		{"$env by key", `response.results`, `$env["request"] != nil`, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCompile(t, Source{Select: tc.select_, Validate: tc.validate})
			if got := c.ReadsInput("result"); got != tc.result {
				t.Errorf("ReadsInput(result) = %t, want %t", got, tc.result)
			}
			if got := c.ReadsInput("tool"); got != tc.tool {
				t.Errorf("ReadsInput(tool) = %t, want %t", got, tc.tool)
			}
			if !c.ReadsInput("response") {
				t.Errorf("ReadsInput(response) = false, want true: every rule here reads it")
			}
		})
	}
	if !(*Consumer)(nil).ReadsInput("result") || !(&Consumer{}).ReadsInput("tool") {
		t.Errorf("a consumer not made by Compile must see every input")
	}
}
