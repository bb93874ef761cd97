// Package shape computes the structural shape of a decoded JSON value, its
// 16-hex fingerprint, a path-level diff between two shapes, and the
// learned profile of a probe's answers that drift is judged against
// (Profile; SPEC §5). It imports nothing but the standard library.
//
// A shape keeps kinds and keys, never values or key order. The vocabulary is
// null, bool, number (integers and floats alike), string, object with its
// keys, map with the shape of its values (an object whose keys are data,
// see Maps), and list with the shape of its elements. Every list at one position
// merges into one list shape whose element is the union of the shapes of all
// its elements; all objects at one position merge into one object shape with
// the union of their keys, each key's shape being the union of its shapes.
// A key that some of the merged objects lack is optional, written "key?":
// so [{"a":1},{"a":"x","b":true}] is a list of one object with the keys a
// (number|string) and b (bool, optional), object{a:number|string,b?:bool}.
// Optional keys are how a profile learns, from one answer, that a field of
// a list's elements (or of a map's values) is sometimes absent. An empty
// list adds no element shape, so list<empty> appears only where every list
// at that position is empty.
//
// # Canonical text
//
// String gives the canonical text, which Parse reads back and Fingerprint
// hashes. It has no spaces:
//
//	shape  = alt *( "|" alt )        ; kinds in the order below, each at most once
//	alt    = "..." / "bool" / list / map / "null" / "number" / object / "string"
//	list   = "list<" ( "empty" / shape ) ">"
//	map    = "map<" shape ">"          ; see Maps
//	object = "object{" [ field *( "," field ) [ ",..." count ] ] "}"
//	field  = key [ "?" ] ":" shape   ; keys in byte order, no duplicates;
//	                                 ; "?": some merged objects lacked it
//	key    = 1*( ALPHA / DIGIT / "_" / "-" ) / quoted
//	quoted = DQUOTE *( %x20-21 / %x23-5B / %x5D-7E / escape ) DQUOTE
//	escape = "\" DQUOTE / "\\" / "\x" 2HEXLOW / "\u" 4HEXLOW / "\U" 8HEXLOW
//	count  = %x31-39 *8DIGIT          ; keys left out, see Limits
//	HEXLOW = DIGIT / %x61-66
//
// A key made only of ASCII letters, digits, '_' and '-' is written bare; any
// other key (including the empty key) is quoted. In a quoted key '"' and '\'
// are escaped with a backslash, control bytes, DEL and bytes that are not
// valid UTF-8 as \xNN, and every other non-ASCII character as \uNNNN (or
// \UNNNNNNNN beyond the BMP), so the text is printable ASCII and does not
// depend on Unicode tables. For example the body
//
//	{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":null}
//
// has the canonical text
//
//	object{next_cursor:null,results:list<object{id:string,score:number,title:string}>}
//
// # Limits
//
// Shapes are bounded so that a hostile body cannot make them explode. A
// list or object nested deeper than [MaxDepth] levels (the root being level
// 1) is recorded as the marker "...", structure not inspected. An object
// position with more than [MaxKeys] distinct keys keeps its first MaxKeys keys
// in byte order followed by ",...N", N being the number of keys left out;
// its summary still counts every key. A key longer than [MaxKeyBytes] bytes
// is kept as its first bytes (cut at a character boundary), "...#" and 16
// hex digits of the SHA-256 of the whole key: MaxKeyBytes bytes at most,
// so a provider's key cannot grow the canonical text, a diff path or a
// profile beyond that, while two long keys that differ past the cut stay
// two keys, and the same key is always written the same way. A value of a
// Go type that decoded JSON never holds is also "...", as is the whole
// value when it holds more than about four million values (only possible
// with Go values that share subtrees, or JSON documents of several
// megabytes). A profile keeps at most MaxKeys keys per object position and
// [MaxProfilePositions] positions in all, however many answers bring new
// ones.
package shape

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

const (
	// MaxDepth is the deepest nesting of lists and objects a shape records;
	// a list or object below it is the marker "...".
	MaxDepth = 64
	// MaxKeys is the number of keys an object shape keeps; the rest are
	// counted, not kept.
	MaxKeys = 256
	// MaxKeyBytes is the longest key, in bytes, a shape keeps as it is; a
	// longer one is cut and marked with its hash (see Limits).
	MaxKeyBytes = 128
)

// keyHashHex is how many hex digits of a long key's SHA-256 its bounded
// form ends with, after keyCutMark.
const (
	keyHashHex = 16
	keyCutMark = "...#"
)

