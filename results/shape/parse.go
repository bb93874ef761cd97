package shape

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Parse reads canonical text as written by String and returns its shape, so
// that Parse(s.String()) equals s. It accepts only canonical text: any other
// spelling of a shape (spaces, unsorted keys or kinds, needless quotes,
// nesting deeper than MaxDepth, a key longer than MaxKeyBytes) is an error, so a text Parse accepts is its
// own String and hashes to the same fingerprint. Parse never panics; its
// errors give the byte offset of the problem.
func Parse(canonical string) (Shape, error) {
	if canonical == "" {
		return Shape{}, fmt.Errorf("shape: empty text")
	}
	p := parser{s: canonical}
	n, err := p.shape(1)
	if err != nil {
		return Shape{}, err
	}
	if p.pos != len(p.s) {
		return Shape{}, p.errorf("unexpected %q after the shape", p.s[p.pos])
	}
	// The checks above pin down the structure; this one catches the
	// spellings they leave open, such as a quoted key that could be bare.
	s := newShape(n)
	if s.text != canonical {
		return Shape{}, fmt.Errorf("shape: not canonical text (canonical form is %.80q)", s.text)
	}
	return s, nil
}

type parser struct {
	s   string
	pos int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("shape: offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// literal consumes lit if the text continues with it.
func (p *parser) literal(lit string) bool {
	if strings.HasPrefix(p.s[p.pos:], lit) {
		p.pos += len(lit)
		return true
	}
	return false
}

func (p *parser) expect(c byte) error {
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return nil
	}
	if p.pos == len(p.s) {
		return p.errorf("expected %q, found end of text", c)
	}
	return p.errorf("expected %q, found %q", c, p.s[p.pos])
}

// shape parses a union of alternatives at nesting level depth.
func (p *parser) shape(depth int) (*node, error) {
	n := &node{}
	for {
		if err := p.alt(n, depth); err != nil {
			return nil, err
		}
		if !p.literal("|") {
			return n, nil
		}
	}
}

// alt parses one alternative of a union into n.
func (p *parser) alt(n *node, depth int) error {
	start := p.pos
	var k kind
	switch {
	case p.literal("..."):
		k = kindDeep
	case p.literal("bool"):
		k = kindBool
	case p.literal("list<"):
		k = kindList
	case p.literal("map<"):
		k = kindMap
	case p.literal("null"):
		k = kindNull
	case p.literal("number"):
		k = kindNumber
	case p.literal("object{"):
		k = kindObject
	case p.literal("string"):
		k = kindString
	default:
		return p.errorf("expected a shape")
	}
	if n.kinds&^(k-1) != 0 {
		p.pos = start
		return p.errorf("kinds of a union must be distinct and in the order ..., bool, list, map, null, number, object, string")
	}
	n.kinds |= k
	if k&(kindList|kindMap|kindObject) != 0 && depth > MaxDepth {
		p.pos = start
		return p.errorf("nested deeper than %d levels", MaxDepth)
	}
	switch k {
	case kindList:
		if p.literal("empty>") {
			return nil
		}
		elem, err := p.shape(depth + 1)
		if err != nil {
			return err
		}
		n.elem = elem
		return p.expect('>')
	case kindMap:
		val, err := p.shape(depth + 1)
		if err != nil {
			return err
		}
		n.val = val
		return p.expect('>')
	case kindObject:
		return p.object(n, depth)
	}
	return nil
}

// object parses the fields of an object after "object{".
func (p *parser) object(n *node, depth int) error {
	if p.literal("}") {
		return nil
	}
	for {
		if p.literal("...") {
			if len(n.fields) != MaxKeys {
				return p.errorf("\"...\" after %d keys, want it only after %d", len(n.fields), MaxKeys)
			}
			more, err := p.count()
			if err != nil {
				return err
			}
			n.nkeys = MaxKeys + more
			return p.expect('}')
		}
		keyPos := p.pos
		key, err := p.key()
		if err != nil {
			return err
		}
		if len(n.fields) > 0 && key <= n.fields[len(n.fields)-1].key {
			p.pos = keyPos
			return p.errorf("keys must be distinct and in byte order")
		}
		if len(n.fields) == MaxKeys {
			p.pos = keyPos
			return p.errorf("more than %d keys", MaxKeys)
		}
		optional := p.literal("?")
		if err := p.expect(':'); err != nil {
			return err
		}
		child, err := p.shape(depth + 1)
		if err != nil {
			return err
		}
		n.fields = append(n.fields, field{key: key, shape: child, optional: optional})
		n.nkeys = len(n.fields)
		if p.literal(",") {
			continue
		}
		return p.expect('}')
	}
}

// count parses the number of keys an object left out: a positive decimal
// without leading zeros, small enough that Of could have produced it.
func (p *parser) count() (int, error) {
	start := p.pos
	v := 0
	for p.pos < len(p.s) && '0' <= p.s[p.pos] && p.s[p.pos] <= '9' {
		if p.pos-start == 9 {
			p.pos = start
			return 0, p.errorf("key count too large")
		}
		v = v*10 + int(p.s[p.pos]-'0')
		p.pos++
	}
	if p.pos == start || v == 0 || p.s[start] == '0' {
		p.pos = start
		return 0, p.errorf("expected the count of keys left out, a positive number")
	}
	return v, nil
}

// key parses a bare or quoted key.
func (p *parser) key() (string, error) {
	start := p.pos
	if p.pos < len(p.s) && p.s[p.pos] == '"' {
		p.pos++
		var b []byte
		for {
			if p.pos >= len(p.s) {
				p.pos = start
				return "", p.errorf("unterminated quoted key")
			}
			if len(b) > MaxKeyBytes {
				p.pos = start
				return "", p.errorf("key longer than %d bytes", MaxKeyBytes)
			}
			c := p.s[p.pos]
			switch c {
			case '"':
				p.pos++
				return string(b), nil
			case '\\':
				if p.pos+1 >= len(p.s) {
					return "", p.errorf("unterminated escape")
				}
				switch e := p.s[p.pos+1]; e {
				case '"', '\\':
					b = append(b, e)
					p.pos += 2
				case 'x', 'u', 'U':
					digits := 2
					switch e {
					case 'u':
						digits = 4
					case 'U':
						digits = 8
					}
					if p.pos+2+digits > len(p.s) {
						return "", p.errorf("unterminated escape")
					}
					v := uint32(0)
					for _, c := range []byte(p.s[p.pos+2 : p.pos+2+digits]) {
						d := unhex(c)
						if d < 0 {
							return "", p.errorf(`want \%c and %d lowercase hex digits`, e, digits)
						}
						v = v<<4 | uint32(d)
					}
					if e == 'x' {
						b = append(b, byte(v))
					} else {
						if v > utf8.MaxRune {
							return "", p.errorf("escape %q is beyond Unicode", p.s[p.pos:p.pos+2+digits])
						}
						b = utf8.AppendRune(b, rune(v))
					}
					p.pos += 2 + digits
				default:
					return "", p.errorf("unknown escape %q", p.s[p.pos:p.pos+2])
				}
			default:
				b = append(b, c)
				p.pos++
			}
		}
	}
	for p.pos < len(p.s) && bareByte(p.s[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return "", p.errorf("expected a key")
	}
	if p.pos-start > MaxKeyBytes {
		p.pos = start
		return "", p.errorf("key longer than %d bytes", MaxKeyBytes)
	}
	return p.s[start:p.pos], nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}
