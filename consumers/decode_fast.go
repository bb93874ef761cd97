package consumers

import (
	"encoding/binary"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// decodeFast decodes a body that is valid JSON in one pass, straight into
// rule values; ok is false for anything else, and DecodeJSON then asks
// decodeStd for the exact error. It must accept exactly the bodies decodeStd
// accepts and give the same values (FuzzDecodeFastMatchesStd checks both):
// the same grammar as encoding/json's scanner, the same string unquoting
// (invalid UTF-8 and lone surrogates become U+FFFD), the depth limit, and
// numbers converted as normalizer.number does.
//
// It exists because encoding/json with UseNumber followed by the normalizer
// walks every value twice, allocates a json.Number and a boxed value for
// each number, a string per key, and grows every map and slice by
// appending. This decoder allocates each map and list once at its size,
// each distinct key once per pooled decoder, and strings and numbers in
// shared blocks: on a 4 KB search answer about a tenth of the allocations
// and a third of the CPU (BenchmarkDecodeJSON).
func decodeFast(body []byte) (any, bool) {
	d := fastDecoders.Get().(*fastDecoder)
	d.data, d.pos, d.depth = body, 0, 0
	v, ok := d.value()
	if ok {
		d.skipSpace()
		ok = d.pos == len(d.data)
	}
	d.release()
	if !ok {
		return nil, false
	}
	return v, true
}

// fastDecoders keeps the scratch stacks and the key table between decodes;
// nothing in them outlives a decode except interned keys, which are
// immutable strings.
var fastDecoders = sync.Pool{New: func() any {
	return new(fastDecoder)
}}

type fastDecoder struct {
	data  []byte
	pos   int
	depth int
	// elems and members hold the elements of the arrays and the members of
	// the objects still open, innermost last: each array and map is then
	// allocated once at its exact size.
	elems   []any
	members []member
	// keys holds object keys met in earlier objects: an API answer repeats
	// the same few keys in every item, and each is allocated once.
	keys [256]string
	buf  []byte // unescaped string bytes
	// strs, ints and floats are the slabs of boxed values.
	strs   []string
	ints   []int
	floats []float64
	// text holds the bytes of the strings of this decode, which point into
	// it: one allocation for many strings. It is never reused, and a
	// string kept after the decode keeps its chunk alive (at most
	// maxTextChunk bytes, or the string's own size).
	text []byte
}

type member struct {
	key   string
	value any
}

const (
	maxInternedKeyLen = 64
	// maxPooledScratch bounds what a pooled decoder keeps of a huge body.
	maxPooledScratch = 1 << 14
)

func (d *fastDecoder) release() {
	clear(d.elems)
	clear(d.members)
	d.elems, d.members = d.elems[:0], d.members[:0]
	if cap(d.elems) > maxPooledScratch {
		d.elems = nil
	}
	if cap(d.members) > maxPooledScratch {
		d.members = nil
	}
	if cap(d.buf) > maxPooledScratch {
		d.buf = nil
	}
	d.data, d.text, d.strs, d.ints, d.floats = nil, nil, nil, nil, nil
	fastDecoders.Put(d)
}

func (d *fastDecoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *fastDecoder) value() (any, bool) {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		s, ok := d.str(false)
		return d.boxString(s), ok
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *fastDecoder) literal(lit string) bool {
	if len(d.data)-d.pos < len(lit) || string(d.data[d.pos:d.pos+len(lit)]) != lit {
		return false
	}
	d.pos += len(lit)
	return true
}

func (d *fastDecoder) array() (any, bool) {
	d.pos++ // [
	if d.depth++; d.depth > maxJSONDepth {
		return nil, false
	}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return []any{}, true
	}
	base := len(d.elems)
	for {
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		d.elems = append(d.elems, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, false
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			d.depth--
			out := make([]any, len(d.elems)-base)
			copy(out, d.elems[base:])
			clear(d.elems[base:])
			d.elems = d.elems[:base]
			return out, true
		default:
			return nil, false
		}
	}
}

