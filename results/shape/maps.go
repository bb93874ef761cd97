package shape

// # Maps
//
// An object whose keys are data rather than names (ids, hashes, dates,
// numbers) is a map, written map<V> with V the union of its values'
// shapes: {"f3a9c1":{"n":1},"77b0e2":{"n":2}} is map<object{n:number}>.
// Its keys are not part of the shape, so such an answer does not mint a
// new fingerprint with every new set of keys, and a change of the values
// (V) is still a change of the shape.
//
// Of decides it from one answer, at each object position once every
// object seen there is merged (the objects of a list's elements are one
// position), by this rule:
//
//  1. the values share one shape kind: every value has the same set of
//     kinds, nulls left aside (a value that is only null fits any); and
//  2. the keys are data: every key is a decimal integer ("42", "-1"), a
//     UUID, a date or timestamp ("2026-10-26", "2026-10", "2026-10-26T13:07"),
//     or a hex string of at least 6 characters holding a digit and a
//     letter ("f3a9c1", a hash or an object id); or the object has more
//     than MapMinKeys keys, which no hand-written record has.
//
// So a small set of field names ({"id":…,"title":…}) is never a map, nor
// is an object whose values differ in kind, nor an empty object. A map
// that a position shows in one answer and an object of named fields in
// another are two kinds, as list and object are.
//
// MapMinKeys is the number of keys above which an object whose values
// share one kind is a map whatever its keys.
const MapMinKeys = 64

// isMap reports whether an object position with these keys (sorted) and
// finished values is a map, by the rule above.
func isMap(keys []string, idx map[string]*node) bool {
	if len(keys) == 0 {
		return false
	}
	var want kind
	for _, k := range keys {
		got := idx[k].kinds &^ kindNull
		if got == 0 {
			continue
		}
		if want == 0 {
			want = got
		} else if got != want {
			return false
		}
	}
	if len(keys) > MapMinKeys {
		return true
	}
	for _, k := range keys {
		if !dataKey(k) {
			return false
		}
	}
	return true
}

// dataKey reports whether k reads as data: a decimal integer, a UUID, a
// date or timestamp, or a hex string of 6 or more characters with at least
// one digit and one letter.
func dataKey(k string) bool {
	return integerKey(k) || uuidKey(k) || dateKey(k) || hexKey(k)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func integerKey(k string) bool {
	if len(k) > 0 && k[0] == '-' {
		k = k[1:]
	}
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !isDigit(k[i]) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// uuidKey: 8-4-4-4-12 hex digits.
func uuidKey(k string) bool {
	if len(k) != 36 {
		return false
	}
	for i := 0; i < len(k); i++ {
		switch i {
		case 8, 13, 18, 23:
			if k[i] != '-' {
				return false
			}
		default:
			if !isHex(k[i]) {
				return false
			}
		}
	}
	return true
}

// dateKey: YYYY-MM, YYYY-MM-DD, or YYYY-MM-DD followed by 'T' or ' ' and
// a time of digits, ':', '.', '+', '-' and 'Z'.
func dateKey(k string) bool {
	digits := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if !isDigit(s[i]) {
				return false
			}
		}
		return true
	}
	if len(k) < 7 || !digits(k[:4]) || k[4] != '-' || !digits(k[5:7]) {
		return false
	}
	if len(k) == 7 {
		return true
	}
	if len(k) < 10 || k[7] != '-' || !digits(k[8:10]) {
		return false
	}
	if len(k) == 10 {
		return true
	}
	if k[10] != 'T' && k[10] != ' ' || len(k) < 13 {
		return false
	}
	for i := 11; i < len(k); i++ {
		c := k[i]
		if !isDigit(c) && c != ':' && c != '.' && c != '+' && c != '-' && c != 'Z' {
			return false
		}
	}
	return true
}

// hexKey: 6 or more hex digits, one case, with a digit and a letter, so
// that neither a number (integerKey's) nor a word spelt in hex letters
// ("facade", "added") is taken for a hash.
func hexKey(k string) bool {
	if len(k) < 6 {
		return false
	}
	var digit, lower, upper bool
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case isDigit(c):
			digit = true
		case 'a' <= c && c <= 'f':
			lower = true
		case 'A' <= c && c <= 'F':
			upper = true
		default:
			return false
		}
	}
	return digit && (lower != upper)
}

// Collapse returns s with the map rule applied to every object of it, as
// Of would have applied it to the answer: a shape read back from text that
// an older release wrote, before maps, comes out as a body of it would
// today. Objects that lost keys to MaxKeys are left as they are: the keys
// they did not keep cannot be judged.
func Collapse(s Shape) Shape {
	if s.root == nil {
		return s
	}
	return newShape(collapse(s.root, 1))
}

// collapse returns a copy of n with its maps collapsed, innermost first.
func collapse(n *node, depth int) *node {
	c := &node{kinds: n.kinds, nkeys: n.nkeys}
	if depth > MaxDepth+1 {
		return c
	}
	if n.elem != nil {
		c.elem = collapse(n.elem, depth+1)
	}
	if n.val != nil {
		c.val = collapse(n.val, depth+1)
	}
	if n.kinds&kindObject == 0 {
		return c
	}
	idx := make(map[string]*node, len(n.fields))
	keys := make([]string, len(n.fields))
	for i, f := range n.fields {
		keys[i] = f.key
		idx[f.key] = collapse(f.shape, depth+1)
	}
	if !n.truncated() && isMap(keys, idx) {
		val := c.val
		if val == nil {
			val = &node{}
		}
		for _, k := range keys {
			merge(val, idx[k], depth+1)
		}
		c.kinds = c.kinds&^kindObject | kindMap
		c.val, c.nkeys = val, 0
		return c
	}
	c.fields = make([]field, len(keys))
	for i, k := range keys {
		c.fields[i] = field{key: k, shape: idx[k], optional: n.fields[i].optional}
	}
	return c
}
