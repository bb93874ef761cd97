package consumers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/toolpulse/toolpulse/results"
)

// maxJSONDepth is the deepest nesting of arrays and objects DecodeJSON
// accepts. Real API bodies stay far below it. The limit exists because
// encoding/json and several expr builtins (toJSON, flatten, ==) recurse
// over a value, and a 1 MB body of "[" must not turn into a deep stack.
const maxJSONDepth = 128

// utf8BOM is skipped at the start of a body: browsers and most HTTP
// clients ignore it, so a provider that sends one still serves its callers.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// DecodeJSON decodes a response body into rule values: objects as
// map[string]any, arrays as []any, strings, bools, nil, numbers written as
// integers that fit in an int as int, and every other number as float64
// (SPEC §4).
//
// It is strict where leniency would hide a broken contract and lenient where
// callers are. Errors: an empty or blank body, data after the value, arrays
// and objects nested more than 128 levels deep, a number beyond float64's
// range (1e400; underflow such as 1e-400 is 0). Accepted: a leading UTF-8
// byte order mark, which is skipped, and invalid UTF-8 inside strings, which
// is replaced with U+FFFD as encoding/json and browsers do, so that one stray
// byte in a title does not fail a probe. Errors are short, end with their
// position ("at line 3, column 14", columns in characters) and are meant for
// operators: they become invalid_json messages, after whatever prefix the
// caller puts in front ("response is not valid JSON: ").
func DecodeJSON(data []byte) (any, error) {
	body := bytes.TrimPrefix(data, utf8BOM)
	if len(skipSpace(body)) == 0 {
		if len(data) == 0 {
			return nil, errors.New("empty body")
		}
		return nil, errors.New("body is only whitespace")
	}
	// Valid bodies take the one-pass decoder; anything it does not accept
	// goes through encoding/json, whose messages and positions are the
	// contract for invalid_json.
	if v, ok := decodeFast(body); ok {
		return v, nil
	}
	return decodeStd(data, body)
}

// decodeStd is DecodeJSON on encoding/json: the depth check, a decode with
// UseNumber, then the numbers converted. It gives the exact error for every
// body decodeFast refuses, and is the reference decodeFast is tested
// against.
func decodeStd(data, body []byte) (any, error) {
	skipped := len(data) - len(body)
	pos := func(off int64) string { return position(data, skipped+int(off)) }
	// Checked before decoding, iteratively, so that encoding/json's
	// recursive decoder only ever sees bounded nesting.
	if off, ok := checkDepth(body, maxJSONDepth); !ok {
		return nil, fmt.Errorf("nested deeper than %d levels at %s", maxJSONDepth, pos(int64(off)))
	}

	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.As(err, &syn):
			// Offset counts the bytes read including the offending one.
			return nil, fmt.Errorf("%s at %s", syn.Error(), pos(max(syn.Offset-1, 0)))
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("truncated: the body ends inside a value at %s", pos(int64(len(body))))
		}
		return nil, err
	}
	end := dec.InputOffset()
	if rest := skipSpace(body[end:]); len(rest) > 0 {
		return nil, fmt.Errorf("unexpected data after the JSON value at %s", pos(int64(len(body)-len(rest))))
	}
	n := normalizer{strict: true}
	v = n.run(v)
	if n.err != nil {
		return nil, n.err
	}
	return v, nil
}