// boundKey returns k when it is at most MaxKeyBytes long, otherwise its
// first bytes, cut at a UTF-8 character boundary, keyCutMark and the
// first keyHashHex hex digits of the SHA-256 of k: at most MaxKeyBytes
// bytes, deterministic, and distinct for distinct keys but for a hash
// collision.
func boundKey(k string) string {
	if len(k) <= MaxKeyBytes {
		return k
	}
	cut := MaxKeyBytes - len(keyCutMark) - keyHashHex
	for i := cut; i > cut-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(k[i]) {
			cut = i
			break
		}
	}
	sum := sha256.Sum256([]byte(k))
	return k[:cut] + keyCutMark + hex.EncodeToString(sum[:keyHashHex/2])
}

// maxValues bounds the work Of does. Decoded JSON needs at least two bytes
// per value, so no body under 8 MB reaches it; it exists for Go values that
// share subtrees, where a few bytes of memory can stand for 2^64 values.
const maxValues = 1 << 22

// kind is a set of shape kinds. The bit order is the canonical order of
// the alternatives of a union, which is also their byte order by name.
type kind uint16

const (
	kindDeep kind = 1 << iota
	kindBool
	kindList
	kindMap
	kindNull
	kindNumber
	kindObject
	kindString
	kindEnd
)

var kindNames = [...]string{"...", "bool", "list", "map", "null", "number", "object", "string"}

// node is one position in a shape: the union of the kinds seen there, with
// the object part (fields, nkeys) and the list part (elem) when present.
// A node is immutable once its Shape is built.
type node struct {
	kinds  kind
	fields []field // object part: sorted by key, at most MaxKeys
	nkeys  int     // object part: distinct keys, including those not kept
	elem   *node   // list part: element union, nil for list<empty>
	val    *node   // map part: the union of the map's values, never nil

	// While Of builds it: the object part's key index, how many objects
	// were merged at this position (objs), and, on a field's node, how
	// many of its parent's objects had the field (hits).
	idx        map[string]*node
	objs, hits int
}

// field is one key of an object part. optional says that some of the
// objects merged at its position lacked the key.
type field struct {
	key      string
	shape    *node
	optional bool
}

// truncated reports whether the object part lost keys to MaxKeys.
func (n *node) truncated() bool { return n.nkeys > len(n.fields) }

// Shape is the structure of a JSON value, independent of values and key
// order. The zero Shape is the shape of nothing and is not valid: its String
// and Fingerprint are empty. Build one with Of or Parse, and compare two with
// String, Fingerprint or Diff, not with ==. A Shape is immutable and safe for
// concurrent use.
type Shape struct {
	root        *node
	text        string
	fingerprint string
}

// newShape computes the text and the fingerprint once: a run reads its
// shape's fingerprint several times (the result, drift, the profile).
func newShape(root *node) Shape {
	text := root.appendText(nil)
	sum := sha256.Sum256(text)
	return Shape{root: root, text: string(text), fingerprint: hex.EncodeToString(sum[:8])}
}

// Of returns the shape of v, which holds decoded JSON: nil, bool, int, int64,
// float64, json.Number, string, []any or map[string]any, nested. Other Go
// numeric types also count as number; a value of any other type is the
// marker "...". Of never panics and its work is bounded (see Limits).
func Of(v any) Shape {
	b := builder{budget: maxValues}
	root := &node{}
	b.add(root, v, 1)
	if b.budget < 0 {
		return newShape(&node{kinds: kindDeep})
	}
	root.finish()
	return newShape(root)
}

type builder struct {
	budget int
}

// add merges the shape of v, found at nesting level depth, into n.
func (b *builder) add(n *node, v any, depth int) {
	b.budget--
	if b.budget < 0 {
		return
	}
	switch v := v.(type) {
	case nil:
		n.kinds |= kindNull
	case bool:
		n.kinds |= kindBool
	case string:
		n.kinds |= kindString
	case float64, int, int64, json.Number, float32, int8, int16, int32,
		uint, uint8, uint16, uint32, uint64, uintptr:
		n.kinds |= kindNumber
	case []any:
		if depth > MaxDepth {
			n.kinds |= kindDeep
			return
		}
		n.kinds |= kindList
		for _, e := range v {
			if n.elem == nil {
				n.elem = &node{}
			}
			b.add(n.elem, e, depth+1)
			if b.budget < 0 {
				return
			}
		}
	case map[string]any:
		if depth > MaxDepth {
			n.kinds |= kindDeep
			return
		}
		n.kinds |= kindObject
		n.objs++
		if n.idx == nil {
			n.idx = make(map[string]*node, len(v))
		}
		for k, e := range v {
			k = boundKey(k)
			c := n.idx[k]
			if c == nil {
				c = &node{}
				n.idx[k] = c
			}
			c.hits++
			b.add(c, e, depth+1)
			if b.budget < 0 {
				return
			}
		}
	default:
		n.kinds |= kindDeep
	}
}

