package slack

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolpulse/toolpulse/results"
)

// Slack's Block Kit limits. slack-go checks none of them, and Slack refuses a
// payload that breaks any one of them whole (invalid_blocks), so a provider
// that answers with a long message would otherwise silence its own alert.
const (
	maxHeaderText  = 150  // header block, plain_text
	maxSectionText = 3000 // section text, and any other text object
	maxFieldText   = 2000 // each field of a section
	maxFields      = 10   // fields per section
	maxBlocks      = 50   // blocks per message
	maxContextElem = 10   // elements per context block
	maxFallback    = 4000 // the top-level text: notifications and old clients
	// maxDiffLine keeps one pathological path (a key of 5 000 characters)
	// from crowding every other diff line out of the message.
	maxDiffLine = 300
)

const ellipsis = "…"

// mrkdwnEscaper escapes the three characters Slack's mrkdwn treats as
// control characters. Without it, a provider whose error message says
// <!channel> or <http://evil|click> would page a channel or plant a link.
var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// esc makes untrusted text literal in mrkdwn. Slack decodes the entities
// back when it displays the text, so readers see the original characters.
func esc(s string) string { return mrkdwnEscaper.Replace(s) }

// escCode is esc for text inside a ``` code block: a provider must not be
// able to close the block early and have the rest parsed as mrkdwn. A zero
// width space between backticks keeps them visible but inert.
func escCode(s string) string {
	s = strings.ReplaceAll(esc(s), "```", "`\u200b`\u200b`")
	// A backtick next to the fence would lengthen it, which Slack misreads.
	if strings.HasPrefix(s, "`") {
		s = "\u200b" + s
	}
	if strings.HasSuffix(s, "`") {
		s += "\u200b"
	}
	return s
}

// oneLine folds whitespace runs (newlines included) to single spaces, for
// the fallback text and headers, which are read as one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// runes counts characters the way Slack's limits do.
func runes(s string) int { return utf8.RuneCountInString(s) }

// clip is results.Clip for text that may already be escaped: it never
// leaves half an entity (a bare "&am") that Slack would show raw, because
// every '&' in escaped text starts an entity.
func clip(s string, limit int) string {
	c := results.Clip(s, limit)
	if c == s || c == "" {
		return c
	}
	c = strings.TrimSuffix(c, ellipsis)
	if i := strings.LastIndexByte(c, '&'); i >= 0 && !strings.Contains(c[i:], ";") {
		c = c[:i]
	}
	return c + ellipsis
}

// humanDuration writes how long something lasted the way people say it:
// "850ms", "45s", "12m30s", "1h5m", "3d4h". Precision drops as durations
// grow, because nobody acts on the seconds of an outage that lasted hours.
func humanDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return trimZeroUnits(d.Round(time.Second).String())
	case d < 48*time.Hour:
		return trimZeroUnits(d.Round(time.Minute).String())
	default:
		d = d.Round(time.Hour)
		days, hours := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)
		if hours == 0 {
			return strconv.Itoa(days) + "d"
		}
		return strconv.Itoa(days) + "d" + strconv.Itoa(hours) + "h"
	}
}

// trimZeroUnits turns Go's "1h0m0s" and "12m0s" into "1h" and "12m".
func trimZeroUnits(s string) string {
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// latency writes a run's duration: milliseconds below a second (where
// latency budgets live), two decimals of a second below a minute.
func latency(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	default:
		return humanDuration(d)
	}
}
