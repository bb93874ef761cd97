package checks

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one configuration error at a position in a file. Line and Column
// are 1-based; Column counts runes, as YAML and expr do. Every error Parse
// returns has a position; only Load's "cannot read" error has Line 0.
type Error struct {
	File    string
	Line    int
	Column  int
	Message string
}

// Error formats the error as "file:line:col: message", the form editors and
// terminals turn into a link, or "file: message" when Line is 0 (the file
// itself could not be read).
func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
}

// ErrorList is every error found while loading a config, so a user fixes
// them all in one pass instead of one per run. It is an error; like
// go/scanner.ErrorList it prints one error per line, sorted by file, line
// and column.
type ErrorList []*Error

// Error prints one error per line in sorted order.
func (l ErrorList) Error() string {
	sorted := make(ErrorList, len(l))
	copy(sorted, l)
	sorted.Sort()
	lines := make([]string, len(sorted))
	for i, e := range sorted {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives errors.As and errors.Is access to each *Error.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Sort orders the list by file, line, column and message.
func (l ErrorList) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Message < b.Message
	})
}

// Err returns the list sorted and without exact repeats as an error, or nil
// when it is empty. Repeats happen by design: a bad value under defaults:
// is judged once for every probe that inherits it.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	out := make(ErrorList, len(l))
	copy(out, l)
	out.Sort()
	uniq := out[:1]
	for _, e := range out[1:] {
		if last := uniq[len(uniq)-1]; *last != *e {
			uniq = append(uniq, e)
		}
	}
	return uniq
}

// add records an error; positions are clamped to 1 so that every error
// names a real place in the file even when the parser gives none.
func (l *ErrorList) add(file string, line, col int, format string, args ...any) {
	*l = append(*l, &Error{File: file, Line: max(line, 1), Column: max(col, 1), Message: fmt.Sprintf(format, args...)})
}
