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

// FuzzDecodeFastMatchesStd: the one-pass decoder accepts exactly the bodies
// encoding/json accepts and gives the same values, so that DecodeJSON's
// values and errors are those of decodeStd whichever decoder ran.
func FuzzDecodeFastMatchesStd(f *testing.F) {
	addBodies(f)
	for _, s := range []string{
		`"\ud83d\ude00"`, `"\ud83d\u0041"`, `"\udc00\udc00"`, `"\ud800\\"`, "\"\xed\xa0\x80\"", `"\u00e9\/\b\f\n\r\t"`,
		`{"a":1,"a":{"b":[1,2,{"c":null}]}}`, `[-0, 0.5, 1e2, 1E-2, -1.5e+3, 123456789012345678, 1234567890123456789]`,
		`-`, `01`, `1.`, `1e`, `.5`, `+1`, `[1 2]`, `{"a" 1}`, `{"a":1,}`, `{,}`, `tru`, `nul`, `"\x"`, `"\u12"`,
		"\"tab\there\"", `[` + strings.Repeat(`{"k":`, 127) + `1` + strings.Repeat(`}`, 127) + `]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		body := bytes.TrimPrefix(data, utf8BOM)
		fast, ok := decodeFast(body)
		std, err := decodeStd(data, body)
		if ok != (err == nil) {
			t.Fatalf("%q: fast decoder ok=%v, encoding/json error %v", data, ok, err)
		}
		if ok && !reflect.DeepEqual(fast, std) {
			t.Fatalf("%q: fast decoder gives\n%#v\nencoding/json gives\n%#v", data, fast, std)
		}
	})
}

// FuzzCostBound: on any body that decodes, each bounded rule's charges
// spend no more than its bound, and without its charges it gives the same
// verdict (checkFastMatchesCharged).
func FuzzCostBound(f *testing.F) {
	for i, tc := range seedCases {
		f.Add([]byte(tc.body), uint8(i))
	}
	for i, b := range costBodies {
		f.Add([]byte(b), uint8(i))
	}
	consumers := make([]*Consumer, len(boundedRules))
	for i, src := range boundedRules {
		consumers[i] = mustCompile(f, src)
	}
	f.Fuzz(func(t *testing.T, data []byte, rule uint8) {
		v, err := DecodeJSON(data)
		if err != nil {
			return
		}
		in := costInput(t, "null")
		in.Response = v
		checkFastMatchesCharged(t, consumers[int(rule)%len(consumers)], in)
	})
}
