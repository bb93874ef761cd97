// Package slackprinter is a local stand-in for Slack: it accepts what
// toolpulse posts to an incoming webhook and prints each message readably,
// so `toolpulse demo` shows its alerts without any network access.
package slackprinter

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// Printer is an http.Handler that prints every webhook message it receives.
// It is safe for concurrent use.
type Printer struct {
	mu       sync.Mutex
	w        io.Writer
	received int
}

// New returns a Printer writing to w.
func New(w io.Writer) *Printer { return &Printer{w: w} }

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
	var b strings.Builder
	fmt.Fprintf(&b, "\n┌─ Slack message %d ─ %s\n", p.received, unescape(firstLine(msg.Text)))
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
			for _, line := range strings.Split(plain(part), "\n") {
				if strings.TrimSpace(line) != "" {
					fmt.Fprintf(&b, "│ %s\n", line)
				}
			}
		}
	}
	b.WriteString("└─\n")
	_, _ = io.WriteString(p.w, b.String())
	_, _ = io.WriteString(w, "ok")
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
