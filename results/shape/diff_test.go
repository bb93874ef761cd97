package shape_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results/shape"
)

// TestDiffGolden diffs testdata/diff/<case>/from.json against to.json and
// compares the lines, one per line, with diff.golden.
func TestDiffGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/diff/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no testdata/diff cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			from := shape.Of(decode(t, readFile(t, filepath.Join(dir, "from.json"))))
			to := shape.Of(decode(t, readFile(t, filepath.Join(dir, "to.json"))))
			var got strings.Builder
			for _, l := range shape.Diff(from, to) {
				got.WriteString(l + "\n")
			}
			checkGolden(t, filepath.Join(dir, "diff.golden"), []byte(got.String()))
		})
	}
}

// TestDiffSeed000 pins the drill of seed 000 in code as well as in the
// golden file: exactly one line.
func TestDiffSeed000(t *testing.T) {
	from := shape.Of(decode(t, readFile(t, "testdata/seed000_baseline.json")))
	to := shape.Of(decode(t, readFile(t, "testdata/seed000_drifted.json")))
	got := shape.Diff(from, to)
	want := []string{"results: list<object(3 keys)> -> object(1 keys)"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if from.Fingerprint() == to.Fingerprint() {
		t.Errorf("baseline and drifted share fingerprint %s", from.Fingerprint())
	}
}

// TestDiff covers shapes that JSON files cannot easily express: parsed
// unions, truncated objects and the zero Shape.
func TestDiff(t *testing.T) {
	wide := func(extra ...string) string {
		return "object{" + keys(shape.MaxKeys) + strings.Join(extra, "") + "}"
	}
	tests := []struct {
		name     string
		from, to string // canonical text; "" is the zero Shape
		want     []string
	}{
		{"equal", "object{a:number}", "object{a:number}", nil},
		{"union widened", "object{a:number}", "object{a:number|string}", []string{"a: number -> number|string"}},
		{"union narrowed", "list<null|number>", "list<number>", []string{"$[]: null|number -> number"}},
		{"same kinds, object part changed", "null|object{a:number}", "null|object{a:string}", []string{"a: number -> string"}},
		{"same kinds, list part changed", "list<bool>|string", "list<null>|string", []string{"$[]: bool -> null"}},
		{"list part emptied within a union", "list<bool>|string", "list<empty>|string", []string{"$: list<bool>|string -> list<empty>|string"}},
		{"object and list parts both changed", "list<bool>|object{a:null}", "list<number>|object{b:null}",
			[]string{"a: removed (null)", "b: added (null)", "$[]: bool -> number"}},
		{"marker to structure", "object{a:...}", "object{a:list<empty>}", []string{"a: ... -> list<empty>"}},
		{"path order", `object{a:object{b:null},a-b:null,"a.b":null}`, `object{a:object{b:bool},a-b:bool,"a.b":bool}`,
			[]string{"a.b: null -> bool", "a-b: null -> bool", `"a.b": null -> bool`}},
		{"quoted key path", `object{"x y":object{"":null}}`, `object{"x y":object{"":number}}`, []string{`"x y"."": null -> number`}},
		{"zero to shape", "", "object{}", []string{"$: none -> object(0 keys)"}},
		{"shape to zero", "null", "", []string{"$: null -> none"}},
		{"zero to zero", "", "", nil},
		{"truncated, one more key", wide(",...44"), wide(",...45"), []string{"$: object(300 keys) -> object(301 keys)"}},
		{"truncated, same count", wide(",...44"), wide(",...44"), nil},
		{"truncated from untruncated", wide(), wide(",...1"), []string{"$: object(256 keys) -> object(257 keys)"}},
		{"kept key retyped in truncated object",
			strings.Replace(wide(",...3"), "k007:number", "k007:string", 1), wide(",...3"),
			[]string{"k007: string -> number"}},
		{"key after the other side's cut is unknown, not added",
			"object{" + keys(shape.MaxKeys) + ",...1}",
			"object{" + keys(shape.MaxKeys)[len("k000:number,"):] + ",k255x:null,...2}",
			[]string{"$: object(257 keys) -> object(258 keys)", "k000: removed (number)"}},
		{"key after the other side's cut is unknown, not removed",
			"object{" + keys(shape.MaxKeys) + ",...1}",
			"object{" + strings.TrimSuffix(keys(shape.MaxKeys), ",k255:number") + ",k2540:null,...1}",
			[]string{"k2540: added (null)"}},
	}
	parse := func(t *testing.T, text string) shape.Shape {
		t.Helper()
		if text == "" {
			return shape.Shape{}
		}
		s, err := shape.Parse(text)
		if err != nil {
			t.Fatalf("Parse(%.80s): %v", text, err)
		}
		return s
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, to := parse(t, tt.from), parse(t, tt.to)
			if got := shape.Diff(from, to); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDiffSymmetric checks on every golden case that the reverse diff has
// as many lines, with added and removed swapped.
func TestDiffSymmetric(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/diff/*")
	for _, dir := range dirs {
		from := shape.Of(decode(t, readFile(t, filepath.Join(dir, "from.json"))))
		to := shape.Of(decode(t, readFile(t, filepath.Join(dir, "to.json"))))
		fwd, back := shape.Diff(from, to), shape.Diff(to, from)
		if got, want := len(back), len(fwd); got != want {
			t.Errorf("%s: reverse diff has %d lines, want %d", dir, got, want)
		}
		if got, want := strings.Count(strings.Join(back, "\n"), ": added ("), strings.Count(strings.Join(fwd, "\n"), ": removed ("); got != want {
			t.Errorf("%s: reverse diff has %d added lines, want %d", dir, got, want)
		}
	}
}