func (d *fastDecoder) object() (any, bool) {
	d.pos++ // {
	if d.depth++; d.depth > maxJSONDepth {
		return nil, false
	}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return map[string]any{}, true
	}
	base := len(d.members)
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, false
		}
		key, ok := d.str(true)
		if !ok {
			return nil, false
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, false
		}
		d.pos++
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		d.members = append(d.members, member{key, v})
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, false
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.depth--
			ms := d.members[base:]
			m := make(map[string]any, len(ms))
			for _, x := range ms {
				m[x.key] = x.value // in order: the last duplicate wins, as in encoding/json
			}
			clear(ms)
			d.members = d.members[:base]
			return m, true
		default:
			return nil, false
		}
	}
}

// str reads the string starting at the opening quote at d.pos.
func (d *fastDecoder) str(key bool) (string, bool) {
	d.pos++
	start := d.pos
	data := d.data
	i := start
	// Eight bytes at a time while none of them ends the plain part.
	for ; i+8 <= len(data); i += 8 {
		if plainWord(binary.LittleEndian.Uint64(data[i:])) != 0 {
			break
		}
	}
	for ; i < len(data); i++ {
		c := data[i]
		if c == '"' {
			d.pos = i + 1
			if key {
				return d.intern(data[start:i]), true
			}
			return d.newText(data[start:i]), true
		}
		if c == '\\' || c < ' ' || c >= utf8.RuneSelf {
			return d.strSlow(start, i, key)
		}
	}
	return "", false
}

// plainWord is non-zero when one of the eight bytes in w is a quote, a
// backslash, a control character or not ASCII (the classic "has zero byte"
// bit trick, applied to w with each of those bytes xor-ed away).
func plainWord(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote := w ^ (ones * '"')
	backslash := w ^ (ones * '\\')
	return ((quote-ones)&^quote | (backslash-ones)&^backslash | (w - ones*' ') | w) & highs
}

// strSlow finishes a string that has escapes or bytes beyond ASCII, from i
// on, as encoding/json's scanner and unquote do.
func (d *fastDecoder) strSlow(start, i int, key bool) (string, bool) {
	data := d.data
	plain := true // no escapes
	for ; ; i++ {
		if i >= len(data) {
			return "", false
		}
		c := data[i]
		if c == '"' {
			break
		}
		if c < ' ' {
			return "", false
		}
		if c != '\\' {
			continue
		}
		plain = false
		if i++; i >= len(data) {
			return "", false
		}
		switch data[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(data) || hex4(data[i+1:i+5]) < 0 {
				return "", false
			}
			i += 4
		default:
			return "", false
		}
	}
	raw := data[start:i]
	d.pos = i + 1
	if plain && utf8.Valid(raw) {
		if key {
			return d.intern(raw), true
		}
		return d.newText(raw), true
	}
	if key {
		return string(d.unquote(raw)), true
	}
	return d.newText(d.unquote(raw)), true
}

// unquote is encoding/json's unquote on the text between the quotes of a
// string the scanner accepted: escapes decoded, a surrogate pair combined,
// a lone surrogate and every invalid UTF-8 byte replaced with U+FFFD.
func (d *fastDecoder) unquote(s []byte) []byte {
	b := d.buf[:0]
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			switch s[r+1] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := hex4(s[r+2 : r+6])
				r += 6
				if utf16.IsSurrogate(rr) {
					var rr1 rune = -1
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						rr1 = hex4(s[r+2 : r+6])
					}
					if dec := utf16.DecodeRune(rr, rr1); dec != utf8.RuneError {
						r += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
					rr = utf8.RuneError
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // " \ /
				b = append(b, s[r+1])
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	d.buf = b
	return b
}

// hex4 is the value of four hex digits, or -1.
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// maxTextChunk bounds a chunk of text.
const maxTextChunk = 32 << 10

// newText returns b as a string whose bytes are in text.
func (d *fastDecoder) newText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > cap(d.text)-len(d.text) {
		// The rest of the body bounds the rest of its strings, but for
		// escapes and invalid UTF-8 (three bytes for one).
		d.text = make([]byte, 0, max(len(b), min(len(d.data)-d.pos+len(b), maxTextChunk)))
	}
	d.text = append(d.text, b...)
	t := d.text[len(d.text)-len(b):]
	return unsafe.String(&t[0], len(t))
}

