package checks

import (
	"strings"
)

// envError is a problem with one ${...} reference; Offset is the byte offset
// of its "$" in the scalar, so the loader can point at it in the file.
// Messages name variables but never quote the text around them: the scalar
// may be a secret such as "Bearer ${TOKEN".
type envError struct {
	Offset  int
	Length  int // bytes of the reference as written, for locating it
	Message string
}

// expandEnv expands environment references in one YAML scalar value. It runs
// after parsing, so a variable's value can never add YAML structure, and the
// value is inserted as is, never expanded again.
//
//   - ${NAME} is the variable's value; it is an error when NAME is unset
//     (set but empty is fine: the user said so).
//   - ${NAME:-default} is the value when NAME is set and not empty, otherwise
//     default, taken literally up to the first "}" (as in POSIX shells).
//   - $$ is a literal $.
//   - A $ followed by anything else is kept as is, so "$HOME" or a price
//     stays literal; only "${" starts a reference.
//
// NAME is a letter or _ followed by letters, digits or _. Any other ${...}
// form (${NAME-x}, ${NAME:=x}, nesting in a default, an unterminated ${) is
// an error rather than silently literal text. Every error in s is reported.
func expandEnv(s string, lookupEnv func(string) (string, bool)) (string, []envError) {
	out, _, errs := expandEnvSpans(s, lookupEnv)
	return out, errs
}

// envSpan is where one ${...} reference's value landed in expandEnv's
// output: out[Start:End].
type envSpan struct{ Start, End int }

// expandEnvSpans is expandEnv that also says where each reference's value
// (or default) is in its output, so a URL can treat what the environment
// put in it as a secret.
func expandEnvSpans(s string, lookupEnv func(string) (string, bool)) (string, []envSpan, []envError) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	var errs []envError
	var spans []envSpan
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
			continue
		case '{':
		default:
			b.WriteByte('$')
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			errs = append(errs, envError{Offset: i, Length: len(s) - i,
				Message: "unterminated ${: expected ${NAME} or ${NAME:-default}; write a literal $ as $$"})
			b.WriteString(s[i:])
			break
		}
		ref := s[i+2 : i+2+end] // between the braces
		next := i + 2 + end + 1
		name, def, hasDef := ref, "", false
		if k := strings.IndexByte(ref, ':'); k >= 0 {
			name = ref[:k]
			rest := ref[k+1:]
			if !strings.HasPrefix(rest, "-") {
				errs = append(errs, envError{Offset: i, Length: next - i,
					Message: "unsupported ${...} form: expected ${NAME} or ${NAME:-default}"})
				i = next
				continue
			}
			def, hasDef = rest[1:], true
		}
		switch {
		case !validEnvName(name):
			errs = append(errs, envError{Offset: i, Length: next - i,
				Message: "invalid ${...}: expected ${NAME} or ${NAME:-default}, NAME made of letters, digits and _ and not starting with a digit"})
		case hasDef && strings.Contains(def, "${"):
			errs = append(errs, envError{Offset: i, Length: next - i,
				Message: "${" + name + ":-...}: a default is literal text; nested ${...} is not supported"})
		default:
			v, ok := lookupEnv(name)
			switch {
			case hasDef && (!ok || v == ""):
				spans = append(spans, envSpan{b.Len(), b.Len() + len(def)})
				b.WriteString(def)
			case ok:
				spans = append(spans, envSpan{b.Len(), b.Len() + len(v)})
				b.WriteString(v)
			default:
				errs = append(errs, envError{Offset: i, Length: next - i,
					Message: "environment variable " + name + " is not set; set it, or give a default with ${" + name + ":-default}"})
			}
		}
		i = next
	}
	return b.String(), spans, errs
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