// skipSpace returns b without its leading JSON whitespace.
func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// checkDepth reports whether the arrays and objects of b nest at most limit
// deep; if not, it returns the offset of the bracket that goes too deep. It
// only has to be exact for valid JSON: invalid JSON is rejected by the
// decoder that runs next.
func checkDepth(b []byte, limit int) (int, bool) {
	depth := 0
	inString, escaped := false, false
	for i, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > limit {
				return i, false
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return 0, true
}

// position names a byte offset of data as "line L, column C", both 1-based,
// the column counted in characters.
func position(data []byte, off int) string {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return fmt.Sprintf("line %d, column %d", line, utf8.RuneCount(before[lineStart:])+1)
}

// Normalize converts decoded values into the rule values DecodeJSON returns,
// so that fixtures written in YAML and bodies read from the wire look the
// same to a rule: json.Number and every Go integer or float type become int
// (integers that fit) or float64, map[any]any and other maps become
// map[string]any with keys written as text ("1", "true", "null"), and other
// slices become []any. Values of any other type are kept as they are.
//
// It works in place on []any and map[string]any, so v must not be shared with
// code that expects the old values. It walks without recursion and converts a
// container shared through YAML aliases once, so neither deep nor
// alias-amplified values can blow the stack or the time budget. A json.Number
// outside float64's range becomes ±Inf here; DecodeJSON rejects it instead.
func Normalize(v any) any {
	n := normalizer{seen: map[containerID]any{}}
	return n.run(v)
}

// normalizer converts a value tree without recursion: containers whose
// children still need converting wait on a stack.
type normalizer struct {
	// strict makes an out-of-range json.Number an error (DecodeJSON);
	// otherwise it becomes ±Inf (Normalize).
	strict bool
	// seen maps each container already met to its converted value, so a
	// container shared or cyclic is converted once; nil when the input
	// cannot share containers (freshly decoded JSON).
	seen    map[containerID]any
	pending []any // []any and map[string]any whose children are not converted yet
	err     error
}

// containerID identifies a slice (by its array and length) or a map.
type containerID struct {
	p unsafe.Pointer
	n int // -1 for maps
}

func (n *normalizer) run(v any) any {
	v = n.value(v)
	for len(n.pending) > 0 && n.err == nil {
		last := len(n.pending) - 1
		c := n.pending[last]
		n.pending = n.pending[:last]
		switch c := c.(type) {
		case []any:
			for i, x := range c {
				c[i] = n.value(x)
			}
		case map[string]any:
			for k, x := range c {
				switch x.(type) {
				case nil, bool, string, int, float64:
					// Already a rule value: writing it back would cost a
					// map assignment per key.
				case []any, map[string]any:
					n.value(x) // converted in place, the map keeps it
				default:
					c[k] = n.value(x)
				}
			}
		}
	}
	return v
}

// value converts one value; a container is returned in its final type and
// queued so that its children are converted later.
func (n *normalizer) value(v any) any {
	switch t := v.(type) {
	case nil, bool, string, int, float64:
		return v
	case json.Number:
		return n.number(string(t))
	case []any:
		if len(t) == 0 {
			return t
		}
		if n.seen != nil {
			id := containerID{unsafe.Pointer(&t[0]), len(t)}
			if _, ok := n.seen[id]; ok {
				return t
			}
			n.seen[id] = t
		}
		n.pending = append(n.pending, t)
		return t
	case map[string]any:
		if n.seen != nil {
			id := containerID{reflect.ValueOf(t).UnsafePointer(), -1}
			if _, ok := n.seen[id]; ok {
				return t
			}
			n.seen[id] = t
		}
		n.pending = append(n.pending, t)
		return t
	case int8:
		return int(t)
	case int16:
		return int(t)
	case int32:
		return int(t)
	case int64:
		return intOrFloat(t)
	case uint8:
		return int(t)
	case uint16:
		return int(t)
	case uint32:
		return uintOrFloat(uint64(t))
	case uint:
		return uintOrFloat(uint64(t))
	case uint64:
		return uintOrFloat(t)
	case float32:
		// Through its shortest text, so that 0.1 stays 0.1 rather than
		// 0.10000000149011612.
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(t), 'g', -1, 32), 64)
		return f
	}
	return n.reflected(v)
}

// reflected converts maps and slices of other types; it is the slow path
// that YAML decoders (map[any]any) and hand-built values take.
func (n *normalizer) reflected(v any) any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		id := containerID{rv.UnsafePointer(), -1}
		if n.seen != nil {
			if done, ok := n.seen[id]; ok {
				return done
			}
		}
		m := make(map[string]any, rv.Len())
		if n.seen != nil {
			n.seen[id] = m
		}
		// Text keys are set last so that "1" wins over 1 whatever the map
		// order: the same YAML always gives the same value.
		iter := rv.MapRange()
		for iter.Next() {
			if k := iter.Key().Interface(); !isString(k) {
				m[keyString(k)] = iter.Value().Interface()
			}
		}
		iter.Reset(rv)
		for iter.Next() {
			if k, ok := iter.Key().Interface().(string); ok {
				m[k] = iter.Value().Interface()
			}
		}
		n.pending = append(n.pending, m)
		return m
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return []any{}
		}
		var id containerID
		if rv.Kind() == reflect.Slice && rv.Len() > 0 {
			id = containerID{rv.UnsafePointer(), rv.Len()}
			if n.seen != nil {
				if done, ok := n.seen[id]; ok {
					return done
				}
			}
		}
		s := make([]any, rv.Len())
		for i := range s {
			s[i] = rv.Index(i).Interface()
		}
		if n.seen != nil && id.p != nil {
			n.seen[id] = s
		}
		n.pending = append(n.pending, s)
		return s
	}
	return v
}

// number converts the text of a JSON number: integers that fit in an int
// stay exact, everything else is a float64.
func (n *normalizer) number(s string) any {
	if i, err := strconv.ParseInt(s, 10, strconv.IntSize); err == nil {
		return int(i)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if n.strict && n.err == nil {
			if errors.Is(err, strconv.ErrRange) {
				n.err = fmt.Errorf("number %s is out of range for a 64-bit float", results.ClipBytes(s, 40))
			} else {
				n.err = fmt.Errorf("invalid number %s", results.ClipBytes(s, 40))
			}
		}
		if math.IsInf(f, 0) {
			return f
		}
		return s // not a number at all: only a hand-built json.Number can be
	}
	return f
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

func intOrFloat(i int64) any {
	if int64(int(i)) == i {
		return int(i)
	}
	return float64(i)
}

func uintOrFloat(u uint64) any {
	if u <= math.MaxInt {
		return int(u)
	}
	return float64(u)
}

// keyString writes a non-text map key the way YAML and JSON readers expect
// to look it up.
func keyString(k any) string {
	switch k := k.(type) {
	case nil:
		return "null"
	case string:
		return k
	case float32:
		return strconv.FormatFloat(float64(k), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(k, 'g', -1, 64)
	}
	return fmt.Sprint(k)
}
