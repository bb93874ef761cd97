package results

import "strings"

// Challenge is one challenge of a WWW-Authenticate or Proxy-Authenticate
// header (RFC 9110 §11.3): an auth scheme with a token68 or auth-params.
type Challenge struct {
	// Scheme is the auth scheme as sent; schemes compare without regard
	// to case (Is).
	Scheme string
	// Token68 is the challenge's token68 ("Basic YWxhZGRpbg=="); "" when
	// it has auth-params or nothing.
	Token68 string
	// Params are the challenge's auth-params by lower-cased name, quoted
	// strings unquoted. A name may occur once (RFC 9110 §11.2); of a
	// repeated one the first counts.
	Params map[string]string
}

// Is reports whether c's scheme is scheme, in any case.
func (c Challenge) Is(scheme string) bool { return strings.EqualFold(c.Scheme, scheme) }

// ParseChallenges returns the challenges of a header's values, in order:
// each value (a header line) may carry several, separated by commas, as
// may the list the values make together (RFC 9110 §5.3). A parameter's
// value is a token or a quoted string with backslash escapes; a server's
// unquoted value that is not a token (an unquoted URL) is taken up to
// the next comma. What cannot be read as a challenge is skipped up to the
// next comma outside quotes; the rest is still read.
func ParseChallenges(values []string) []Challenge {
	var out []Challenge
	for _, v := range values {
		out = appendChallenges(out, v)
	}
	return out
}

// appendChallenges appends the challenges of one header value to out.
func appendChallenges(out []Challenge, v string) []Challenge {
	i := 0
	for {
		i = skipSeparators(v, i)
		if i == len(v) {
			return out
		}
		end := scanToken(v, i)
		if end == i {
			i = skipElement(v, i)
			continue
		}
		c := Challenge{Scheme: v[i:end], Params: map[string]string{}}
		i = end
		// What follows the scheme after a space is its token68 or its
		// first auth-param.
		if j := skipSpace(v, i); j > i {
			if t, next, ok := scanToken68(v, j); ok {
				c.Token68, i = t, next
			} else {
				i = scanParams(v, j, c.Params)
			}
		}
		out = append(out, c)
	}
}

// scanParams reads the auth-params from v[i:] into params and returns
// where it stopped: at the end, or at the scheme of the next challenge.
func scanParams(v string, i int, params map[string]string) int {
	for isParam(v, i) {
		end := scanToken(v, i)
		name := strings.ToLower(v[i:end])
		j := skipSpace(v, skipSpace(v, end)+1) // past BWS "=" BWS
		var value string
		if j < len(v) && v[j] == '"' {
			value, j = scanQuoted(v, j)
		} else {
			k := j
			for k < len(v) && v[k] != ',' {
				k++
			}
			value, j = strings.TrimRight(v[j:k], " \t"), k
		}
		if _, seen := params[name]; !seen {
			params[name] = value
		}
		// Anything between the value and the next comma is not a
		// parameter.
		i = skipSeparators(v, skipElement(v, j))
	}
	return i
}

// isParam reports whether an auth-param starts at v[i]: a token, then
// "=" after optional spaces. A token followed by anything else is the
// scheme of the next challenge.
func isParam(v string, i int) bool {
	end := scanToken(v, i)
	if end == i {
		return false
	}
	j := skipSpace(v, end)
	return j < len(v) && v[j] == '='
}

// scanToken68 reads a token68 at v[i:], which must end the challenge (at
// the end or a comma), and returns it and where it ended.
func scanToken68(v string, i int) (string, int, bool) {
	j := i
	for j < len(v) && isToken68Char(v[j]) {
		j++
	}
	if j == i {
		return "", i, false
	}
	for j < len(v) && v[j] == '=' {
		j++
	}
	if k := skipSpace(v, j); k < len(v) && v[k] != ',' {
		return "", i, false
	}
	return v[i:j], j, true
}

// scanQuoted reads the quoted string that starts at v[i] and returns its
// text, escapes undone, and the index after its closing quote; an
// unclosed string runs to the end.
func scanQuoted(v string, i int) (string, int) {
	var b strings.Builder
	for j := i + 1; j < len(v); j++ {
		switch v[j] {
		case '"':
			return b.String(), j + 1
		case '\\':
			if j+1 < len(v) {
				j++
			}
		}
		b.WriteByte(v[j])
	}
	return b.String(), len(v)
}

// skipElement returns the index of the next comma in v from i that is
// outside a quoted string, or len(v).
func skipElement(v string, i int) int {
	for i < len(v) && v[i] != ',' {
		if v[i] == '"' {
			_, i = scanQuoted(v, i)
			continue
		}
		i++
	}
	return i
}

// skipSeparators skips the spaces and commas of a list from v[i].
func skipSeparators(v string, i int) int {
	for i < len(v) && (v[i] == ',' || v[i] == ' ' || v[i] == '\t') {
		i++
	}
	return i
}

// skipSpace skips optional whitespace (RFC 9110 §5.6.3) from v[i].
func skipSpace(v string, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
		i++
	}
	return i
}

// scanToken returns the end of the token (RFC 9110 §5.6.2) at v[i:], i
// when none starts there.
func scanToken(v string, i int) int {
	for i < len(v) && isTokenChar(v[i]) {
		i++
	}
	return i
}

func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken68Char(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0
}
