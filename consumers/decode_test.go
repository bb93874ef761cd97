package consumers

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeJSONValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want any
	}{
		{"object", `{"a":1,"b":[true,null,"x"]}`, map[string]any{"a": 1, "b": []any{true, nil, "x"}}},
		{"integer is int", `42`, 42},
		{"negative integer", `-7`, -7},
		{"minus zero is int", `-0`, 0},
		{"largest int64", `9223372036854775807`, math.MaxInt64},
		{"smallest int64", `-9223372036854775808`, math.MinInt64},
		{"just past int64 is float", `9223372036854775808`, 9223372036854775808.0},
		{"huge integer written as digits is float", `1000000000000000000000000000000`, 1e30},
		{"fraction is float", `0.93`, 0.93},
		{"written as float stays float", `1.0`, 1.0},
		{"exponent is float", `1E2`, 100.0},
		{"underflow rounds to zero", `1e-400`, 0.0},
		{"escapes", `"a\"b\\c\u00e9\n"`, "a\"b\\cé\n"},
		{"invalid UTF-8 is replaced", "\"ok\xff\xfe\"", "ok\uFFFD\uFFFD"},
		{"invalid UTF-8 in a key is replaced", "{\"k\xff\":1}", map[string]any{"k\uFFFD": 1}},
		{"lone surrogate is replaced", `"\ud800"`, "\uFFFD"},
		{"byte order mark is skipped", "\xEF\xBB\xBF[1]", []any{1}},
		{"surrounding whitespace", " \r\n\t{}\n ", map[string]any{}},
		{"brackets inside strings do not nest", `"` + strings.Repeat("[", 1000) + `"`, strings.Repeat("[", 1000)},
		{"escaped quote before a bracket", `["\"[[["]`, []any{`"[[[`}},
		{"duplicate keys: last wins", `{"a":1,"a":2}`, map[string]any{"a": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeJSON([]byte(tc.body))
			if err != nil {
				t.Fatalf("DecodeJSON: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestDecodeJSONDepth(t *testing.T) {
	nest := func(n int, open, close string) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	if _, err := DecodeJSON([]byte(nest(maxJSONDepth, "[", "]"))); err != nil {
		t.Errorf("depth %d: %v, want it accepted", maxJSONDepth, err)
	}
	if _, err := DecodeJSON([]byte(nest(maxJSONDepth, `{"a":`, "}"))); err != nil {
		t.Errorf("object depth %d: %v, want it accepted", maxJSONDepth, err)
	}
	mixed := strings.Repeat(`[{"a":`, maxJSONDepth/2) + `[1]` + strings.Repeat(`}]`, maxJSONDepth/2)
	_, err := DecodeJSON([]byte(mixed))
	if want := "nested deeper than 128 levels at line 1, column 385"; err == nil || err.Error() != want {
		t.Errorf("mixed depth %d: %v, want %q", maxJSONDepth+1, err, want)
	}
	// A megabyte of "[" must fail fast, without a deep stack.
	start := time.Now()
	_, err = DecodeJSON([]byte(strings.Repeat("[", 1<<20)))
	if want := "nested deeper than 128 levels at line 1, column 129"; err == nil || err.Error() != want {
		t.Errorf("1 MB of [: %v, want %q", err, want)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("1 MB of [ took %v", d)
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"empty body", ``, "empty body"},
		{"only whitespace", " \n\t", "body is only whitespace"},
		{"only a byte order mark", "\xEF\xBB\xBF", "body is only whitespace"},
		{"second value", `{} {}`, "unexpected data after the JSON value at line 1, column 4"},
		{"trailing garbage", "[1]\n\nx", "unexpected data after the JSON value at line 3, column 1"},
		{"extra bracket", `[]]`, "unexpected data after the JSON value at line 1, column 3"},
		{"trailing comma", `[1,]`, "invalid character ']' looking for beginning of value at line 1, column 4"},
		{"positions count lines and characters", "{\"é\":\n  [1, @]}", "invalid character '@' looking for beginning of value at line 2, column 7"},
		{"position after a byte order mark", "\xEF\xBB\xBF[1,]", "invalid character ']' looking for beginning of value at line 1, column 5"},
		{"HTML error page", `<html><body>502</body></html>`, "invalid character '<' looking for beginning of value at line 1, column 1"},
		{"NaN literal", `NaN`, "invalid character 'N'"},
		{"control character in a string", "\"a\x00\"", "invalid character '\\x00' in string literal at line 1, column 3"},
		{"truncated object", `{"results":[{"id":`, "truncated: the body ends inside a value at line 1, column 19"},
		{"truncated string", `"abc`, "truncated: the body ends inside a value at line 1, column 5"},
		{"number overflows float64", `1e400`, "number 1e400 is out of range for a 64-bit float"},
		{"negative overflow deep inside", `{"a":[1,{"b":-1e400}]}`, "number -1e400 is out of range for a 64-bit float"},
		{"long overflowing number is clipped", `1` + strings.Repeat("0", 400) + `e400`, "number 1000000000000000000000000000000000000000… is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := DecodeJSON([]byte(tc.body))
			if err == nil {
				t.Fatalf("got %#v, want error %q", v, tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error = %q, want %q", err, tc.want)
			}
			if v != nil {
				t.Errorf("value %#v returned with an error", v)
			}
			if len(err.Error()) > 200 {
				t.Errorf("error is %d bytes long; operators read it in a Slack line", len(err.Error()))
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, want any
	}{
		// What goccy/go-yaml gives for a fixture.
		{"yaml unsigned", uint64(1), 1},
		{"yaml signed", int64(-1), -1},
		{"yaml uint64 beyond int", uint64(math.MaxUint64), float64(math.MaxUint64)},
		{"yaml float", 0.93, 0.93},
		{"yaml infinity stays a float", math.Inf(1), math.Inf(1)},
		{"float32 keeps its shortest text", float32(0.1), 0.1},
		{"small ints", []any{int8(1), int16(2), int32(3), uint8(4), uint16(5), uint32(6), uint(7)}, []any{1, 2, 3, 4, 5, 6, 7}},
		{"json.Number int", json.Number("12"), 12},
		{"json.Number float", json.Number("1.5"), 1.5},
		{"json.Number overflow is Inf here", json.Number("1e400"), math.Inf(1)},
		{"map[any]any keys become text", map[any]any{1: "x", true: "y", 1.5: "z", nil: "n", "s": uint64(2)},
			map[string]any{"1": "x", "true": "y", "1.5": "z", "null": "n", "s": 2}},
		{"text key wins over the same key as a number", map[any]any{1: "number", "1": "text"}, map[string]any{"1": "text"}},
		{"nested map[any]any", map[string]any{"results": []any{map[any]any{"id": "doc_784", "score": uint64(1)}}},
			map[string]any{"results": []any{map[string]any{"id": "doc_784", "score": 1}}}},
		{"typed containers", map[string][]string{"a": {"x"}}, map[string]any{"a": []any{"x"}}},
		{"nil", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Normalize(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestNormalizeMatchesDecodeJSON: a fixture written in YAML and the same
// body read from the wire must look the same to a rule.
func TestNormalizeMatchesDecodeJSON(t *testing.T) {
	fromYAML := map[string]any{
		"results":     []any{map[string]any{"id": "doc_784", "title": "API migration guide", "score": 0.93, "rank": uint64(1), "delta": int64(-2)}},
		"next_cursor": nil,
	}
	fromJSON := mustDecode(t, `{"results":[{"id":"doc_784","title":"API migration guide","score":0.93,"rank":1,"delta":-2}],"next_cursor":null}`)
	if got := Normalize(fromYAML); !reflect.DeepEqual(got, fromJSON) {
		t.Errorf("Normalize = %#v\nDecodeJSON = %#v", got, fromJSON)
	}
}

func TestNormalizeDeepAndShared(t *testing.T) {
	t.Run("deeper than any stack would like", func(t *testing.T) {
		var v any = uint64(1)
		for range 100_000 {
			v = []any{map[any]any{"k": v}}
		}
		v = Normalize(v)
		for depth := 0; ; depth++ {
			l, ok := v.([]any)
			if !ok {
				if v != 1 {
					t.Fatalf("leaf at depth %d = %#v, want int 1", depth, v)
				}
				break
			}
			v = l[0].(map[string]any)["k"]
		}
	})
	t.Run("alias amplification is linear", func(t *testing.T) {
		// YAML aliases share one value: 30 levels of doubling would be 2^30
		// visits if shared containers were walked each time they appear.
		var v any = []any{uint64(1)}
		for range 30 {
			v = []any{v, v}
		}
		start := time.Now()
		v = Normalize(v)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Normalize took %v", d)
		}
		for range 30 {
			v = v.([]any)[1]
		}
		if got := v.([]any)[0]; got != 1 {
			t.Errorf("leaf = %#v, want int 1", got)
		}
	})
	t.Run("shared map[any]any becomes one map", func(t *testing.T) {
		shared := map[any]any{"n": uint64(1)}
		got := Normalize([]any{shared, shared}).([]any)
		a, b := got[0].(map[string]any), got[1].(map[string]any)
		a["x"] = true
		if b["x"] != true || b["n"] != 1 {
			t.Errorf("shared map converted twice: %#v %#v", a, b)
		}
	})
	t.Run("cycle", func(t *testing.T) {
		cyc := make([]any, 2)
		cyc[0], cyc[1] = cyc, uint64(3)
		got := Normalize(cyc).([]any)
		if got[1] != 3 {
			t.Errorf("got %#v, want 3", got[1])
		}
		m := map[any]any{}
		m["self"] = m
		gm := Normalize(m).(map[string]any)
		if reflect.ValueOf(gm["self"]).UnsafePointer() != reflect.ValueOf(gm).UnsafePointer() {
			t.Errorf("cyclic map[any]any not mapped onto itself")
		}
	})
}

// TestDecodeJSONBoxedValues: the strings and numbers decodeFast boxes in
// shared slabs behave as values boxed by the runtime: equal to them, usable
// as map keys, seen by type switches and reflect, and unchanged by the
// values boxed after them.
func TestDecodeJSONBoxedValues(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	const n = 3*slabSize + 5
	for i := range n {
		fmt.Fprintf(&b, `"s%d",%d,%d.5,`, i, 1000+i, i)
	}
	b.WriteString("null]")
	got, err := DecodeJSON([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	list := got.([]any)
	seen := map[any]int{}
	for i := range n {
		s, k, f := list[3*i], list[3*i+1], list[3*i+2]
		if s != any(fmt.Sprintf("s%d", i)) || k != any(1000+i) || f != any(float64(i)+0.5) {
			t.Fatalf("element %d: %#v %#v %#v", i, s, k, f)
		}
		if _, ok := k.(int); !ok || reflect.TypeOf(f).Kind() != reflect.Float64 || reflect.ValueOf(s).String() != fmt.Sprintf("s%d", i) {
			t.Fatalf("element %d: types %T %T %T", i, s, k, f)
		}
		seen[s], seen[k], seen[f] = i, i, i
	}
	if len(seen) != 3*n || seen[any("s7")] != 7 || seen[any(1007)] != 7 || seen[any(7.5)] != 7 {
		t.Errorf("as map keys: %d distinct, s7→%d 1007→%d 7.5→%d", len(seen), seen[any("s7")], seen[any(1007)], seen[any(7.5)])
	}
	want, err := decodeStd([]byte(b.String()), []byte(b.String()))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("differs from encoding/json's values (%v)", err)
	}
}
