package results

import (
	"strings"
	"unicode/utf8"
)

// minCodeRunes is as much of a rule quoted in a message as Shorten keeps:
// enough to recognise which rule it was; minAsideRunes as much of an aside
// after an observation.
const (
	minCodeRunes  = 12
	minAsideRunes = 16
)

// Clip cuts s at its end to at most n characters (runes), for a line, a
// cell or a field with a limit in characters: s itself when it has no more
// than n, otherwise its first n-1 characters and "…", or "" when n < 2
// leaves no room for a character before the mark. It keeps whitespace as
// it is; Shorten folds it and cuts the middle, keeping a message's end.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n < 2 {
		return ""
	}
	kept := 0
	for i := range s {
		if kept == n-1 {
			return s[:i] + "…"
		}
		kept++
	}
	return s
}

// ClipBytes cuts s at its end to its first n bytes, backed up to the start
// of a character so that valid UTF-8 stays valid, and marks the cut with
// "…", which comes on top of the n bytes: for a message bounded in bytes
// where it is stored or logged. s itself when it has no more than n bytes.
func ClipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Shorten fits msg on one line of at most n characters (runes), for a
// table cell, a status page or an excerpt of a server's text. Runs of
// whitespace, newlines included, fold to one space.
//
// A message reads from its context to what was observed: `step verify:
// claim not confirmed within 10s (4 polls): `response.state == "refunded"`
// was false: state: "paid"`, or `tools/call "get-weather": ... missing
// properties: ["location"]": the server rejects the arguments`. The start
// says where, the end says what was seen, and the rule text quoted between
// backticks can be read in the config. So Shorten shortens that rule text
// first, keeping the start of each rule, then an aside in parentheses that
// ends a message after a rule's observation (`...was false: priority is
// string (item {"id": ...})`), keeping its start, and only if that is not
// enough cuts the middle of the message, keeping its first third and the
// rest of its end. Each cut is marked with "…". Messages are stored whole; Shorten
// is for showing them, or for a cap a message must respect.
func Shorten(msg string, n int) string {
	s := strings.Join(strings.Fields(msg), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return strings.Repeat("…", max(n, 0))
	}
	r = shortenCode(r, len(r)-n)
	if len(r) <= n {
		return string(r)
	}
	r = shortenAside(r, len(r)-n)
	if len(r) <= n {
		return string(r)
	}
	head := (n - 1) / 3
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// shortenCode shortens the spans of r quoted between backticks by up to
// excess runes (the "…" each cut adds included), the longest first, each
// down to minCodeRunes at the least; it returns r unchanged when no span
// is longer than that.
func shortenCode(r []rune, excess int) []rune {
	type span struct{ start, end, keep int } // r[start:end] is inside the backticks
	var spans []span
	open := -1
	for i, c := range r {
		if c != '`' {
			continue
		}
		if open < 0 {
			open = i
			continue
		}
		spans = append(spans, span{open + 1, i, i - open - 1})
		open = -1
	}
	for excess > 0 {
		longest := -1
		for i, sp := range spans {
			if sp.keep > minCodeRunes && (longest < 0 || sp.keep > spans[longest].keep) {
				longest = i
			}
		}
		if longest < 0 {
			break
		}
		sp := &spans[longest]
		if sp.keep == sp.end-sp.start {
			excess++ // the first cut of a span adds its "…"
		}
		sp.keep--
		excess--
	}
	out := make([]rune, 0, len(r))
	last := 0
	for _, sp := range spans {
		if sp.keep == sp.end-sp.start {
			continue
		}
		out = append(out, r[last:sp.start+sp.keep]...)
		out = append(out, '…')
		last = sp.end
	}
	return append(out, r[last:]...)
}

// shortenAside shortens, by up to excess runes, the parenthesised aside
// that ends r when it follows a span quoted between backticks: the item a
// validate rule was false on, say, which matters less than what the rule
// saw in it. The aside keeps its start, at least minAsideRunes of it.
func shortenAside(r []rune, excess int) []rune {
	if len(r) == 0 || r[len(r)-1] != ')' {
		return r
	}
	depth, open := 0, -1
	for i := len(r) - 1; i >= 0 && open < 0; i-- {
		switch r[i] {
		case ')':
			depth++
		case '(':
			if depth--; depth == 0 {
				open = i
			}
		}
	}
	if open < 1 || r[open-1] != ' ' || strings.Count(string(r[:open]), "`") < 2 {
		return r
	}
	inside := len(r) - 1 - (open + 1)
	keep := max(inside-excess-1, minAsideRunes)
	if keep >= inside {
		return r
	}
	return append(r[:open+1+keep:open+1+keep], '…', ')')
}
