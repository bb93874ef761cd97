package consumers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
)

// seed000Body is the drill's baseline response (seed 000).
const seed000Body = `{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":null}`

// checkGolden compares got with the golden file, or rewrites it with -update.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	testkit.Golden(t, golden, got)
}

func jsonText(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	return string(b)
}

func mutationNames(ms []Mutation) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

func findMutation(ms []Mutation, name string) (Mutation, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Mutation{}, false
}

func TestMutationsSeed000Golden(t *testing.T) {
	ms := Mutations(mustDecode(t, seed000Body), FieldSet{})
	var b bytes.Buffer
	for _, m := range ms {
		fmt.Fprintln(&b, m.Name)
	}
	checkGolden(t, "testdata/mutate/seed000.golden", b.Bytes())
}

// facetsBody has a map: facets' keys are ids (hex), so shape writes its
// values as facets.* and mutations name them so too.
const facetsBody = `{"results":[{"id":"doc_784","score":0.93}],"facets":{"f3a9c1":{"label":"docs","count":12},"77b0e2":{"label":"api","count":3}}}`

// TestMutationsFacetsGolden: a map's values are one path, facets.*, as in
// a shape diff; no mutation names one of its keys, and each change is
// made once, to every value.
func TestMutationsFacetsGolden(t *testing.T) {
	base := mustDecode(t, facetsBody)
	if got := shape.Of(base).String(); !strings.Contains(got, "facets:map<") {
		t.Fatalf("shape %s: facets is not a map; the test needs one", got)
	}
	ms := Mutations(base, FieldSet{})
	var b bytes.Buffer
	for _, m := range ms {
		fmt.Fprintln(&b, m.Name)
		if strings.Contains(m.Name, "f3a9c1") || strings.Contains(m.Name, "77b0e2") {
			t.Errorf("%q names a key of the map", m.Name)
		}
	}
	checkGolden(t, "testdata/mutate/facets.golden", b.Bytes())

	m, ok := findMutation(ms, "retype facets.*.count number->string")
	if !ok {
		t.Fatalf("no retype facets.*.count number->string in %q", mutationNames(ms))
	}
	if m.Path != "facets.*.count" || m.Field != "count" {
		t.Errorf("path %q field %q, want facets.*.count and count", m.Path, m.Field)
	}
	want := `{"facets":{"77b0e2":{"count":"3","label":"api"},"f3a9c1":{"count":"12","label":"docs"}},"results":[{"id":"doc_784","score":0.93}]}`
	if got := jsonText(t, m.Response); got != want {
		t.Errorf("response:\ngot  %s\nwant %s", got, want)
	}
	if got, want := shape.Diff(shape.Of(base), shape.Of(m.Response)), []string{"facets.*.count: number -> string"}; !slices.Equal(got, want) {
		t.Errorf("diff = %q, want %q", got, want)
	}
}

// TestMutationsWideMap: an object of many keys whose values share one
// shape is a map however its keys read, so 600 keys are one path and a
// handful of mutations, not 6,000 that differ only by key.
func TestMutationsWideMap(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 600 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%03d":{"n":1}`, i)
	}
	b.WriteString("}")
	got := mutationNames(Mutations(mustDecode(t, b.String()), FieldSet{}))
	want := []string{
		"retype $ object->null",
		"retype $.* object->null",
		"add_field $.*", // the first object of named fields: the map's values
		"remove_field $.*.n",
		"retype $.*.n number->string",
		"retype $.*.n number->bool",
		"retype $.*.n number->null",
		"nest_field $.*.n",
		"rename_key $.*.n to N",
	}
	if !slices.Equal(got, want) {
		t.Errorf("names =\n%q\nwant\n%q", got, want)
	}
}

