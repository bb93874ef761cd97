package consumers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results/shape"
)

// keyedCases hold bodies whose objects at path's map are keyed by ids of
// a form shape.Of does not call data (src_001): only keys that change
// from one answer to the next tell them from names.
var keyedCases = []struct {
	name   string
	bodies []string // the first one has the key src_001
	path   string   // where count is, written as drift writes it
}{
	{"top level", []string{
		`{"results":[{"id":"a"}],"facets":{"src_001":{"count":1},"src_002":{"count":2},"src_003":{"count":3}}}`,
		`{"results":[{"id":"b"}],"facets":{"src_007":{"count":4},"src_042":{"count":5},"src_013":{"count":6}}}`,
	}, "facets.*.count"},
	{"in a list's elements", []string{
		`{"results":[{"id":"a","facets":{"src_001":{"count":1},"src_002":{"count":2}}},{"id":"b","facets":{"src_003":{"count":3}}}]}`,
		`{"results":[{"id":"c","facets":{"src_007":{"count":4},"src_042":{"count":5},"src_013":{"count":6}}}]}`,
	}, "results[].facets.*.count"},
	{"in a map", []string{
		`{"by_day":{"2026-10-26":{"src_001":{"count":1},"src_002":{"count":2},"src_003":{"count":3}}}}`,
		`{"by_day":{"2026-10-27":{"src_007":{"count":4},"src_042":{"count":5},"src_013":{"count":6}}}}`,
	}, "by_day.*.*.count"},
	{"under a key that reads as data", []string{
		`{"stats":{"name":"x","42":{"src_001":{"count":1},"src_002":{"count":2},"src_003":{"count":3}}}}`,
		`{"stats":{"name":"y","42":{"src_007":{"count":4},"src_042":{"count":5},"src_013":{"count":6}}}}`,
	}, "stats.42.*.count"},
	{"at the root", []string{
		`{"src_001":{"count":1},"src_002":{"count":2},"src_003":{"count":3}}`,
		`{"src_007":{"count":4},"src_042":{"count":5},"src_013":{"count":6}}`,
	}, "$.*.count"},
}

// wholeResponse passes every answer: it reads no key, so every mutation
// survives and every path shows in the report.
func wholeResponse(t *testing.T) *Consumer {
	return mustCompile(t, Source{Name: "whole", Select: `[response]`})
}

// checkKeyed checks that every survivor of r names the keyed objects by
// path, as drift's diff lines do, and that count's retype says so.
func checkKeyed(t *testing.T, r MutationReport, path string) {
	t.Helper()
	checkCounts(t, r)
	var retyped int
	values := strings.TrimSuffix(path, ".count") // the map's values
	for _, s := range r.Survivors {
		if strings.Contains(s.Mutation.Name, "src_") {
			t.Errorf("[%s] %q names a key of a map", s.Base, s.Mutation.Name)
		}
		// Nesting the map itself makes its keys those of one value, as
		// drift would see it; below it, no line names a key.
		if strings.HasPrefix(s.Mutation.Path, values) && strings.Contains(strings.Join(s.Diff, "\n"), "src_") {
			t.Errorf("[%s] %q: diff %q names a key of a map", s.Base, s.Mutation.Name, s.Diff)
		}
		if s.Mutation.Name != "retype "+path+" number->string" {
			continue
		}
		retyped++
		if s.Mutation.Path != path || s.Mutation.Field != "count" {
			t.Errorf("[%s] path %q field %q, want %s and count", s.Base, s.Mutation.Path, s.Mutation.Field, path)
		}
		if want := []string{path + ": number -> string"}; !slices.Equal(s.Diff, want) {
			t.Errorf("[%s] diff = %q, want %q", s.Base, s.Diff, want)
		}
	}
	if retyped != len(r.Bases) {
		t.Errorf("retype %s number->string survived on %d bases, want all %d; survivors %v", path, retyped, len(r.Bases), survivorClasses(r))
	}
}

// TestMutationTestKeyedAcrossBases: keys that change from one passing base
// to the next are learned as a map's, as the daemon's profile learns them
// from its answers, so mutations name facets.*.count where drift writes
// facets.*, not one path per key.
func TestMutationTestKeyedAcrossBases(t *testing.T) {
	c := wholeResponse(t)
	for _, tc := range keyedCases {
		t.Run(tc.name, func(t *testing.T) {
			var bases []MutationBase
			for i, body := range tc.bodies {
				v := mustDecode(t, body)
				if strings.Contains(shape.Of(v).String(), "map<object{count") {
					t.Fatalf("shape.Of(%s) already calls it a map; the test needs keys only answers together tell", body)
				}
				bases = append(bases, MutationBase{Name: "base " + string(rune('a'+i)), Response: v, MinResults: 1})
			}

			// One base alone tells nothing: its keys are names.
			alone := c.MutationTest(bases[:1])
			if !slices.ContainsFunc(alone.Survivors, func(s Survivor) bool { return strings.Contains(s.Mutation.Name, "src_001") }) {
				t.Fatalf("one base: no mutation names src_001: %v", survivorClasses(alone))
			}

			r := c.MutationTest(bases)
			if len(r.Bases) != len(bases) {
				t.Fatalf("bases %q, want all %d", r.Bases, len(bases))
			}
			checkKeyed(t, r, tc.path)
		})
	}
}

// TestMutationTestKeyedByProfile: a base recorded from a probe is judged
// by that probe's profile, which learned the keys from its answers; the
// base alone would not tell.
func TestMutationTestKeyedByProfile(t *testing.T) {
	c := wholeResponse(t)
	for _, tc := range keyedCases {
		t.Run(tc.name, func(t *testing.T) {
			var p shape.Profile
			at := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
			for i := range shape.ProfileWarmup {
				p.Learn(shape.Of(mustDecode(t, tc.bodies[i%2])), at.Add(time.Duration(i)*time.Minute))
			}
			recorded := MutationBase{Name: "db: search", Response: mustDecode(t, tc.bodies[0]), MinResults: 1, Profile: &p}
			checkKeyed(t, c.MutationTest([]MutationBase{recorded}), tc.path)
		})
	}
}

// TestMutationTestShownAtKeyedPath: what another base shows below a keyed
// map is by design at the path both are named by.
func TestMutationTestShownAtKeyedPath(t *testing.T) {
	c := wholeResponse(t)
	r := c.MutationTest([]MutationBase{
		{Name: "counted", MinResults: 1, Response: mustDecode(t, keyedCases[0].bodies[0])},
		{Name: "uncounted", MinResults: 1, Response: mustDecode(t, `{"results":[{"id":"b"}],"facets":{"src_007":{"count":null},"src_042":{"count":null},"src_013":{"count":null}}}`)},
	})
	s := survivor(t, r, "retype facets.*.count number->null")
	if s.Class != ByDesign || !strings.HasSuffix(s.Why, `the passing base "uncounted" already shows that at facets.*.count`) {
		t.Errorf("class %s, why %q; want by_design, shown by uncounted", s.Class, s.Why)
	}
}
