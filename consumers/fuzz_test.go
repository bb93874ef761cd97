package consumers

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func addBodies(f *testing.F) {
	for _, tc := range seedCases {
		f.Add([]byte(tc.body))
	}
	for _, s := range []string{
		``, ` `, `null`, `0`, `-0`, `1e400`, `1e-400`, `9223372036854775808`, `1.0`, `"\ud800"`,
		"\xEF\xBB\xBF{}", "\"\xff\"", `{} {}`, `[1,]`, `{"a":`, `{"results":{"items":[{"id":"a","score":1}]}}`,
		`{"results":[{"id":"a","score":0.8},{"id":7,"score":0.9}]}`, `{"results":[[]]}`,
		strings.Repeat("[", 200), strings.Repeat(`{"a":`, 129) + "1" + strings.Repeat("}", 129),
	} {
		f.Add([]byte(s))
	}
}

// FuzzDecodeJSON: DecodeJSON never panics, accepts only valid JSON, and what
// it returns re-encodes as JSON and decodes back to the same value.
func FuzzDecodeJSON(f *testing.F) {
	addBodies(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeJSON(data)
		if err != nil {
			if v != nil {
				t.Fatalf("value %#v returned with error %v", v, err)
			}
			// Valid JSON is refused only for the limits DecodeJSON adds.
			if json.Valid(bytes.TrimPrefix(data, utf8BOM)) {
				msg := err.Error()
				if !strings.Contains(msg, "nested deeper") && !strings.Contains(msg, "out of range") {
					t.Fatalf("valid JSON %q refused: %v", data, err)
				}
			}
			return
		}
		if !json.Valid(bytes.TrimPrefix(data, utf8BOM)) {
			t.Fatalf("invalid JSON %q accepted as %#v", data, v)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("decoded value %#v does not re-encode: %v", v, err)
		}
		back, err := DecodeJSON(out)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", out, err)
		}
		if !reflect.DeepEqual(v, back) {
			// A float that is a whole number re-encodes without its
			// fraction and comes back as int: same number, not a bug.
			if !sameNumbers(v, back) {
				t.Fatalf("round trip changed the value:\n%#v\n%#v", v, back)
			}
		}
	})
}

// sameNumbers is DeepEqual that lets a whole float64 equal the int it
// re-encodes as.
func sameNumbers(a, b any) bool {
	switch a := a.(type) {
	case float64:
		switch b := b.(type) {
		case float64:
			return a == b
		case int:
			return a == float64(b)
		}
		return false
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !sameNumbers(a[i], bl[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, x := range a {
			y, ok := bm[k]
			if !ok || !sameNumbers(x, y) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// FuzzApply: any body that decodes, through the seed consumer, ends either
// in a pass with at least one validated item or in a contract error; never
// a panic, never an empty pass.
func FuzzApply(f *testing.F) {
	addBodies(f)
	c := selectResultsConsumer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeJSON(data)
		if err != nil {
			return // invalid_json is decided before any rule runs
		}
		got := c.Apply(Input{Response: v, Status: 200}, 1)
		if err := checkVerdict(got, 1); err != nil {
			t.Fatalf("body %q: verdict %+v: %v", data, got, err)
		}
		if got.Err == nil && got.Validated < 1 {
			t.Fatalf("body %q: pass with %d validated items", data, got.Validated)
		}
	})
}
