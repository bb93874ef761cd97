// Package slackprinter is a local stand-in for Slack: it accepts what
// toolpulse posts to an incoming webhook and prints each message readably,
// so `toolpulse demo` shows its alerts without any network access, and a
// config of one's own can point notify.slack.webhook_url at it
// (examples/cmd/slackprinter).
package slackprinter

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Printer is an http.Handler that prints every webhook message it receives.
// It is safe for concurrent use.
type Printer struct {
	mu       sync.Mutex
	w        io.Writer
	opts     Options
	received int
}

// Options say how a Printer lays a message out. The zero value prints every
// block in full, each line as long as it is.
type Options struct {
	// Width, when positive, wraps every printed line to at most Width
	// columns (runes), at spaces where it can.
	Width int
	// Brief prints a message's notification text (the fallback Slack shows
	// in a notification) and, under it, only the blocks of detail that text
	// leaves out, such as the rest of a long diff or a changed description:
	// no header, fields, prose or context, which repeat or frame it, and no
	// blank line above the message.
	Brief bool
}

// New returns a Printer writing every message in full to w.
func New(w io.Writer) *Printer { return &Printer{w: w} }

// NewWithOptions returns a Printer writing to w as o says.
func NewWithOptions(w io.Writer, o Options) *Printer { return &Printer{w: w, opts: o} }

// Received returns how many messages were accepted.
func (p *Printer) Received() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.received
}

// payload is the part of a webhook message the printer shows: the fallback
// text and the text of each block.
type payload struct {
	Text   string  `json:"text"`
	Blocks []block `json:"blocks"`
}

type block struct {
	Type     string    `json:"type"`
	Text     *textObj  `json:"text"`
	Fields   []textObj `json:"fields"`
	Elements []textObj `json:"elements"`
}

type textObj struct {
	Text string `json:"text"`
}

// ServeHTTP accepts one webhook post, answering like Slack: 200 "ok", or 400
// "invalid_payload".
func (p *Printer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg payload
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&msg); err != nil || msg.Text == "" {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.received++
	title := fmt.Sprintf("┌─ Slack message %d ─ ", p.received)
	var lines []string
	if p.opts.Brief {
		lines = briefLines(msg)
	} else {
		lines = fullLines(msg)
	}
	var b strings.Builder
	if !p.opts.Brief {
		b.WriteString("\n") // a brief message is short enough to need no gap above
	}
	p.write(&b, title, "│ ", unescape(firstLine(msg.Text)))
	for _, line := range lines {
		p.write(&b, "│ ", "│   ", line)
	}
	b.WriteString("└─\n")
	_, _ = io.WriteString(p.w, b.String())
	_, _ = io.WriteString(w, "ok")
}

// write adds prefix+line to b, wrapped to the Printer's width with rest
// starting each continuation line.
func (p *Printer) write(b *strings.Builder, prefix, rest, line string) {
	for _, l := range wrap(prefix, rest, line, p.opts.Width) {
		b.WriteString(l)
		b.WriteString("\n")
	}
}

// fullLines is every block of msg as text, one line per line of it.
func fullLines(msg payload) []string {
	var lines []string
	for _, bl := range msg.Blocks {
		var parts []string
		if bl.Text != nil {
			parts = append(parts, bl.Text.Text)
		}
		var fields []string
		for _, f := range bl.Fields {
			fields = append(fields, field(f.Text))
		}
		if len(fields) > 0 {
			parts = append(parts, strings.Join(fields, " · "))
		}
		for _, el := range bl.Elements {
			parts = append(parts, el.Text)
		}
		for _, part := range parts {
			lines = append(lines, textLines(part)...)
		}
	}
	return lines
}

// briefLines is each section of msg that shows what changed (a diff, a
// tool's description before and after) with a line the notification text
// lacks: its label, then its lines indented. The run's message is in the
// notification text already; the start of the body it received, like the
// fields and context, is left to the full form.
func briefLines(msg payload) []string {
	notification := plain(msg.Text)
	var lines []string
	for _, bl := range msg.Blocks {
		if bl.Type != "section" || bl.Text == nil || !strings.Contains(bl.Text.Text, "```") {
			continue
		}
		section := textLines(bl.Text.Text)
		if len(section) < 2 || !showsChange(section[0]) {
			continue
		}
		label, body := section[0], section[1:]
		news := false
		for _, line := range body {
			news = news || !strings.Contains(notification, line)
		}
		if !news {
			continue
		}
		lines = append(lines, label)
		for _, line := range body {
			lines = append(lines, "  "+line)
		}
	}
	return lines
}

// showsChange reports whether a section's label names a change: "Shape
// diff", "Definition diff", "Description before" and "Description now".
func showsChange(label string) bool {
	return strings.Contains(label, "diff") || strings.HasPrefix(label, "Description ")
}

// textLines is the non-blank lines of a block's mrkdwn text as a terminal
// shows it.
func textLines(mrkdwn string) []string {
	var lines []string
	for _, line := range strings.Split(plain(mrkdwn), "\n") {
		if strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// wrap splits prefix+line into lines of at most width runes, breaking at
// the last space that fits (or mid-word when none does) and starting each
// continuation with rest. A width of 0 or one too narrow for the prefixes
// leaves the line whole.
func wrap(prefix, rest, line string, width int) []string {
	if width <= 0 || width <= utf8.RuneCountInString(rest)+8 || width <= utf8.RuneCountInString(prefix)+8 {
		return []string{prefix + line}
	}
	var out []string
	for {
		room := width - utf8.RuneCountInString(prefix)
		r := []rune(line)
		if len(r) <= room {
			return append(out, prefix+line)
		}
		// Break at the last space that fits, unless the word after it
		// would not fit on a line of its own either: then fill the line.
		cut := room
		if i := strings.LastIndex(string(r[:room+1]), " "); i > 0 {
			space := utf8.RuneCountInString(string(r[:room+1])[:i])
			next := strings.IndexByte(string(r[space+1:])+" ", ' ')
			if utf8.RuneCountInString(string(r[space+1:])[:next]) <= width-utf8.RuneCountInString(rest) {
				cut = space
			}
		}
		out = append(out, strings.TrimRight(prefix+string(r[:cut]), " "))
		line = strings.TrimLeft(string(r[cut:]), " ")
		prefix = rest
	}
}

// slackDate matches Slack's date token <!date^UNIX^FORMAT|FALLBACK>.
var slackDate = regexp.MustCompile(`<!date\^[^|>]*\|([^>]*)>`)

// unescape renders mrkdwn the way Slack shows it: date tokens as their
// fallback text, then the three escaped characters.
func unescape(s string) string {
	s = slackDate.ReplaceAllString(s, "$1")
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// field renders a "*Label*\nvalue" field as "Label: value".
func field(s string) string {
	label, value, ok := strings.Cut(s, "\n")
	if !ok {
		return s
	}
	return strings.Trim(label, "*") + ": " + value
}

// plain drops the mrkdwn markers a terminal cannot show.
func plain(s string) string {
	s = strings.ReplaceAll(s, "```", "\n")
	return unescape(strings.NewReplacer("`", "", "*", "").Replace(s))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