func TestMutationsResponses(t *testing.T) {
	const mixed = `{"results":[{"id":"a","score":1},{"id":"b","score":"0.5"},{"id":"c"}]}`
	const rootList = `[{"a":1},{"a":2.5,"b":[]}]`
	for _, tc := range []struct {
		base, name  string
		kind        MutationKind
		path, field string
		want        string // the mutated response as JSON
	}{
		{seed000Body, "wrap_list results", MutWrapList, "results", "results",
			`{"next_cursor":null,"results":{"items":[{"id":"doc_784","score":0.93,"title":"API migration guide"}]}}`},
		{seed000Body, "unwrap_object $ to results", MutUnwrapObject, "$", "results",
			`[{"id":"doc_784","score":0.93,"title":"API migration guide"}]`},
		{seed000Body, "remove_field results[].title", MutRemoveField, "results[].title", "title",
			`{"next_cursor":null,"results":[{"id":"doc_784","score":0.93}]}`},
		{seed000Body, "retype results[].score number->string", MutRetype, "results[].score", "score",
			`{"next_cursor":null,"results":[{"id":"doc_784","score":"0.93","title":"API migration guide"}]}`},
		{seed000Body, "retype results[].score number->bool", MutRetype, "results[].score", "score",
			`{"next_cursor":null,"results":[{"id":"doc_784","score":true,"title":"API migration guide"}]}`},
		{seed000Body, "retype results[].id string->number", MutRetype, "results[].id", "id",
			`{"next_cursor":null,"results":[{"id":1,"score":0.93,"title":"API migration guide"}]}`},
		{seed000Body, "retype results list->null", MutRetype, "results", "results",
			`{"next_cursor":null,"results":null}`},
		{seed000Body, "retype results[] object->null", MutRetype, "results[]", "results",
			`{"next_cursor":null,"results":[null]}`},
		{seed000Body, "retype $ object->null", MutRetype, "$", "", `null`},
		{seed000Body, "empty_list results", MutEmptyList, "results", "results",
			`{"next_cursor":null,"results":[]}`},
		{seed000Body, "non_object_items results", MutNonObjectItems, "results", "results",
			`{"next_cursor":null,"results":["x"]}`},
		{seed000Body, "nest_field results[].score", MutNestField, "results[].score", "score",
			`{"next_cursor":null,"results":[{"id":"doc_784","score":{"value":0.93},"title":"API migration guide"}]}`},
		{seed000Body, "rename_key next_cursor to nextCursor", MutRenameKey, "next_cursor", "next_cursor",
			`{"nextCursor":null,"results":[{"id":"doc_784","score":0.93,"title":"API migration guide"}]}`},
		{seed000Body, "add_field $", MutAddField, "$", "toolpulse_unrelated_field",
			`{"next_cursor":null,"results":[{"id":"doc_784","score":0.93,"title":"API migration guide"}],"toolpulse_unrelated_field":"x"}`},
		// A path is every element of its list: one change, one diff line.
		{mixed, "retype results[].score number->string", MutRetype, "results[].score", "score",
			`{"results":[{"id":"a","score":"1"},{"id":"b","score":"0.5"},{"id":"c"}]}`},
		{mixed, "retype results[].score string->number", MutRetype, "results[].score", "score",
			`{"results":[{"id":"a","score":1},{"id":"b","score":1},{"id":"c"}]}`},
		{mixed, "retype results[].score number|string->null", MutRetype, "results[].score", "score",
			`{"results":[{"id":"a","score":null},{"id":"b","score":null},{"id":"c"}]}`},
		{mixed, "remove_field results[].score", MutRemoveField, "results[].score", "score",
			`{"results":[{"id":"a"},{"id":"b"},{"id":"c"}]}`},
		{mixed, "rename_key results[].id to Id", MutRenameKey, "results[].id", "id",
			`{"results":[{"Id":"a","score":1},{"Id":"b","score":"0.5"},{"Id":"c"}]}`},
		// A root list: the positive control goes to its objects.
		{rootList, "add_field $[]", MutAddField, "$[]", "toolpulse_unrelated_field",
			`[{"a":1,"toolpulse_unrelated_field":"x"},{"a":2.5,"b":[],"toolpulse_unrelated_field":"x"}]`},
		{rootList, "wrap_list $", MutWrapList, "$", "", `{"items":[{"a":1},{"a":2.5,"b":[]}]}`},
		{rootList, "wrap_list $[].b", MutWrapList, "$[].b", "b", `[{"a":1},{"a":2.5,"b":{"items":[]}}]`},
		{rootList, "retype $[].a number->string", MutRetype, "$[].a", "a", `[{"a":"1"},{"a":"2.5","b":[]}]`},
		{rootList, "non_object_items $", MutNonObjectItems, "$", "", `["x","x"]`},
		{`{"toolpulse_unrelated_field":1,"toolpulse_unrelated_field_2":2}`, "add_field $", MutAddField, "$", "toolpulse_unrelated_field_3",
			`{"toolpulse_unrelated_field":1,"toolpulse_unrelated_field_2":2,"toolpulse_unrelated_field_3":"x"}`},
		{`{"data":{"items":[1]}}`, "unwrap_object data to data.items", MutUnwrapObject, "data", "items",
			`{"data":[1]}`},
		{`{"a.b":{"x y":1}}`, `retype "a.b"."x y" number->string`, MutRetype, `"a.b"."x y"`, "x y",
			`{"a.b":{"x y":"1"}}`},
		{`7`, "retype $ number->bool", MutRetype, "$", "", `true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := findMutation(Mutations(mustDecode(t, tc.base), FieldSet{}), tc.name)
			if !ok {
				t.Fatalf("no mutation %q of %s", tc.name, tc.base)
			}
			if m.Kind != tc.kind || m.Path != tc.path || m.Field != tc.field {
				t.Errorf("kind, path, field = %s, %q, %q; want %s, %q, %q", m.Kind, m.Path, m.Field, tc.kind, tc.path, tc.field)
			}
			if got := jsonText(t, m.Response); got != tc.want {
				t.Errorf("response:\ngot  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestMutationsLeftOut(t *testing.T) {
	for _, tc := range []struct {
		base    string
		missing []string
	}{
		// Nothing to empty, no objects to add a field to, null has no
		// other type to become.
		{`{"results":[],"next_cursor":null}`, []string{"empty_list results", "non_object_items results", "retype next_cursor null->null"}},
		{`[1,"x"]`, []string{"add_field $", "add_field $[]"}},
		// The new name is taken.
		{`{"next_cursor":1,"nextCursor":2}`, []string{"rename_key next_cursor to nextCursor", "rename_key nextCursor to next_cursor"}},
		// No key leads to the root or its elements.
		{`[1]`, []string{"remove_field $", "remove_field $[]", "nest_field $[]", "rename_key $[]"}},
	} {
		names := mutationNames(Mutations(mustDecode(t, tc.base), FieldSet{}))
		for _, n := range tc.missing {
			if slices.Contains(names, n) {
				t.Errorf("Mutations(%s) has %q, want none: %q", tc.base, n, names)
			}
		}
	}
}

// TestMutationsFollowReads: key-level mutations apply only where the rule
// may read the key, and a key counts as not read only where the rule reads
// another key of the same object.
func TestMutationsFollowReads(t *testing.T) {
	const body = `{"meta":{"id":"m","page":1},"results":[{"id":"a","score":1,"title":"t","tags":["x"]}],"next_cursor":null}`
	for _, tc := range []struct {
		name          string
		reads         FieldSet
		have, missing []string
	}{
		{"strict rule", FieldSet{Known: true, Names: names("results", "id", "score")},
			[]string{"remove_field results", "remove_field results[].id", "rename_key results[].score to Score",
				"retype results[].title string->number", "wrap_list results[].tags", "retype meta.id string->number"},
			[]string{"remove_field results[].title", "nest_field results[].tags", "remove_field next_cursor",
				"remove_field meta", "remove_field meta.id", "rename_key meta.page to Page"}},
		// No key of the items is read: they are handed over unexamined, so
		// every key of theirs matters.
		{"rule reading no item field", FieldSet{Known: true, Names: names("results")},
			[]string{"remove_field results[].title", "nest_field results[].tags", "rename_key results[].id to Id"},
			[]string{"remove_field next_cursor", "remove_field meta"}},
		{"rule reading nothing", FieldSet{Known: true, Names: names()},
			[]string{"remove_field next_cursor", "remove_field meta.id", "remove_field results[].title"}, nil},
		{"unknown reads", FieldSet{},
			[]string{"remove_field next_cursor", "remove_field meta.id", "remove_field results[].title"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mutationNames(Mutations(mustDecode(t, body), tc.reads))
			for _, n := range tc.have {
				if !slices.Contains(got, n) {
					t.Errorf("missing %q", n)
				}
			}
			for _, n := range tc.missing {
				if slices.Contains(got, n) {
					t.Errorf("has %q, want it left out", n)
				}
			}
		})
	}
}

// mutationBases are varied bodies for the properties every mutation has.
var mutationBases = []string{
	seed000Body,
	`{"results":{"items":[{"id":"doc_784","title":"API migration guide","score":0.93}]},"next_cursor":null}`,
	`{"results":[{"id":"a","score":1,"tags":["x","y"]},{"id":"b","score":"0.5","tags":[]},{"id":"c"}],"meta":{"page":1,"more":true}}`,
	`[{"a":1},{"a":2.5,"b":[]},[1,[2]],"s",null]`,
	`{"a.b":[{"x y":1,"é":"s","":null,"q\"":true,"tab\there":[{}]}]}`,
	`{"userId":1,"user_name":"x","ID":2,"_x":3,"123":4}`,
	facetsBody,
	`{"2026-10-26":[{"n":1}],"2026-10-27":[]}`,
	`[{"f3a9c1":1,"77b0e2":null},{"a1b2c3":2.5}]`,
	`"text"`, `0`, `null`, `[]`, `{}`, `[[]]`, `[{}]`,
}

// TestMutationsShowInShapeDiff: every mutation is a structural change that
// the shape diff shows, on a line of the mutation's own path, so paths are
// written exactly as shape writes them.
func TestMutationsShowInShapeDiff(t *testing.T) {
	for _, body := range mutationBases {
		base := mustDecode(t, body)
		for _, m := range Mutations(base, FieldSet{}) {
			diff := shape.Diff(shape.Of(base), shape.Of(m.Response))
			// A line at the path or below it: nesting an object moves
			// its keys, unwrapping may only drop a key of the merged
			// objects. The root is above every path.
			at := func(l string) bool {
				path, _, _ := strings.Cut(l, ": ")
				return m.Path == "$" || path == m.Path ||
					strings.HasPrefix(path, m.Path+".") || strings.HasPrefix(path, m.Path+"[]")
			}
			if m.Kind == MutAddField {
				line := keyPath(m.Path, m.Field) + ": added (string)"
				at = func(l string) bool { return l == line }
			}
			if !slices.ContainsFunc(diff, at) {
				t.Errorf("%s: %q: diff %q has no line at %s", body, m.Name, diff, m.Path)
			}
		}
	}
}

func TestMutationsNeverModifyBase(t *testing.T) {
	c := selectResultsConsumer(t)
	for _, body := range mutationBases {
		base, fresh := mustDecode(t, body), mustDecode(t, body)
		ms := Mutations(base, FieldSet{})
		c.MutationTest([]MutationBase{{Name: "b", Response: base}})
		if !reflect.DeepEqual(base, fresh) {
			t.Errorf("%s: base changed into %s", body, jsonText(t, base))
		}
		// Every mutation is a change of its own.
		for _, m := range ms {
			if reflect.DeepEqual(m.Response, fresh) {
				t.Errorf("%s: %q changed nothing", body, m.Name)
			}
		}
	}
}

func TestMutationsNamesUniqueAndStable(t *testing.T) {
	for _, body := range mutationBases {
		base := mustDecode(t, body)
		got := mutationNames(Mutations(base, FieldSet{}))
		if again := mutationNames(Mutations(base, FieldSet{})); !slices.Equal(got, again) {
			t.Errorf("%s: names differ between runs:\n%q\n%q", body, got, again)
		}
		seen := map[string]bool{}
		for _, n := range got {
			if seen[n] {
				t.Errorf("%s: name %q twice", body, n)
			}
			seen[n] = true
		}
	}
}

func TestMutationsCap(t *testing.T) {
	// Ten mutations a key: four at kNNN, six at kNNN.n. The last key's
	// value is a string, so the root's values differ in kind and it is an
	// object of 601 fields, not a map (see TestMutationsWideMap).
	var b strings.Builder
	b.WriteString("{")
	for i := range 600 {
		fmt.Fprintf(&b, `"k%03d":{"n":1},`, i)
	}
	b.WriteString(`"zz":"not like the others"}`)
	ms := Mutations(mustDecode(t, b.String()), FieldSet{})
	if got, want := len(ms), MaxMutations; got != want {
		t.Fatalf("len = %d, want %d", got, want)
	}
	// Two at the root, then 199 keys in full and eight of k199's ten.
	if got, want := ms[len(ms)-1].Name, "retype k199.n number->null"; got != want {
		t.Errorf("last kept = %q, want %q", got, want)
	}
	if got, want := ms[0].Name, "retype $ object->null"; got != want {
		t.Errorf("first = %q, want %q", got, want)
	}
}

// TestMutationsWorkBudget: running out of work keeps a prefix of the order.
func TestMutationsWorkBudget(t *testing.T) {
	base := mustDecode(t, `{"results":[`+strings.Repeat(`{"id":"a","score":1,"tags":["x"]},`, 19)+`{"id":"b","score":2,"tags":[]}]}`)
	full := mutationNames(Mutations(base, FieldSet{}))
	for _, work := range []int{0, 1, 10, 100, 1000} {
		var got []string
		eachMutationWithin(base, FieldSet{}, nil, work, func(m Mutation) bool {
			got = append(got, m.Name)
			return true
		})
		if len(got) >= len(full) || !slices.Equal(got, full[:len(got)]) {
			t.Errorf("work %d: got %d mutations %q, want a shorter prefix of %q", work, len(got), got, full)
		}
	}
}

func TestMutationsDeepInput(t *testing.T) {
	for _, body := range []string{
		strings.Repeat(`{"a":`, 128) + "1" + strings.Repeat("}", 128),
		strings.Repeat(`[`, 128) + strings.Repeat("]", 128),
		strings.Repeat(`[{"k":`, 64) + `"x"` + strings.Repeat("}]", 64),
	} {
		base := mustDecode(t, body)
		ms := Mutations(base, FieldSet{})
		if len(ms) == 0 {
			t.Errorf("%.20s...: no mutations", body)
		}
		for _, m := range ms {
			if d := strings.Count(m.Path, ".") + strings.Count(m.Path, "[]") + 1; d > shape.MaxDepth+1 {
				t.Errorf("%.20s...: %q is %d levels deep, beyond what shapes record", body, m.Name, d)
			}
			if diff := shape.Diff(shape.Of(base), shape.Of(m.Response)); len(diff) == 0 {
				t.Errorf("%.20s...: %q does not show in the shape", body, m.Name)
			}
		}
	}
}

// TestMutationsSharedValues: a value whose subtrees are shared (YAML
// aliases) can stand for billions of values; it gets no mutations rather
// than a walk that never ends.
func TestMutationsSharedValues(t *testing.T) {
	v := any([]any{1, "x"})
	for range 40 {
		v = []any{v, v}
	}
	if got := Mutations(v, FieldSet{}); len(got) != 0 {
		t.Errorf("len = %d, want 0", len(got))
	}
}

func TestRenamed(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"next_cursor", "nextCursor"},
		{"nextCursor", "next_cursor"},
		{"user_id2", "userId2"},
		{"a1B", "a1_b"},
		{"score", "Score"},
		{"Score", "score"},
		{"ID", "iD"},
		{"été", "Été"},
		{"a_1", "A_1"},
		{"_id", ""},
		{"123", ""},
		{"", ""},
	} {
		if got := renamed(tc.key); got != tc.want {
			t.Errorf("renamed(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

// survivorClasses maps each survivor's mutation name to its class.
func survivorClasses(r MutationReport) map[string]SurvivorClass {
	out := map[string]SurvivorClass{}
	for _, s := range r.Survivors {
		out[s.Mutation.Name] = s.Class
	}
	return out
}

func survivor(t *testing.T, r MutationReport, name string) Survivor {
	t.Helper()
	for _, s := range r.Survivors {
		if s.Mutation.Name == name {
			return s
		}
	}
	t.Fatalf("%q did not survive; survivors: %v", name, survivorClasses(r))
	return Survivor{}
}

func checkCounts(t *testing.T, r MutationReport) {
	t.Helper()
	if r.Killed+len(r.Survivors) != r.Total {
		t.Errorf("killed %d + survivors %d != total %d", r.Killed, len(r.Survivors), r.Total)
	}
	for _, s := range r.Survivors {
		if s.Mutation.Response != nil {
			t.Errorf("%q keeps its response", s.Mutation.Name)
		}
		if len(s.Diff) == 0 || s.Why == "" {
			t.Errorf("%q: diff %q, why %q; want both", s.Mutation.Name, s.Diff, s.Why)
		}
	}
}

// TestMutationTestPermissiveRule: a rule that hands over whatever results
// holds kills only what breaks its select, and every change inside the
// items survives as a blind spot.
func TestMutationTestPermissiveRule(t *testing.T) {
	c := mustCompile(t, Source{Name: "permissive", Select: `response.results`})
	base := mustDecode(t, seed000Body)
	r := c.MutationTest([]MutationBase{{Name: "seed 000", Response: base, MinResults: 1}})
	checkCounts(t, r)
	got := survivorClasses(r)
	for name, want := range map[string]SurvivorClass{
		"retype results[].score number->string": BlindSpot,
		"retype results[].score number->bool":   BlindSpot,
		"remove_field results[].score":          BlindSpot,
		"retype results[].id string->number":    BlindSpot,
		"non_object_items results":              BlindSpot,
		"retype results[] object->null":         BlindSpot,
		"add_field $":                           PositiveControl,
	} {
		if got[name] != want {
			t.Errorf("%q: class %q, want %q", name, got[name], want)
		}
	}
	for _, name := range []string{"wrap_list results", "empty_list results", "remove_field results", "unwrap_object $ to results"} {
		if _, ok := got[name]; ok {
			t.Errorf("%q survived, want it killed", name)
		}
	}
	// The wrapped list reaches select as an object: not a list.
	m, _ := findMutation(Mutations(base, c.ReadFields()), "wrap_list results")
	if v := c.Apply(Input{Response: m.Response, Status: 200}, 1); v.Err == nil || v.Err.Code != results.CodeSelectionNotList {
		t.Errorf("wrap_list results: verdict %+v, want selection_not_list", v.Err)
	}
	s := survivor(t, r, "retype results[].score number->string")
	if want := "results[].score turned from number into string and the rule still passes: it never checks the type of score, so code doing arithmetic on it would break"; s.Why != want {
		t.Errorf("why:\ngot  %s\nwant %s", s.Why, want)
	}
	if want := []string{"results[].score: number -> string"}; !slices.Equal(s.Diff, want) {
		t.Errorf("diff = %q, want %q", s.Diff, want)
	}
	if s.Base != "seed 000" || s.Accepted != "" {
		t.Errorf("base %q, accepted %q; want seed 000 and none", s.Base, s.Accepted)
	}
	if want := "an unrelated field was added and the rule still passes, as it must"; survivor(t, r, "add_field $").Why != want {
		t.Errorf("control why = %q, want %q", survivor(t, r, "add_field $").Why, want)
	}
	if !r.Failed() || len(r.KilledControls) != 0 {
		t.Errorf("Failed() = %v, killed controls %q; want true and none", r.Failed(), r.KilledControls)
	}
}

// TestMutationTestSeed000Rule: the strict two-layout rule kills every
// change of what it reads. The wrapped layout survives because the rule
// accepts it by design: exactly what accept_mutations is for.
func TestMutationTestSeed000Rule(t *testing.T) {
	base := MutationBase{Name: "original list layout", Response: mustDecode(t, seed000Body), MinResults: 1}
	wantSurvivors := map[string]SurvivorClass{
		"add_field $":                           PositiveControl,
		"wrap_list results":                     BlindSpot,
		"retype results[].title string->number": UnreadField,
		"retype results[].title string->null":   UnreadField,
	}

	c := selectResultsConsumer(t)
	r := c.MutationTest([]MutationBase{base})
	checkCounts(t, r)
	if got := survivorClasses(r); !reflect.DeepEqual(got, wantSurvivors) {
		t.Errorf("survivors = %v, want %v", got, wantSurvivors)
	}
	all := mutationNames(Mutations(base.Response, c.ReadFields()))
	for _, name := range []string{
		"retype results[].score number->string", "non_object_items results", "empty_list results",
		"unwrap_object $ to results", "remove_field results[].score", "retype results[].id string->number",
	} {
		if !slices.Contains(all, name) {
			t.Errorf("%q was not run", name)
		}
	}
	if got := survivor(t, r, "retype results[].title string->number").Why; !strings.HasSuffix(got, "harmless, the rule never reads title") {
		t.Errorf("unread why = %q", got)
	}
	if got := r.BlindSpots(); len(got) != 1 || got[0].Mutation.Name != "wrap_list results" {
		t.Errorf("BlindSpots() = %v, want wrap_list results", got)
	}
	if !r.Failed() || r.Score() >= 1 {
		t.Errorf("Failed() = %v, Score() = %v; want true and below 1", r.Failed(), r.Score())
	}

	for _, accept := range []struct {
		name string
		list []AcceptedMutation
		want string
	}{
		{"by name", []AcceptedMutation{{"wrap_list results", "both layouts are documented"}}, "both layouts are documented"},
		{"by kind", []AcceptedMutation{{"wrap_list", "wrapped lists are fine"}}, "wrapped lists are fine"},
		{"name over kind", []AcceptedMutation{{"wrap_list", "kind"}, {"wrap_list results", "name"}}, "name"},
	} {
		t.Run(accept.name, func(t *testing.T) {
			c := selectResultsConsumer(t)
			c.AcceptMutations = accept.list
			r := c.MutationTest([]MutationBase{base})
			if got := survivor(t, r, "wrap_list results"); got.Accepted != accept.want || got.Class != BlindSpot {
				t.Errorf("accepted %q class %s, want %q blind_spot", got.Accepted, got.Class, accept.want)
			}
			if r.Failed() || len(r.BlindSpots()) != 0 || r.Score() != 1 {
				t.Errorf("Failed() = %v, BlindSpots() = %v, Score() = %v; want false, none, 1", r.Failed(), r.BlindSpots(), r.Score())
			}
		})
	}

	// The reverse drift: on the items layout, lifting the list out of its
	// wrapper survives too.
	items := MutationBase{Name: "new items layout", MinResults: 1,
		Response: mustDecode(t, `{"results":{"items":[{"id":"doc_784","title":"API migration guide","score":0.93}]},"next_cursor":null}`)}
	r = c.MutationTest([]MutationBase{items})
	if got := survivor(t, r, "unwrap_object results to results.items"); got.Class != BlindSpot {
		t.Errorf("unwrap_object results to results.items: class %s, want blind_spot", got.Class)
	}
}

func TestMutationTestPositiveControl(t *testing.T) {
	base := MutationBase{Name: "b", Response: mustDecode(t, seed000Body), MinResults: 1}
	exact := Source{Name: "exact", Select: `len(keys(response)) == 2 ? response.results : fail("unexpected_keys", "want 2 keys")`}

	c := mustCompile(t, exact)
	r := c.MutationTest([]MutationBase{base, base})
	if want := []string{"add_field $", "add_field $"}; !slices.Equal(r.KilledControls, want) {
		t.Errorf("KilledControls = %q, want %q", r.KilledControls, want)
	}
	if _, ok := survivorClasses(r)["add_field $"]; ok {
		t.Errorf("add_field $ survived a rule that counts keys")
	}
	if !r.Failed() {
		t.Errorf("Failed() = false with a killed positive control")
	}

	exact.AcceptMutations = []AcceptedMutation{{"add_field", "the provider's schema forbids extra keys"}}
	c = mustCompile(t, exact)
	if r := c.MutationTest([]MutationBase{base}); len(r.KilledControls) != 0 {
		t.Errorf("accepted: KilledControls = %q, want none", r.KilledControls)
	}

	// Status and headers reach the mutated runs as they reach the base.
	c = mustCompile(t, Source{Name: "status", Select: `status == 200 && headers["x-api"] == "2" ? response.results : fail("wrong_api", "no")`})
	r = c.MutationTest([]MutationBase{{Name: "b", Response: base.Response, Headers: map[string]string{"X-Api": "2"}, MinResults: 1}})
	if got := survivorClasses(r)["add_field $"]; got != PositiveControl {
		t.Errorf("add_field $: class %q, want positive_control", got)
	}
}

func TestMutationTestEmptyListByDesign(t *testing.T) {
	c := mustCompile(t, Source{Name: "permissive", Select: `response.results`})
	for _, tc := range []struct {
		min  int
		want SurvivorClass // "" for killed
	}{{0, ByDesign}, {1, ""}} {
		r := c.MutationTest([]MutationBase{{Name: "b", Response: mustDecode(t, seed000Body), MinResults: tc.min}})
		if got := survivorClasses(r)["empty_list results"]; got != tc.want {
			t.Errorf("min_results %d: empty_list results class %q, want %q", tc.min, got, tc.want)
		}
	}
	r := c.MutationTest([]MutationBase{{Name: "b", Response: mustDecode(t, seed000Body)}})
	want := "the list at results was emptied and the rule still passes, as min_results 0 allows: an empty answer is valid by the probe's own contract"
	if got := survivor(t, r, "empty_list results").Why; got != want {
		t.Errorf("why:\ngot  %s\nwant %s", got, want)
	}
}

// TestMutationTestUnreadFields: changes the rule demonstrably skips are
// harmless, list-level ones included, and the sentence names the key.
func TestMutationTestUnreadFields(t *testing.T) {
	c := mustCompile(t, Source{Name: "ids", Select: `response.results`, Validate: `type(.id) == "string"`})
	body := `{"meta":{"id":"m"},"results":[{"id":"a","title":"t","tags":["x"]}]}`
	r := c.MutationTest([]MutationBase{{Name: "b", Response: mustDecode(t, body), MinResults: 1}})
	// Everything the rule reads is killed: results and its items by
	// select (min_results 1), id and the items' type by validate.
	want := map[string]SurvivorClass{
		"add_field $":                            PositiveControl,
		"retype meta object->null":               UnreadField,
		"retype meta.id string->number":          UnreadField,
		"retype meta.id string->null":            UnreadField,
		"wrap_list results[].tags":               UnreadField,
		"retype results[].tags list->null":       UnreadField,
		"empty_list results[].tags":              UnreadField,
		"retype results[].tags[] string->number": UnreadField,
		"retype results[].tags[] string->null":   UnreadField,
		"retype results[].title string->number":  UnreadField,
		"retype results[].title string->null":    UnreadField,
	}
	if got := survivorClasses(r); !reflect.DeepEqual(got, want) {
		t.Errorf("survivors = %v, want %v", got, want)
	}
	for name, why := range map[string]string{
		"retype meta.id string->number":          "meta.id turned from string into number and the rule still passes: harmless, the rule never reads meta",
		"wrap_list results[].tags":               "the list at results[].tags was wrapped in an object and the rule still passes: harmless, the rule never reads tags",
		"retype results[].tags[] string->number": "results[].tags[] turned from string into number and the rule still passes: harmless, the rule never reads tags",
	} {
		if got := survivor(t, r, name).Why; got != why {
			t.Errorf("%q why:\ngot  %s\nwant %s", name, got, why)
		}
	}
	if r.Failed() {
		t.Errorf("Failed() = true with only harmless survivors")
	}
}

// TestMutationTestShownByPassingBase: a survivor that turns a base into
// what another passing base already shows at the same path is the
// consumer's contract, not a blind spot; a failing base shows nothing.
func TestMutationTestShownByPassingBase(t *testing.T) {
	cursor := mustCompile(t, Source{Name: "cursor",
		Select: `type(response.next_cursor) in ["string", "nil"] ? response.results : fail("bad_cursor", "next_cursor is " + type(response.next_cursor))`})
	withCursor := MutationBase{Name: "more pages", MinResults: 1,
		Response: mustDecode(t, `{"results":[{"id":"a"}],"next_cursor":"c2"}`)}
	lastPage := MutationBase{Name: "last page", MinResults: 1,
		Response: mustDecode(t, `{"results":[{"id":"a"}],"next_cursor":null}`)}
	badCursor := MutationBase{Name: "bad cursor", MinResults: 1,
		Response: mustDecode(t, `{"results":[{"id":"a"}],"next_cursor":null,"x":1}`)}

	// Alone, the cursor base's null is a blind spot: nothing shows the
	// rule means to accept it.
	r := cursor.MutationTest([]MutationBase{withCursor})
	if got := survivor(t, r, "retype next_cursor string->null"); got.Class != BlindSpot {
		t.Errorf("one base: class %s, want blind_spot", got.Class)
	}

	r = cursor.MutationTest([]MutationBase{withCursor, lastPage})
	s := survivor(t, r, "retype next_cursor string->null")
	if s.Class != ByDesign || s.Base != "more pages" {
		t.Errorf("class %s on %q, want by_design on more pages", s.Class, s.Base)
	}
	want := `next_cursor turned from string into null and the rule still passes, by design: the passing base "last page" already shows that at next_cursor`
	if s.Why != want {
		t.Errorf("why:\ngot  %s\nwant %s", s.Why, want)
	}
	if want := []string{"next_cursor: string -> null"}; !slices.Equal(s.Diff, want) {
		t.Errorf("diff = %q, want %q", s.Diff, want)
	}
	for _, b := range r.BlindSpots() {
		if b.Mutation.Path == "next_cursor" && b.Mutation.Kind == MutRetype && b.Mutation.to == "null" {
			t.Errorf("still a blind spot: %q [%s]", b.Mutation.Name, b.Base)
		}
	}
	// The retype to a number no base shows is killed, as before.
	if _, ok := survivorClasses(r)["retype next_cursor string->number"]; ok {
		t.Errorf("retype next_cursor string->number survived")
	}

	// A base the rule does not pass shows nothing.
	strict := mustCompile(t, Source{Name: "strict",
		Select: `"x" in response ? fail("unexpected_x", "x") : type(response.next_cursor) in ["string", "nil"] ? response.results : fail("bad_cursor", "no")`})
	r = strict.MutationTest([]MutationBase{withCursor, badCursor})
	if got := survivor(t, r, "retype next_cursor string->null"); got.Class != BlindSpot {
		t.Errorf("with a failing base: class %s, want blind_spot", got.Class)
	}

	// Seed 000's two layouts: each base shows what wrap_list and
	// unwrap_object make of the other.
	list := MutationBase{Name: "original list layout", Response: mustDecode(t, seed000Body), MinResults: 1}
	items := MutationBase{Name: "new items layout", MinResults: 1,
		Response: mustDecode(t, `{"results":{"items":[{"id":"doc_784","title":"API migration guide","score":0.93}]},"next_cursor":null}`)}
	r = selectResultsConsumer(t).MutationTest([]MutationBase{list, items})
	for _, tc := range []struct{ name, base, shownBy string }{
		{"wrap_list results", "original list layout", "new items layout"},
		{"unwrap_object results to results.items", "new items layout", "original list layout"},
	} {
		var found bool
		for _, s := range r.Survivors {
			if s.Mutation.Name != tc.name || s.Base != tc.base {
				continue
			}
			found = true
			if s.Class != ByDesign || !strings.HasSuffix(s.Why, fmt.Sprintf("by design: the passing base %q already shows that at results", tc.shownBy)) {
				t.Errorf("%s [%s]: class %s, why %q", tc.name, tc.base, s.Class, s.Why)
			}
		}
		if !found {
			t.Errorf("%s [%s] did not survive", tc.name, tc.base)
		}
	}
	if r.Failed() {
		t.Errorf("Failed() = true; blind spots %v", r.BlindSpots())
	}
}

// TestMutationTestShowsEachKind: what each kind of mutation makes, and a
// base that shows it.
func TestMutationTestShowsEachKind(t *testing.T) {
	const base = `{"results":[{"id":"a","title":"t","tags":["x"],"score":1}],"page":{"ns":[1]}}`
	for _, tc := range []struct {
		mutation, other string
	}{
		{"retype results[].score number->string", `{"results":[{"score":"1"}]}`},
		{"retype results[].score number->null", `{"results":[{"score":1},{"score":null}]}`},
		{"remove_field results[].title", `{"results":[{"id":"b"}]}`},
		{"remove_field results[].title", `{"results":[{"id":"b","title":"u"},{"id":"c"}]}`},
		{"rename_key results[].title to Title", `{"results":[{"Title":"u"}]}`},
		{"empty_list results[].tags", `{"results":[{"tags":[]}]}`},
		{"non_object_items results", `{"results":["a"]}`},
		{"wrap_list results[].tags", `{"results":[{"tags":{"items":["x"]}}]}`},
		{"unwrap_object page to page.ns", `{"page":[2]}`},
		{"nest_field results[].score", `{"results":[{"score":{"value":1}}]}`},
	} {
		m, ok := findMutation(Mutations(mustDecode(t, base), FieldSet{}), tc.mutation)
		if !ok {
			t.Errorf("%s: no such mutation of the base", tc.mutation)
			continue
		}
		shown := NewMutator([]MutationBase{{Name: "base", Response: mustDecode(t, base)}, {Name: "other", Response: mustDecode(t, tc.other)}}).shownBases()
		if got := shownBy(shown, m); got != "other" {
			t.Errorf("%s: shown by %q, want other (%s)", tc.mutation, got, tc.other)
		}
		if got := shownBy(shown[:1], m); got != "" {
			t.Errorf("%s: the base alone shows it (%q)", tc.mutation, got)
		}
	}
}

func TestMutationTestSkipsFailingBases(t *testing.T) {
	c := selectResultsConsumer(t)
	r := c.MutationTest([]MutationBase{
		{Name: "empty", Response: mustDecode(t, `{"results":[]}`), MinResults: 1},
		{Name: "list layout", Response: mustDecode(t, seed000Body), MinResults: 1},
		{Name: "string score", Response: mustDecode(t, `{"results":[{"id":"a","score":"0.9"}]}`), MinResults: 1},
	})
	if want := []string{"list layout"}; !slices.Equal(r.Bases, want) {
		t.Errorf("Bases = %q, want %q", r.Bases, want)
	}
	if got, want := r.Skipped["empty"], "it does not pass: empty_selection: select returned no items: the answer's results had 0; at least 1 expected"; got != want {
		t.Errorf("Skipped[empty] = %q, want %q", got, want)
	}
	if got := r.Skipped["string score"]; !strings.HasPrefix(got, "it does not pass: rule_error: ") {
		t.Errorf("Skipped[string score] = %q, want a rule_error", got)
	}
	for _, s := range r.Survivors {
		if s.Base != "list layout" {
			t.Errorf("survivor %q from base %q", s.Mutation.Name, s.Base)
		}
	}
	if r.Consumer != "select_results" {
		t.Errorf("Consumer = %q", r.Consumer)
	}
}

func TestMutationReportScoreAndFailed(t *testing.T) {
	blind := Survivor{Class: BlindSpot}
	accepted := Survivor{Class: BlindSpot, Accepted: "by design"}
	for _, tc := range []struct {
		name   string
		r      MutationReport
		score  float64
		failed bool
	}{
		{"nothing to kill", MutationReport{}, 1, false},
		{"all killed", MutationReport{Total: 4, Killed: 4}, 1, false},
		{"one blind spot", MutationReport{Total: 4, Killed: 3, Survivors: []Survivor{blind}}, 0.75, true},
		{"accepted blind spot", MutationReport{Total: 4, Killed: 3, Survivors: []Survivor{accepted}}, 1, false},
		{"harmless survivors", MutationReport{Total: 6, Killed: 3, Survivors: []Survivor{
			{Class: UnreadField}, {Class: ByDesign}, {Class: PositiveControl}}}, 1, false},
		{"only blind spots", MutationReport{Total: 2, Survivors: []Survivor{blind, blind}}, 0, true},
		{"killed control", MutationReport{Total: 1, Killed: 1, KilledControls: []string{"add_field $"}}, 1, true},
	} {
		if got := tc.r.Score(); got != tc.score {
			t.Errorf("%s: Score() = %v, want %v", tc.name, got, tc.score)
		}
		if got := tc.r.Failed(); got != tc.failed {
			t.Errorf("%s: Failed() = %v, want %v", tc.name, got, tc.failed)
		}
	}
}

// FuzzMutations: Mutations never panics, never modifies its input, keeps
// to the cap, names each mutation once and changes something every time;
// MutationTest survives the same inputs.
func FuzzMutations(f *testing.F) {
	addBodies(f)
	for _, b := range mutationBases {
		f.Add([]byte(b))
	}
	strict, errs := Compile(Source{Name: "s", Select: selectResults, Validate: validateResults})
	if errs != nil {
		f.Fatal(errs)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		base, err := DecodeJSON(data)
		if err != nil {
			return
		}
		fresh, _ := DecodeJSON(data)
		for _, reads := range []FieldSet{{}, {Known: true, Names: names("results", "id")}} {
			ms := Mutations(base, reads)
			if len(ms) > MaxMutations {
				t.Fatalf("%d mutations, cap %d", len(ms), MaxMutations)
			}
			seen := map[string]bool{}
			for _, m := range ms {
				if seen[m.Name] {
					t.Fatalf("name %q twice", m.Name)
				}
				seen[m.Name] = true
				if reflect.DeepEqual(m.Response, fresh) {
					t.Fatalf("%q changed nothing", m.Name)
				}
			}
		}
		strict.MutationTest([]MutationBase{{Name: "fuzz", Response: base}})
		if !reflect.DeepEqual(base, fresh) {
			t.Fatalf("base changed")
		}
	})
}
