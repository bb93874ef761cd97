package shape_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results/shape"
)

// decode unmarshals a JSON body the way toolpulse does, into any.
func decode(t testing.TB, body []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

// decodeNumbers unmarshals with UseNumber, so numbers are json.Number.
func decodeNumbers(t testing.TB, body []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode with UseNumber: %v", err)
	}
	return v
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkGolden compares got with the golden file, or rewrites it with -update.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	testkit.Golden(t, golden, got)
}

// goldenText is the content of a shape golden file.
func goldenText(s shape.Shape) []byte {
	return fmt.Appendf(nil, "canonical: %s\nfingerprint: %s\nsummary: %s\n", s, s.Fingerprint(), s.Summary())
}

func shapeInputs(t testing.TB) []string {
	t.Helper()
	names, err := filepath.Glob("testdata/*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no testdata/*.json: %v", err)
	}
	return names
}

// TestGolden checks canonical text, fingerprint and summary of every
// testdata/*.json against its .golden file, and that Parse reads the golden
// canonical text back to the same shape (as the store will).
func TestGolden(t *testing.T) {
	for _, in := range shapeInputs(t) {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			body := readFile(t, in)
			s := shape.Of(decode(t, body))
			golden := strings.TrimSuffix(in, ".json") + ".golden"
			checkGolden(t, golden, goldenText(s))

			if got, want := shape.Of(decodeNumbers(t, body)).String(), s.String(); got != want {
				t.Errorf("with json.Number: got %s, want %s", got, want)
			}

			p, err := shape.Parse(s.String())
			if err != nil {
				t.Fatalf("Parse(String()): %v", err)
			}
			if got, want := p.String(), s.String(); got != want {
				t.Errorf("Parse(String()).String(): got %s, want %s", got, want)
			}
			if got, want := p.Fingerprint(), s.Fingerprint(); got != want {
				t.Errorf("Parse(String()).Fingerprint(): got %s, want %s", got, want)
			}
			if got, want := p.Summary(), s.Summary(); got != want {
				t.Errorf("Parse(String()).Summary(): got %s, want %s", got, want)
			}
			if d := shape.Diff(s, p); d != nil {
				t.Errorf("Diff(s, Parse(String())): got %q, want nil", d)
			}
		})
	}
}

// TestGoldenFingerprintsDistinct checks that golden cases with different
// canonical text have different fingerprints.
func TestGoldenFingerprintsDistinct(t *testing.T) {
	seen := map[string]string{} // fingerprint -> canonical text
	for _, in := range shapeInputs(t) {
		s := shape.Of(decode(t, readFile(t, in)))
		if prev, ok := seen[s.Fingerprint()]; ok && prev != s.String() {
			t.Errorf("%s: fingerprint %s also belongs to %s", in, s.Fingerprint(), prev)
		}
		seen[s.Fingerprint()] = s.String()
	}
}

var fingerprintRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