// finish turns the key index of every object part into sorted fields,
// keeping at most MaxKeys of them, or into a map part when the object is a
// map (see isMap); nested positions are finished first, so a map's values
// are compared in their final form.
func (n *node) finish() {
	if n.kinds&kindObject != 0 {
		keys := make([]string, 0, len(n.idx))
		for k := range n.idx {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			n.idx[k].finish()
		}
		if isMap(keys, n.idx) {
			val := &node{}
			for _, k := range keys {
				merge(val, n.idx[k], 1)
			}
			n.kinds = n.kinds&^kindObject | kindMap
			n.val = val
			n.idx = nil
		} else {
			n.nkeys = len(keys)
			keys = keys[:min(len(keys), MaxKeys)]
			n.fields = make([]field, len(keys))
			for i, k := range keys {
				c := n.idx[k]
				n.fields[i] = field{key: k, shape: c, optional: c.hits < n.objs}
			}
			n.idx = nil
		}
	}
	if n.elem != nil {
		n.elem.finish()
	}
}

// merge adds the finished node src into the finished node dst: the union
// of their kinds, fields, elements and values. depth guards the recursion
// of nodes that Parse or Of built, which never nest past MaxDepth.
func merge(dst, src *node, depth int) {
	hadObject := dst.kinds&kindObject != 0
	dst.kinds |= src.kinds
	if depth > MaxDepth+1 {
		return
	}
	if src.kinds&kindObject != 0 {
		dst.fields, dst.nkeys = mergeFields(dst, src, hadObject, depth)
	}
	if src.elem != nil {
		if dst.elem == nil {
			dst.elem = &node{}
		}
		merge(dst.elem, src.elem, depth+1)
	}
	if src.val != nil {
		if dst.val == nil {
			dst.val = &node{}
		}
		merge(dst.val, src.val, depth+1)
	}
}

// mergeFields returns the union of the object parts of a and b, at most
// MaxKeys fields, with its key count: exact when neither lost keys to
// MaxKeys, otherwise at least the larger of the two counts. aObject says
// whether a had an object part before the merge: if it had, a key only
// one of the two has is optional in the union.
func mergeFields(a, b *node, aObject bool, depth int) ([]field, int) {
	out := make([]field, 0, max(len(a.fields), len(b.fields)))
	i, j := 0, 0
	for i < len(a.fields) || j < len(b.fields) {
		switch {
		case j == len(b.fields) || i < len(a.fields) && a.fields[i].key < b.fields[j].key:
			f := a.fields[i]
			f.optional = f.optional || !unknown(b, f.key)
			out = append(out, f)
			i++
		case i == len(a.fields) || b.fields[j].key < a.fields[i].key:
			c := &node{}
			merge(c, b.fields[j].shape, depth+1)
			optional := b.fields[j].optional || aObject && !unknown(a, b.fields[j].key)
			out = append(out, field{key: b.fields[j].key, shape: c, optional: optional})
			j++
		default:
			merge(a.fields[i].shape, b.fields[j].shape, depth+1)
			f := a.fields[i]
			f.optional = f.optional || b.fields[j].optional
			out = append(out, f)
			i++
			j++
		}
	}
	n := len(out)
	if a.truncated() || b.truncated() {
		n = max(n, a.nkeys, b.nkeys)
	}
	if len(out) > MaxKeys {
		out = out[:MaxKeys]
	}
	return out, n
}

// String returns the canonical text of s (see the package documentation):
// deterministic, keys sorted, readable by Parse. It is "" for the zero Shape.
func (s Shape) String() string { return s.text }

// Fingerprint returns 16 lowercase hex characters, the first 8 bytes of the
// SHA-256 of the canonical text. Equal shapes, whatever their values and key
// order, have equal fingerprints. It is "" for the zero Shape.
func (s Shape) Fingerprint() string { return s.fingerprint }

// Summary returns the short form of s used in diff lines: kinds by name,
// an object as "object(N keys)" with N counting every key (even when N is 1),
// a list as "list<ELEM>" or "list<empty>", alternatives joined by "|", for
// example "list<object(3 keys)>" or "number|string". It is "none" for the
// zero Shape.
func (s Shape) Summary() string { return summary(s.root) }

func summary(n *node) string {
	if n == nil {
		return "none"
	}
	return string(n.appendSummary(nil))
}
