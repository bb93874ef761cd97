package shape_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results/shape"
)

// TestOfMaps pins the map rule (see the package documentation, Maps): what
// collapses to map<V> and, as important, what never does.
func TestOfMaps(t *testing.T) {
	wide := func(kinds func(i int) string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range shape.MapMinKeys + 1 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"counter_%c%c":%s`, 'a'+i/26, 'a'+i%26, kinds(i))
		}
		b.WriteString("}")
		return b.String()
	}
	tests := []struct {
		name, body, want string
	}{
		{"hex ids", `{"facets":{"f3a9c1":{"n":1},"77b0e2":{"n":2,"label":"x"}}}`,
			"object{facets:map<object{label?:string,n:number}>}"},
		{"one hex id", `{"facets":{"f3a9c1":{"n":1}}}`, "object{facets:map<object{n:number}>}"},
		{"uuids", `{"users":{"0b7e8f2c-3d4a-4c5e-9f60-1a2b3c4d5e6f":"ann"}}`, "object{users:map<string>}"},
		{"dates", `{"daily":{"2026-10-25":3,"2026-10-26":4}}`, "object{daily:map<number>}"},
		{"months", `{"monthly":{"2026-09":3,"2026-10":4}}`, "object{monthly:map<number>}"},
		{"timestamps", `{"t":{"2026-10-26T13:07:00Z":1}}`, "object{t:map<number>}"},
		{"numbers", `{"by_status":{"200":10,"503":1,"-1":0}}`, "object{by_status:map<number>}"},
		{"null values fit any", `{"m":{"1":{"a":1},"2":null}}`, "object{m:map<null|object{a:number}>}"},
		{"root map", `{"1":true,"2":false}`, "map<bool>"},
		{"map in list elements merges", `[{"1":"a"},{"2":"b"}]`, "list<map<string>>"},
		{"nested maps", `{"1":{"2026-10-26":1}}`, "map<map<number>>"},
		{"wide one-kind object", wide(func(int) string { return "1" }), "map<number>"},

		{"field names", `{"id":"doc_784","title":"API","score":0.93}`, "object{id:string,score:number,title:string}"},
		{"empty object", `{"facets":{}}`, "object{facets:object{}}"},
		{"values of two kinds", `{"1":"a","2":3}`, "object{1:string,2:number}"},
		{"one name among ids", `{"f3a9c1":1,"total":2}`, "object{f3a9c1:number,total:number}"},
		{"hex letters only are words", `{"facade":1,"decade":2}`, "object{decade:number,facade:number}"},
		{"short hex", `{"a1":1,"b2":2}`, "object{a1:number,b2:number}"},
		{"mixed-case hex", `{"AbC123":1}`, "object{AbC123:number}"},
		{"not a date", `{"2026-1":1}`, "object{2026-1:number}"},
		{"wide object of two kinds", wide(func(i int) string { return [...]string{"1", `"x"`}[i%2] }), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := shape.Of(decode(t, []byte(tt.body)))
			got := s.String()
			if tt.want == "" {
				if strings.Contains(got, "map<") {
					t.Errorf("got %s, want no map", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if p, err := shape.Parse(got); err != nil || p.Fingerprint() != s.Fingerprint() {
				t.Errorf("Parse(%s): %v", got, err)
			}
		})
	}
}

// TestMapFingerprintStable: answers whose map keys differ share one
// fingerprint; a change of the values' shape is a new one, and a diff line.
func TestMapFingerprintStable(t *testing.T) {
	a := shape.Of(decode(t, []byte(`{"facets":{"f3a9c1":{"n":1}},"results":[]}`)))
	b := shape.Of(decode(t, []byte(`{"facets":{"0d1e2f3a":{"n":7},"9a8b7c":{"n":2}},"results":[]}`)))
	if a.Fingerprint() != b.Fingerprint() {
		t.Errorf("fingerprints %s and %s differ for maps with other keys: %s vs %s", a.Fingerprint(), b.Fingerprint(), a, b)
	}
	c := shape.Of(decode(t, []byte(`{"facets":{"f3a9c1":{"n":"1"}},"results":[]}`)))
	if a.Fingerprint() == c.Fingerprint() {
		t.Errorf("a retyped map value kept the fingerprint %s", a.Fingerprint())
	}
	if got, want := fmt.Sprint(shape.Diff(a, c)), "[facets.*.n: number -> string]"; got != want {
		t.Errorf("Diff: got %s, want %s", got, want)
	}
	if got, want := c.Summary(), "object(2 keys)"; got != want {
		t.Errorf("Summary: got %s, want %s", got, want)
	}
	m := shape.Of(decode(t, []byte(`{"facets":{"f3a9c1":{"n":1}}}`)))
	o := shape.Of(decode(t, []byte(`{"facets":{"n":1}}`)))
	if got, want := fmt.Sprint(shape.Diff(m, o)), "[facets: map<object(1 keys)> -> object(1 keys)]"; got != want {
		t.Errorf("Diff: got %s, want %s", got, want)
	}
}

// TestCollapse: a shape text written before maps, read back and collapsed,
// is the shape of the same body today.
func TestCollapse(t *testing.T) {
	for _, body := range []string{
		`{"facets":{"f3a9c1":{"n":1},"77b0e2":{"n":2}},"results":[{"id":"a"}]}`,
		`{"daily":{"2026-10-25":[{"1":true}]}}`,
		`{"id":"doc_784","title":"API"}`,
	} {
		v := decode(t, []byte(body))
		old := oldText(v)
		p, err := shape.Parse(old)
		if err != nil {
			t.Fatalf("Parse(%s): %v", old, err)
		}
		if got, want := shape.Collapse(p).String(), shape.Of(v).String(); got != want {
			t.Errorf("Collapse(%s): got %s, want %s", old, got, want)
		}
	}
}

// oldText writes the canonical text of v as it was before maps: every
// object with its keys.
func oldText(v any) string {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = shape.Key(k) + ":" + oldText(v[k])
		}
		return "object{" + strings.Join(parts, ",") + "}"
	case []any:
		if len(v) == 0 {
			return "list<empty>"
		}
		return "list<" + oldText(v[0]) + ">"
	}
	return shape.Of(v).String()
}
