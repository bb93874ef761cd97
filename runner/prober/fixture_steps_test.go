package prober

import (
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
)

// pagedProbe is a two-step probe whose first step's answer may carry a
// cursor or null, and keys its facets by ids (src_001) that change from
// one fixture to the next.
func pagedProbe(t *testing.T) *checks.Probe {
	t.Helper()
	cfg, err := checks.Parse("checks.yaml", []byte(`version: 1
consumers:
  - name: pages
    select: 'type(response.next_cursor) in ["string", "nil"] ? response.results : fail("bad_cursor", "next_cursor is " + type(response.next_cursor))'
probes:
  - name: paged
    steps:
      - name: list
        request: {url: "http://127.0.0.1:9/list"}
        consumer: pages
      - name: done
        request: {url: "http://127.0.0.1:9/done"}
    fixtures:
      - name: more pages
        answers:
          list: {response: {results: [{id: a}], next_cursor: c2, facets: {src_001: {count: 1}, src_002: {count: 2}, src_003: {count: 3}}}}
          done: {status: 200}
        expect: pass
      - name: last page
        answers:
          list: {response: {results: [{id: b}], next_cursor: null, facets: {src_007: {count: 4}, src_042: {count: 5}, src_013: {count: 6}}}}
          done: {status: 200}
        expect: pass
`), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Probes[0]
}

func findSurvivor(r consumers.MutationReport, base, name string) *consumers.Survivor {
	for i, s := range r.Survivors {
		if s.Base == base && s.Mutation.Name == name {
			return &r.Survivors[i]
		}
	}
	return nil
}

// TestMutateProbeFixturesShownByAnother: a step's change into what the
// same step's answer in another passing fixture shows is by design, as it
// is for a consumer's fixtures; alone, the fixture has nothing showing it.
func TestMutateProbeFixturesShownByAnother(t *testing.T) {
	p := pagedProbe(t)
	e := NewExecutor(Options{})
	const base, name = "more pages: step list", "retype next_cursor string->null"

	alone := e.MutateProbeFixtures(p, []checks.ProbeFixture{p.Fixtures[0]})
	if s := findSurvivor(alone, base, name); s == nil || s.Class != consumers.BlindSpot {
		t.Fatalf("alone: %s = %+v, want a blind spot", name, s)
	}

	r := e.MutateProbeFixtures(p, p.Fixtures)
	if want := []string{"more pages: step list", "last page: step list"}; strings.Join(r.Bases, ",") != strings.Join(want, ",") {
		t.Errorf("bases %q, want %q", r.Bases, want)
	}
	s := findSurvivor(r, base, name)
	if s == nil {
		t.Fatalf("%s did not survive", name)
	}
	want := `next_cursor turned from string into null and the rule still passes, by design: the passing base "last page: step list" already shows that at next_cursor`
	if s.Class != consumers.ByDesign || s.Why != want {
		t.Errorf("class %s, why\n%s\nwant by_design,\n%s", s.Class, s.Why, want)
	}
	for _, b := range r.BlindSpots() {
		if b.Mutation.Name == name {
			t.Errorf("still a blind spot on %s", b.Base)
		}
	}
}

// TestMutateProbeFixturesKeyed: a step's answers are judged together for
// maps too: facets' ids change from fixture to fixture, so its values
// are one path, facets.*, as drift would name them.
func TestMutateProbeFixturesKeyed(t *testing.T) {
	p := pagedProbe(t)
	r := NewExecutor(Options{}).MutateProbeFixtures(p, p.Fixtures)
	for _, base := range r.Bases {
		s := findSurvivor(r, base, "retype facets.*.count number->string")
		if s == nil {
			t.Errorf("%s: no survivor retype facets.*.count number->string", base)
			continue
		}
		if strings.Join(s.Diff, ",") != "facets.*.count: number -> string" {
			t.Errorf("%s: diff %q", base, s.Diff)
		}
	}
	for _, s := range r.Survivors {
		if strings.Contains(s.Mutation.Name, "src_") {
			t.Errorf("%s: %q names a key of facets", s.Base, s.Mutation.Name)
		}
	}
}