func TestFingerprintSameShape(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"key order", `{"a":1,"b":"x","c":{"d":null,"e":true}}`, `{"c":{"e":false,"d":null},"b":"y","a":2}`},
		{"values", `{"id":"doc_784","score":0.93}`, `{"id":"","score":-1e10}`},
		{"int and float", `[1, 2]`, `[0.5, -3e-7]`},
		{"list length", `{"results":[{"id":"a"}]}`, `{"results":[{"id":"b"},{"id":"c"},{"id":"d"}]}`},
		{"element order", `[1,"x",null]`, `[null,"y",2,3]`},
		{"keys spread over elements", `[{"a":1},{"b":"x"}]`, `[{"a":2},{"b":"y"},{"a":3,"b":"z"}]`},
		{"optional in some elements", `[{"a":1,"b":"x"},{"a":2}]`, `[{"a":3},{"a":4,"b":"y"},{"a":5,"b":"z"}]`},
		{"whitespace", `{"a":[1,2]}`, "{\n  \"a\" : [ 1 , 2 ]\n}"},
		{"seed000 baseline", string(readFile(t, "testdata/seed000_baseline.json")),
			`{"next_cursor":null,"results":[{"score":0.1,"id":"x","title":"y"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := shape.Of(decode(t, []byte(tt.a))), shape.Of(decode(t, []byte(tt.b)))
			if got, want := b.Fingerprint(), a.Fingerprint(); got != want {
				t.Errorf("got %s (%s), want %s (%s)", got, b, want, a)
			}
			if !fingerprintRE.MatchString(a.Fingerprint()) {
				t.Errorf("fingerprint %q is not 16 lowercase hex characters", a.Fingerprint())
			}
		})
	}
}

func TestFingerprintDifferentShapes(t *testing.T) {
	bodies := []string{
		`null`, `true`, `1`, `"1"`, `{}`, `[]`,
		`[null]`, `[true]`, `[1]`, `["1"]`, `[{}]`, `[[]]`, `[[1]]`, `[1,"1"]`, `[1,null]`,
		`{"a":null}`, `{"a":true}`, `{"a":1}`, `{"a":"1"}`, `{"a":{}}`, `{"a":[]}`, `{"b":1}`,
		`{"a":1,"b":1}`, `{"a":{"b":1}}`, `{"a.b":1}`, `{"":1}`, `{"A":1}`,
		`[{"a":1}]`, `[{"a":1},{"a":"x"}]`, `[{"a":1},{"b":1}]`, `[{"a":1},1]`,
		`[{"a":1,"b":1}]`, `[{"a":1,"b":1},{"a":1}]`, `{"m":{"f3a9c1":{"a":1},"77b0e2":{"a":1,"b":1}}}`,
		`{"m":{"f3a9c1":{"a":1,"b":1},"77b0e2":{"a":1,"b":1}}}`,
		`{"results":[{"id":"a","title":"t","score":1}],"next_cursor":null}`,
		`{"results":{"items":[{"id":"a","title":"t","score":1}]},"next_cursor":null}`,
	}
	seen := map[string]string{}
	for _, body := range bodies {
		fp := shape.Of(decode(t, []byte(body))).Fingerprint()
		if prev, ok := seen[fp]; ok {
			t.Errorf("%s and %s: same fingerprint %s", prev, body, fp)
		}
		seen[fp] = body
	}
}

// TestOfGoValues covers values that a JSON file cannot express.
func TestOfGoValues(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"nil", nil, "null"},
		{"int", 3, "number"},
		{"int64", int64(3), "number"},
		{"float64", 3.5, "number"},
		{"json.Number", json.Number("3.5"), "number"},
		{"other numeric types", []any{int8(1), uint(2), float32(3)}, "list<number>"},
		{"nil slice", []any(nil), "list<empty>"},
		{"nil map", map[string]any(nil), "object{}"},
		{"typed slice is not decoded JSON", []string{"a"}, "..."},
		{"struct is not decoded JSON", struct{}{}, "..."},
		{"invalid UTF-8 key", map[string]any{"a\xffb": 1, "\xe2\x82": true}, `object{"a\xffb":number,"\xe2\x82":bool}`},
		{"NUL key", map[string]any{"\x00": 1}, `object{"\x00":number}`},
		{"cyclic map", cyclic, strings.Repeat("object{self:", shape.MaxDepth) + "..." + strings.Repeat("}", shape.MaxDepth)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := shape.Of(tt.v)
			if got := s.String(); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if _, err := shape.Parse(s.String()); err != nil {
				t.Errorf("Parse(String()): %v", err)
			}
		})
	}
}

// TestOfSharedSubtrees feeds a Go value where each level holds the one
// below twice: a few hundred bytes standing for 2^64 values. Of must give
// up with the marker rather than walk it.
func TestOfSharedSubtrees(t *testing.T) {
	var v any = 1.0
	for range 64 {
		v = []any{v, v}
	}
	done := make(chan shape.Shape, 1)
	go func() { done <- shape.Of(v) }()
	select {
	case s := <-done:
		if got, want := s.String(), "..."; got != want {
			t.Errorf("got %.60s, want %s", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Of still walking after 10s")
	}
}

// TestOfDepth checks the MaxDepth boundary: the deepest kept container and
// the first one replaced by the marker.
func TestOfDepth(t *testing.T) {
	nest := func(levels int) any {
		var v any = "x"
		for range levels {
			v = []any{v}
		}
		return v
	}
	tests := []struct {
		name   string
		levels int
		want   string
	}{
		{"MaxDepth levels kept", shape.MaxDepth, strings.Repeat("list<", shape.MaxDepth) + "string" + strings.Repeat(">", shape.MaxDepth)},
		{"one more is the marker", shape.MaxDepth + 1, strings.Repeat("list<", shape.MaxDepth) + "..." + strings.Repeat(">", shape.MaxDepth)},
		{"far deeper", 100000, strings.Repeat("list<", shape.MaxDepth) + "..." + strings.Repeat(">", shape.MaxDepth)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shape.Of(nest(tt.levels)).String(); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestOfWideBodyBounded feeds a 256 KB body of objects that each bring new
// keys: the shape keeps MaxKeys keys, counts all of them, and its text stays
// small.
func TestOfWideBodyBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"results":[`)
	keys := 0
	for i := 0; b.Len() < 256<<10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		for j := range 20 {
			if j > 0 {
				b.WriteByte(',')
			}
			// Values of two kinds: an object of one-kind values this wide
			// is a map (see TestOfMaps).
			if j%2 == 0 {
				fmt.Fprintf(&b, `"field_%06d":%d`, keys, j)
			} else {
				fmt.Fprintf(&b, `"field_%06d":"v"`, keys)
			}
			keys++
		}
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	s := shape.Of(decode(t, []byte(b.String())))

	if got, want := s.Summary(), "object(1 keys)"; got != want {
		t.Errorf("Summary: got %s, want %s", got, want)
	}
	p, err := shape.Parse(s.String())
	if err != nil {
		t.Fatal(err)
	}
	// Against an empty element object, the first line gives the key count
	// and one line follows for each kept key.
	d := shape.Diff(p, shape.Of(map[string]any{"results": []any{map[string]any{}}}))
	if got, want := len(d), 1+shape.MaxKeys; got != want {
		t.Fatalf("Diff: got %d lines, want %d", got, want)
	}
	if got, want := d[0], fmt.Sprintf("results[]: object(%d keys) -> object(0 keys)", keys); got != want {
		t.Errorf("key count: got %q, want %q", got, want)
	}
	if got, want := len(s.String()), 256*len(`field_000000:number|string,`)+100; got > want {
		t.Errorf("canonical text is %d bytes, want at most %d", got, want)
	}
	if want := fmt.Sprintf(",...%d}", keys-shape.MaxKeys); !strings.Contains(s.String(), want) {
		t.Errorf("canonical text lacks %q", want)
	}
}

func TestZeroShape(t *testing.T) {
	var z shape.Shape
	if got := z.String(); got != "" {
		t.Errorf("String: got %q, want empty", got)
	}
	if got := z.Fingerprint(); got != "" {
		t.Errorf("Fingerprint: got %q, want empty", got)
	}
	if got, want := z.Summary(), "none"; got != want {
		t.Errorf("Summary: got %q, want %q", got, want)
	}
}

// TestKeyAsWritten checks that Key writes a key as the canonical text and
// diff paths do, long keys cut the same way.
func TestKeyAsWritten(t *testing.T) {
	for _, k := range []string{"id", "a.b", strings.Repeat("k", shape.MaxKeyBytes), strings.Repeat("k", shape.MaxKeyBytes+1), "x" + strings.Repeat("é", 400<<10)} {
		s := shape.Of(map[string]any{k: nil, "~": true})
		if got, want := s.String(), "object{"+shape.Key(k)+":null,\"~\":bool}"; got != want {
			t.Errorf("key of %d bytes: got %.200s, want %.200s", len(k), got, want)
		}
		if got := len(shape.Key(k)); got > 6*shape.MaxKeyBytes {
			t.Errorf("key of %d bytes: Key is %d bytes", len(k), got)
		}
	}
}
