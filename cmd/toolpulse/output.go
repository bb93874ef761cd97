package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolpulse/toolpulse/results"
)

// printResults writes results in the chosen format: "json" is one SPEC §6
// envelope per line; "text" is a table a person can scan, then a summary.
func printResults(w io.Writer, format string, all []results.Result) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false) // shape summaries contain < and >
		for i := range all {
			if err := enc.Encode(all[i].Envelope()); err != nil {
				return err
			}
		}
		return nil
	}
	return printTable(w, all)
}

// maxMessageRunes keeps a table row on one screen line in most terminals.
// A longer message is shortened by results.Shorten, which keeps what was
// observed at its end.
const maxMessageRunes = 100

func printTable(w io.Writer, all []results.Result) error {
	// As in history: a TOOL column only when an MCP probe ran.
	withTool := slices.ContainsFunc(all, func(r results.Result) bool { return r.MCP != nil })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if withTool {
		fmt.Fprint(tw, "PROBE\tTOOL\t")
	} else {
		fmt.Fprint(tw, "PROBE\t")
	}
	fmt.Fprintln(tw, "OUTCOME\tCODE\tATTEMPTS\tLATENCY\tHTTP\tMESSAGE")
	counts := map[results.Outcome]int{}
	for i := range all {
		r := &all[i]
		counts[r.Outcome]++
		code, message := codeAndMessage(r)
		fmt.Fprintf(tw, "%s\t", printable(r.Probe))
		if withTool {
			fmt.Fprintf(tw, "%s\t", mcpToolText(r.MCP))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.Outcome, code,
			r.AttemptCount(), formatLatency(r.Duration), statusText(r.HTTPStatus), message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	parts := make([]string, 0, len(results.Outcomes))
	for _, o := range results.Outcomes {
		parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
	}
	_, err := fmt.Fprintf(w, "\n%d probes: %s\n", len(all), strings.Join(parts, ", "))
	return err
}

// nothingSelected stands for the counts of a run that selected nothing:
// "0/0" or "0 selected, 0 validated" reads like a measurement, where there
// was nothing to count.
const nothingSelected = "–"

// codeAndMessage is what a table row says of a result: its code and
// message, or "-" and the counts of a pass, on one line, printable.
func codeAndMessage(r *results.Result) (code, message string) {
	code, message = "-", fmt.Sprintf("%d selected, %d validated", r.SelectedCount, r.ValidatedCount)
	if r.SelectedCount == 0 {
		message = nothingSelected
	}
	if r.Error != nil {
		code, message = string(r.Error.Code), r.Error.Message
	}
	return printable(code), results.Shorten(printable(message), maxMessageRunes)
}

// mcpToolText is how a table names an MCP probe's tool: the tool at its
// server's host and path; "-" for an HTTP probe.
func mcpToolText(t *results.MCPTarget) string {
	if t == nil {
		return "-"
	}
	server := t.Server
	if _, rest, ok := strings.Cut(server, "://"); ok {
		server = rest
	}
	return printable(t.Tool + " @ " + server)
}

// statusText is an HTTP status for a table, "-" when no response arrived.
func statusText(status int) string {
	if status == 0 {
		return "-"
	}
	return strconv.Itoa(status)
}

func formatLatency(d time.Duration) string {
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

// oneLine folds whitespace runs (newlines included) to single spaces and
// cuts s to n runes, so one row of text is one table row. A run's message
// is shortened by results.Shorten instead, which keeps its end.
func oneLine(s string, n int) string {
	return results.Clip(strings.Join(strings.Fields(s), " "), n)
}

// printable is text toolpulse did not write itself (a rule's fail()
// message built from a provider's answer, a server's error text or tool
// names, a silence's reason) made safe to write to a terminal as part of
// a line: such text is the provider's to choose, escape sequences
// included, and raw it could clear the screen, rewrite the rows above it
// or set the window title. Every text table and line that carries such
// text passes it through here; JSON output is escaped by encoding/json
// and CSV keeps text whole (csvCell).
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
func printable(s string) string {
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

// csvCell is a text cell of CSV output made inert for a spreadsheet: a
// cell that starts with =, +, -, @, a tab or a carriage return would be
// read as a formula (OWASP's "CSV injection"), so it gets a leading
// single quote, which spreadsheets show as text. Only text cells that can
// carry what a provider, a rule or a config wrote pass through here;
// numbers and timestamps are written as they are. Otherwise CSV keeps the
// text whole, escape sequences included, as JSON does.
func csvCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
