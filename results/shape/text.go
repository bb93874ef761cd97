package shape

import (
	"strconv"
	"unicode/utf8"
)

// appendText appends the canonical text of n.
func (n *node) appendText(b []byte) []byte { return n.appendForm(b, false) }

// appendSummary appends the short form of n used in diff lines: objects as
// object(N keys), without their fields.
func (n *node) appendSummary(b []byte) []byte { return n.appendForm(b, true) }

// appendForm writes n's kinds in their fixed order, separated by '|'; the
// two forms differ only in how an object is written.
func (n *node) appendForm(b []byte, summary bool) []byte {
	sep := false
	for i, k := 0, kind(1); k < kindEnd; i, k = i+1, k<<1 {
		if n.kinds&k == 0 {
			continue
		}
		if sep {
			b = append(b, '|')
		}
		sep = true
		switch {
		case k == kindList:
			b = append(b, "list<"...)
			if n.elem == nil {
				b = append(b, "empty"...)
			} else {
				b = n.elem.appendForm(b, summary)
			}
			b = append(b, '>')
		case k == kindMap:
			b = append(b, "map<"...)
			b = n.val.appendForm(b, summary)
			b = append(b, '>')
		case k == kindObject && summary:
			b = append(b, "object("...)
			b = strconv.AppendInt(b, int64(n.nkeys), 10)
			b = append(b, " keys)"...)
		case k == kindObject:
			b = append(b, "object{"...)
			for j, f := range n.fields {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendKey(b, f.key)
				if f.optional {
					b = append(b, '?')
				}
				b = append(b, ':')
				b = f.shape.appendForm(b, summary)
			}
			if n.truncated() {
				b = append(b, ",..."...)
				b = strconv.AppendInt(b, int64(n.nkeys-len(n.fields)), 10)
			}
			b = append(b, '}')
		default:
			b = append(b, kindNames[i]...)
		}
	}
	return b
}

// bareKey reports whether k is written without quotes: a non-empty run of
// ASCII letters, digits, '_' and '-'. Everything else must be quoted so that
// no key can be mistaken for syntax or for the "..." marker.
func bareKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !bareByte(k[i]) {
			return false
		}
	}
	return true
}

func bareByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

const hexDigits = "0123456789abcdef"

// Key is k as shapes write it in canonical text and diff paths: cut to
// MaxKeyBytes as Of cuts it (see Limits), then bare, or quoted as appendKey
// does. Mutation paths use it so that they read exactly as the diff lines
// of the changes they make.
func Key(k string) string { return string(appendKey(nil, boundKey(k))) }

// appendKey appends k bare or quoted. Quoted keys are printable ASCII: a
// provider's key cannot slip an invisible or bidirectional character into a
// diff line shown in Slack. The quoting is our own rather than strconv.Quote,
// whose choice of escaped runes follows the Unicode tables of the Go release:
// fingerprints stored in SQLite must survive a Go upgrade.
func appendKey(b []byte, k string) []byte {
	if bareKey(k) {
		return append(b, k...)
	}
	b = append(b, '"')
	for i := 0; i < len(k); {
		c := k[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c == 0x7f:
				b = appendEscape(b, 'x', uint32(c), 2)
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(k[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = appendEscape(b, 'x', uint32(c), 2)
		case r <= 0xffff:
			b = appendEscape(b, 'u', uint32(r), 4)
		default:
			b = appendEscape(b, 'U', uint32(r), 8)
		}
		i += size
	}
	return append(b, '"')
}

// appendEscape appends a backslash, letter and v as digits lowercase hex
// digits.
func appendEscape(b []byte, letter byte, v uint32, digits int) []byte {
	b = append(b, '\\', letter)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b = append(b, hexDigits[v>>shift&0xf])
	}
	return b
}
