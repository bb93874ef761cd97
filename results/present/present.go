// Package present is how a result reads outside the daemon, the same on
// the CLI's tables and JSON as on the web surface: codes and messages on
// one Printable line, latencies, HTTP statuses, the JSON form of a
// silence, and the instants a person types.
package present

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolpulse/toolpulse/results"
)

// MaxMessageRunes keeps a table row on one screen line in most terminals.
// A longer message is shortened by results.Shorten, which keeps what was
// observed at its end.
const MaxMessageRunes = 100

// NothingSelected stands for the counts of a run that selected nothing:
// "0/0" or "0 selected, 0 validated" reads like a measurement, where there
// was nothing to count.
const NothingSelected = "–"

// CodeAndMessage is what a table row says of a result: its code and
// message, or "-" and the counts of a pass, on one line, Printable.
func CodeAndMessage(r *results.Result) (code, message string) {
	code, message = "-", fmt.Sprintf("%d selected, %d validated", r.SelectedCount, r.ValidatedCount)
	if r.SelectedCount == 0 {
		message = NothingSelected
	}
	if r.Error != nil {
		code, message = string(r.Error.Code), r.Error.Message
	}
	return Printable(code), results.Shorten(Printable(message), MaxMessageRunes)
}

// StatusText is an HTTP status for a table, "-" when no response arrived.
func StatusText(status int) string {
	if status == 0 {
		return "-"
	}
	return strconv.Itoa(status)
}

// FormatLatency is a latency as tables and pages show it: milliseconds
// under ten seconds, tenths of a second above.
func FormatLatency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		// Stored durations are whole milliseconds; under one is all we know.
		return "<1ms"
	case d < 10*time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}

// OneLine folds whitespace runs (newlines included) to single spaces and
// cuts s to n runes, so one row of text is one table row. A run's message
// is shortened by results.Shorten instead, which keeps its end.
func OneLine(s string, n int) string {
	return results.Clip(strings.Join(strings.Fields(s), " "), n)
}

// Printable is text toolpulse did not write itself (a rule's fail()
// message built from a provider's answer, a server's error text or tool
// names, a silence's reason) made safe to write to a terminal as part of
// a line: such text is the provider's to choose, escape sequences
// included, and raw it could clear the screen, rewrite the rows above it
// or set the window title. Every text table and line that carries such
// text passes it through here; JSON output is escaped by encoding/json
// and the CLI's CSV keeps text whole.
//
// Whitespace other than a space (tab, newline, carriage return, form
// feed, NEL, the line and paragraph separators) becomes a space, so a
// cell stays on its row and cannot return to the start of the line. The
// other control characters (C0 with ESC and BEL, DEL, C1) and the
// invisible format characters (Unicode Cf: bidi embeddings, overrides
// and isolates, which reorder the text after them, marks, zero-width
// characters, the byte-order mark, tag characters) are written as Go
// escapes, visible and unambiguous: `\x1b`, `\x7f`, `\u009b`, `\u202e`,
// `\U000e0041`. A byte that is not UTF-8 becomes U+FFFD.
func Printable(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r == utf8.RuneError || unprintable(r) || isOtherSpace(r) })
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		switch {
		case isOtherSpace(r):
			b.WriteByte(' ')
		case unprintable(r):
			switch {
			case r < utf8.RuneSelf:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r <= 0xffff:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r) // an invalid byte reads as, and is written as, U+FFFD
		}
	}
	return b.String()
}

func isOtherSpace(r rune) bool { return r != ' ' && unicode.IsSpace(r) }

func unprintable(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }

// ParseInstant reads a point in time: "" (none), a duration ago ("24h",
// "90m"), an RFC 3339 time, or a date (midnight UTC).
func ParseInstant(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration ago must not be negative", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (24h) nor a time (2026-10-26T13:07:00Z) or date (2026-10-26)", s)
}

// SilenceRow is the JSON form of a silence: the columns of the silences
// table, with the same names.
type SilenceRow struct {
	ID        int64            `json:"id"`
	Matchers  results.Matchers `json:"matchers"`
	StartsAt  string           `json:"starts_at"`
	EndsAt    string           `json:"ends_at"`
	Reason    string           `json:"reason"`
	CreatedAt string           `json:"created_at"`
	ExpiredAt *string          `json:"expired_at"`
}

// ToSilenceRow is s in its JSON form.
func ToSilenceRow(s results.Silence) SilenceRow {
	row := SilenceRow{ID: s.ID, Matchers: s.Matchers, StartsAt: results.FormatTime(s.StartsAt),
		EndsAt: results.FormatTime(s.EndsAt), Reason: s.Reason, CreatedAt: results.FormatTime(s.CreatedAt)}
	if !s.ExpiredAt.IsZero() {
		at := results.FormatTime(s.ExpiredAt)
		row.ExpiredAt = &at
	}
	return row
}