// intern returns raw as a string, shared with earlier keys of the same
// text: keys is a direct-mapped cache, cheaper than a map's hashing.
func (d *fastDecoder) intern(raw []byte) string {
	if len(raw) > maxInternedKeyLen {
		return string(raw)
	}
	h := uint(len(raw))
	for _, c := range raw {
		h = h*31 + uint(c)
	}
	slot := &d.keys[h%uint(len(d.keys))]
	if *slot == string(raw) {
		return *slot
	}
	*slot = string(raw)
	return *slot
}

// number reads a number with JSON's grammar. Integers of up to 18 digits
// are converted here; other numbers as normalizer.number converts them, so
// that both decoders agree on every literal.
func (d *fastDecoder) number() (any, bool) {
	data := d.data
	start, i := d.pos, d.pos
	neg := data[i] == '-'
	if neg {
		i++
	}
	digits := i
	switch {
	case i >= len(data):
		return nil, false
	case data[i] == '0':
		i++
	case '1' <= data[i] && data[i] <= '9':
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	integral := true
	if i < len(data) && data[i] == '.' {
		integral = false
		if i = skipDigits(data, i+1); i < 0 {
			return nil, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		integral = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i = skipDigits(data, i); i < 0 {
			return nil, false
		}
	}
	d.pos = i
	if integral && i-digits <= 18 {
		n := 0
		for _, c := range data[digits:i] {
			n = n*10 + int(c-'0')
		}
		if neg {
			n = -n
		}
		return d.boxInt(n), true
	}
	lit := data[start:i]
	if !integral {
		// A fraction or exponent never parses as an integer, so this is
		// what normalizer.number ends with. The conversion does not
		// allocate: the text does not escape ParseFloat.
		f, err := strconv.ParseFloat(string(lit), 64)
		return d.boxFloat(f), err == nil
	}
	n := normalizer{strict: true}
	v := n.number(string(lit))
	return v, n.err == nil
}

// skipDigits returns the offset after the digits starting at i, or -1 when
// there is none.
func skipDigits(data []byte, i int) int {
	j := i
	for j < len(data) && '0' <= data[j] && data[j] <= '9' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// Boxing: putting a string, an int or a float64 into an any allocates a
// copy of the value on its own, and those were two allocations in three on
// a search answer. The decoder instead keeps the values in slabs, one
// allocation per slabSize values, and makes each interface point at its
// slot, exactly as the runtime's own boxing points at its copy: an
// interface holding a non-pointer value is its type word and a pointer to
// the value, a layout Go has not changed since 1.4 (the race detector's
// pointer checks accept it). A slot is never written again once handed
// out, and a slab is not reused, so the values are as immutable as the
// runtime's. On BenchmarkDecodeJSON/4KB this took 160 allocations to 53 and
// about a sixth of the CPU; TestDecodeJSONBoxedValues pins the behaviour.
const slabSize = 64

type eface struct {
	typ, data unsafe.Pointer
}

var (
	stringTypeWord = typeWord("")
	intTypeWord    = typeWord(0)
	floatTypeWord  = typeWord(0.0)
)

func typeWord(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

func box(typ, data unsafe.Pointer) any {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, data
	return v
}

func (d *fastDecoder) boxString(s string) any {
	if len(d.strs) == cap(d.strs) {
		d.strs = make([]string, 0, slabSize)
	}
	d.strs = append(d.strs, s)
	return box(stringTypeWord, unsafe.Pointer(&d.strs[len(d.strs)-1]))
}

func (d *fastDecoder) boxInt(n int) any {
	if n >= 0 && n < 256 {
		return n // the runtime boxes these without allocating
	}
	if len(d.ints) == cap(d.ints) {
		d.ints = make([]int, 0, slabSize)
	}
	d.ints = append(d.ints, n)
	return box(intTypeWord, unsafe.Pointer(&d.ints[len(d.ints)-1]))
}

func (d *fastDecoder) boxFloat(f float64) any {
	if len(d.floats) == cap(d.floats) {
		d.floats = make([]float64, 0, slabSize)
	}
	d.floats = append(d.floats, f)
	return box(floatTypeWord, unsafe.Pointer(&d.floats[len(d.floats)-1]))
}
