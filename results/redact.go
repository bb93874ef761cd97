package results

import (
	"encoding/base64"
	"fmt"
	"html"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"
)

// Redacted is what a secret is replaced with wherever it would be shown.
const Redacted = "<redacted>"

// minSecretLen is the shortest value the Redactor scrubs: shorter values
// (a "1", an "en") would turn ordinary text into noise without protecting
// anything worth protecting.
const minSecretLen = 4

// Redactor scrubs known secret values from text that leaves toolpulse:
// stored response samples, messages, API output and alerts. The zero value
// scrubs nothing. A Redactor is immutable and safe for concurrent use.
//
// It scrubs each secret in every form toolpulse or a common encoder gives
// it (see Encodings), in one pass over the text: a provider that echoes a
// token JSON-escaped, query-escaped or base64'd leaks it as surely as one
// that echoes it as is.
type Redactor struct {
	replacer *strings.Replacer
	// patterns is every form of every secret, longest first, for With.
	patterns []string
}

// NewRedactor returns a Redactor for the given secret values. Longer values
// are replaced first, so a secret that contains another is scrubbed whole.
func NewRedactor(secrets ...string) *Redactor {
	return (&Redactor{}).With(secrets...)
}

// With returns a Redactor that scrubs r's secrets and more: a run's own,
// such as a token a step captured (SPEC §11). r is not changed.
func (r *Redactor) With(more ...string) *Redactor {
	var fresh []string
	for _, s := range more {
		if len(s) >= minSecretLen {
			fresh = append(fresh, Encodings(s)...)
		}
	}
	if len(fresh) == 0 && r != nil {
		return r
	}
	uniq := map[string]bool{}
	if r != nil {
		for _, p := range r.patterns {
			uniq[p] = true
		}
	}
	for _, p := range fresh {
		uniq[p] = true
	}
	if len(uniq) == 0 {
		return &Redactor{}
	}
	patterns := make([]string, 0, len(uniq))
	for p := range uniq {
		patterns = append(patterns, p)
	}
	// strings.Replacer tries its pairs in order at each position: longest
	// first scrubs a secret that contains another whole.
	sort.Slice(patterns, func(i, j int) bool {
		if len(patterns[i]) != len(patterns[j]) {
			return len(patterns[i]) > len(patterns[j])
		}
		return patterns[i] < patterns[j]
	})
	pairs := make([]string, 0, 2*len(patterns))
	for _, p := range patterns {
		pairs = append(pairs, p, Redacted)
	}
	return &Redactor{replacer: strings.NewReplacer(pairs...), patterns: patterns}
}

// Encodings returns the forms in which secret s may come back in a body,
// a header or a message, s itself first:
//
//   - URL-escaped as a query value and as a path segment or path (how
//     toolpulse puts a value into a URL), and unescaped when s is itself
//     escaped;
//   - base64 in the standard and URL alphabets, padded and raw;
//   - HTML-escaped;
//   - each of those JSON-escaped as common encoders write strings: "/" as
//     is or as \/, <, > and & as is or as \u003c (Go), non-ASCII as is or
//     as \uXXXX (Python, PHP), control characters as \n or \u00XX, hex
//     digits in either case.
//
// Not covered: base64 of s inside the base64 of a longer text (its
// characters depend on where s falls in the 3-byte groups), a JSON
// encoder that escapes ordinary letters, and any other transformation.
func Encodings(s string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(v string) {
		if len(v) >= minSecretLen && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	add(s)
	add(url.QueryEscape(s))
	add(url.PathEscape(s))
	add((&url.URL{Path: s}).EscapedPath())
	if v, err := url.QueryUnescape(s); err == nil {
		add(v)
	}
	if v, err := url.PathUnescape(s); err == nil {
		add(v)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		add(enc.EncodeToString([]byte(s)))
	}
	add(html.EscapeString(s))
	add(strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&quot;", `'`, "&#x27;").Replace(s))
	for _, v := range out[:len(out):len(out)] {
		if !strings.ContainsFunc(v, jsonSpecial) {
			continue // every style writes v as is
		}
		for _, o := range jsonStyles {
			add(jsonEscape(v, o))
		}
	}
	return out
}

// jsonStyle is one way of writing a JSON string's characters.
type jsonStyle struct {
	slash    bool   // "/" as \/
	html     string // <, > and & as \u00XX in this hex format; "" as is
	nonASCII string // non-ASCII as \uXXXX in this hex format; "" as is
	control  string // control characters without a short form
}

// jsonStyles is every combination of the choices JSON encoders make.
var jsonStyles = func() []jsonStyle {
	var out []jsonStyle
	for _, slash := range []bool{false, true} {
		for _, h := range []string{"", "\\u%04x", "\\u%04X"} {
			for _, n := range []string{"", "\\u%04x", "\\u%04X"} {
				for _, c := range []string{"\\u%04x", "\\u%04X"} {
					out = append(out, jsonStyle{slash: slash, html: h, nonASCII: n, control: c})
				}
			}
		}
	}
	return out
}()

// jsonSpecial reports whether some JSON encoder writes r other than as is.
func jsonSpecial(r rune) bool {
	return r < 0x20 || r >= utf8.RuneSelf || strings.ContainsRune(`"\\/<>&`, r)
}

// jsonEscape writes s as the inside of a JSON string in style o.
func jsonEscape(s string, o jsonStyle) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '/' && o.slash:
			b.WriteString(`\/`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, o.control, r)
		case (r == '<' || r == '>' || r == '&') && o.html != "":
			fmt.Fprintf(&b, o.html, r)
		case r >= utf8.RuneSelf && o.nonASCII != "":
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(&b, o.nonASCII, 0xd800+(r>>10))
				fmt.Fprintf(&b, o.nonASCII, 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(&b, o.nonASCII, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Redact returns s with every known secret replaced by Redacted.
func (r *Redactor) Redact(s string) string {
	if r == nil || r.replacer == nil || s == "" {
		return s
	}
	// Written into a builder of s's size: Replace builds the same text
	// and then copies it, a second body-sized allocation for a sample.
	var b strings.Builder
	b.Grow(len(s))
	r.replacer.WriteString(&b, s) // a Builder never fails
	return b.String()
}

// RedactResult scrubs every free-text field of res in place: the error
// message, each attempt's and each step's message, the response sample and
// the MCP server's URL (a token in its path).
func (r *Redactor) RedactResult(res *Result) {
	if res.MCP != nil {
		m := *res.MCP
		m.Server = r.Redact(m.Server)
		res.MCP = &m
	}
	if res.Error != nil {
		res.Error.Message = r.Redact(res.Error.Message)
	}
	for i := range res.Attempts {
		res.Attempts[i].Message = r.Redact(res.Attempts[i].Message)
	}
	res.ResponseSample = r.Redact(res.ResponseSample)
	for i := range res.Steps {
		if e := res.Steps[i].Error; e != nil {
			e.Message = r.Redact(e.Message)
		}
	}
}
