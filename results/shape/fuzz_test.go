package shape_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results/shape"
)

// seedBodies adds every JSON input of the golden tests to the corpus.
func seedBodies(f *testing.F) [][]byte {
	f.Helper()
	names, _ := filepath.Glob("testdata/*.json")
	more, _ := filepath.Glob("testdata/diff/*/*.json")
	var bodies [][]byte
	for _, name := range append(names, more...) {
		bodies = append(bodies, readFile(f, name))
	}
	if len(bodies) == 0 {
		f.Fatal("no testdata JSON to seed the corpus")
	}
	return bodies
}

// FuzzOf checks that the shape of any JSON body survives String and Parse
// unchanged, and that json.Number decoding gives the same shape.
func FuzzOf(f *testing.F) {
	for _, b := range seedBodies(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v any
		if json.Unmarshal(body, &v) != nil {
			return
		}
		s := shape.Of(v)
		p, err := shape.Parse(s.String())
		if err != nil {
			t.Fatalf("Parse(%q): %v", s.String(), err)
		}
		if got, want := p.String(), s.String(); got != want {
			t.Fatalf("String after Parse: got %q, want %q", got, want)
		}
		if got, want := p.Fingerprint(), s.Fingerprint(); got != want {
			t.Fatalf("Fingerprint after Parse: got %s, want %s", got, want)
		}
		if got, want := p.Summary(), s.Summary(); got != want {
			t.Fatalf("Summary after Parse: got %s, want %s", got, want)
		}
		if d := shape.Diff(s, p); d != nil {
			t.Fatalf("Diff(s, Parse(String())): got %q, want nil", d)
		}
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		var n any
		if d.Decode(&n) == nil {
			if got, want := shape.Of(n).String(), s.String(); got != want {
				t.Fatalf("with json.Number: got %q, want %q", got, want)
			}
		}
	})
}

// FuzzParse checks that Parse never panics, and that any text it accepts is
// its own canonical text.
func FuzzParse(f *testing.F) {
	for _, b := range seedBodies(f) {
		var v any
		if json.Unmarshal(b, &v) == nil {
			f.Add(shape.Of(v).String())
		}
	}
	for _, s := range []string{"", "...", "list<empty>", "object{}", `object{"\x00":null}`, "object{a:...1}", "null|", "list<list<"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := shape.Parse(text)
		if err != nil {
			return
		}
		if got := s.String(); got != text {
			t.Fatalf("String: got %q, want %q", got, text)
		}
		if len(s.Fingerprint()) != 16 || s.Summary() == "" {
			t.Fatalf("Fingerprint %q, Summary %q", s.Fingerprint(), s.Summary())
		}
		if d := shape.Diff(s, s); d != nil {
			t.Fatalf("Diff(s, s): got %q", d)
		}
		shape.Diff(s, shape.Shape{})
		shape.Diff(shape.Of(nil), s)
	})
}

// FuzzDiff checks that two bodies diff to no lines exactly when their
// shapes are equal, and that the reverse diff has as many lines.
func FuzzDiff(f *testing.F) {
	bodies := seedBodies(f)
	for i := range bodies {
		f.Add(bodies[i], bodies[(i+1)%len(bodies)])
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var va, vb any
		if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
			return
		}
		sa, sb := shape.Of(va), shape.Of(vb)
		fwd, back := shape.Diff(sa, sb), shape.Diff(sb, sa)
		if got, want := len(fwd) == 0, sa.String() == sb.String(); got != want {
			t.Fatalf("%s vs %s: diff %q", sa, sb, fwd)
		}
		if len(fwd) != len(back) {
			t.Fatalf("%s vs %s: diff %q, reverse %q", sa, sb, fwd, back)
		}
		for _, l := range fwd {
			if strings.Count(l, ": ") < 1 {
				t.Fatalf("line %q has no path", l)
			}
		}
	})
}

// FuzzProfile feeds a profile the answers a, b, a, b, ... and checks that
// observing never panics, that Check changes nothing, that the stored form
// survives a round trip byte for byte and judges as the profile did, and
// that once both answers were seen often enough neither drifts.
func FuzzProfile(f *testing.F) {
	bodies := seedBodies(f)
	for i := range bodies {
		f.Add(bodies[i], bodies[(i+3)%len(bodies)])
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var va, vb any
		if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
			return
		}
		sa, sb := shape.Of(va), shape.Of(vb)
		var p shape.Profile
		at := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
		for i := range 2 * shape.ProfileWarmup {
			s := sa
			if i%2 == 1 {
				s = sb
			}
			if i == shape.ProfileWarmup {
				checkStoredForm(t, &p, s)
			}
			r, _ := p.Observe(s, at.Add(time.Duration(i)*time.Minute))
			for _, l := range r.Lines {
				if !strings.Contains(l, ": ") || strings.Contains(l, "\n") {
					t.Fatalf("line %q", l)
				}
			}
		}
		checkStoredForm(t, &p, sa)
		for _, s := range []shape.Shape{sa, sb} {
			if r := p.Check(s); r.Lines != nil || r.Novel {
				t.Fatalf("after learning %s and %s, %s drifts: %+v", sa, sb, s, r)
			}
		}
		if l := p.Learned(); l.String() == "" {
			t.Fatalf("learned nothing from %s and %s", sa, sb)
		}
	})
}

// checkStoredForm checks that Check leaves p as it is, and that p's stored
// form survives a round trip byte for byte and judges s as p does.
func checkStoredForm(t *testing.T, p *shape.Profile, s shape.Shape) {
	t.Helper()
	before, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	r := p.Check(s)
	if after, _ := json.Marshal(p); !bytes.Equal(before, after) {
		t.Fatalf("Check changed the profile")
	}
	var q shape.Profile
	if err := json.Unmarshal(before, &q); err != nil {
		t.Fatalf("Unmarshal(%s): %v", before, err)
	}
	if again, _ := json.Marshal(&q); !bytes.Equal(before, again) {
		t.Fatalf("stored form changed by a round trip:\n%s\n%s", before, again)
	}
	if rq := q.Check(s); fmt.Sprint(rq) != fmt.Sprint(r) {
		t.Fatalf("the stored form judges %+v, the profile %+v", rq, r)
	}
}

// FuzzProfileStoredForm checks that reading any stored form never panics,
// and that a profile read from one can judge, learn and be written again.
func FuzzProfileStoredForm(f *testing.F) {
	f.Add([]byte(`{"v":1,"answers":6,"last":1793020260000,"root":{"seen":{"n":6,"last":1793020260000},"kinds":{"object":{"n":6,"last":1793020260000}},"fields":{"a":{"present":{"n":6,"last":1793020260000},"shape":{"seen":{"n":6,"last":1},"kinds":{"map":{"n":2,"last":1}},"keyed":true}}}}}`))
	f.Add(readFile(f, "testdata/profile/stored_form.golden"))
	f.Fuzz(func(t *testing.T, stored []byte) {
		var p shape.Profile
		if json.Unmarshal(stored, &p) != nil {
			return
		}
		s := shape.Of(decode(t, []byte(`{"a":{"f3a9c1":{"n":1}},"results":[{"id":"x"}],"b":[1,"x",null]}`)))
		p.Check(s)
		p.Canonical(s)
		p.Observe(s, time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC))
		if _, err := json.Marshal(&p); err != nil {
			t.Fatal(err)
		}
		p.Learned()
	})
}
