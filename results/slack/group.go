package slack

import (
	"fmt"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/toolpulse/toolpulse/results"
)

// A grouped message's limits: Slack takes 50 blocks of 3 000 characters,
// but a list longer than a screen is read no further, so each list shows
// its first maxGroupLines probes and says how many more there are.
const (
	maxGroupLines    = 30 // probes listed per list (failing, resolved)
	groupLinesPerBox = 10 // lines per section: 10 lines of maxGroupLine fit in one
	maxGroupLine     = 280
)

// RenderGroup returns the payload of a grouped message (notify.group_by):
// a header counting the group's failing and resolved probes ("20 probes of
// provider=search failing, 2 resolved"), a list of the failing ones, one
// line each with its outcome, code and HTTP status, a list of the resolved
// ones struck through, and a context line with the group's labels and its
// alerts' time span. A group of one alert is that alert's own message
// (Render), which says more. Like Render, it neither redacts nor links.
func RenderGroup(g results.AlertGroup) Message { return renderGroup(g, "") }

func renderGroup(g results.AlertGroup, baseURL string) Message {
	if len(g.Alerts) == 1 {
		return render(g.Alerts[0], baseURL)
	}
	if loc, ok := results.GroupLocation(g.Labels); ok {
		return renderLocationGroup(g, loc)
	}
	failing, resolved := splitByKind(g.Alerts, results.AlertResolved)
	title := groupTitle(g, len(failing), len(resolved))
	blocks := []goslack.Block{headerBlock(title)}
	blocks = append(blocks, listSections("*Failing*", failing, failingLine)...)
	blocks = append(blocks, listSections("*Resolved*", resolved, resolvedLine)...)
	blocks = append(blocks, groupContext(g))
	return Message{Text: groupFallback(title, failing, resolved), Blocks: blocks}
}

// groupTitle is "🔴 20 probes of provider=search failing, 2 resolved".
func groupTitle(g results.AlertGroup, failing, resolved int) string {
	of := ""
	if labels := results.GroupLabelText(g.Labels); labels != "" {
		of = " of " + labels
	}
	probes := results.CountProbes
	switch {
	case failing == 0:
		return fmt.Sprintf(":large_green_circle: %s%s resolved", probes(resolved), of)
	case resolved == 0:
		return fmt.Sprintf(":red_circle: %s%s failing", probes(failing), of)
	}
	return fmt.Sprintf(":red_circle: %s%s failing, %d resolved", probes(failing), of, resolved)
}

// failingLine is one failing probe of a group: "`search_eu` unavailable
// (`timeout`), HTTP 503", with what changed for a reminder or an update.
func failingLine(a results.Alert) string {
	s := emoji(a) + " " + code(a.Probe) + " " + esc(string(a.Outcome))
	if a.Code != "" {
		s += " (" + code(string(a.Code)) + ")"
	}
	if a.HTTPStatus != 0 {
		s += fmt.Sprintf(", HTTP %d", a.HTTPStatus)
	}
	switch a.Kind {
	case results.AlertReminder:
		if d := failingFor(a); d > 0 {
			s += ", still failing after " + humanDuration(d)
		} else {
			s += ", still failing"
		}
	case results.AlertUpdate:
		s += ", was " + esc(a.Previous.String())
	}
	return s
}

// resolvedLine is one resolved probe of a group, struck through:
// "~`search_eu`~ passing again after 12m".
func resolvedLine(a results.Alert) string {
	s := "~" + code(a.Probe) + "~ passing again"
	if d := failingFor(a); d > 0 {
		s += " after " + humanDuration(d)
	}
	return s
}

// listSections writes title and one line per alert into sections of
// groupLinesPerBox lines, the first maxGroupLines alerts only, and notes
// how many it left out. No alerts, no sections.
func listSections(title string, alerts []results.Alert, line func(results.Alert) string) []goslack.Block {
	if len(alerts) == 0 {
		return nil
	}
	shown := alerts[:min(len(alerts), maxGroupLines)]
	var blocks []goslack.Block
	for start := 0; start < len(shown); start += groupLinesPerBox {
		box := shown[start:min(start+groupLinesPerBox, len(shown))]
		lines := make([]string, 0, len(box)+1)
		if start == 0 {
			lines = append(lines, title)
		}
		for _, a := range box {
			lines = append(lines, "• "+clip(line(a), maxGroupLine))
		}
		blocks = append(blocks, section(strings.Join(lines, "\n")))
	}
	if more := len(alerts) - len(shown); more > 0 {
		blocks = append(blocks, section(fmt.Sprintf("_…and %d more_", more)))
	}
	return blocks
}

// renderLocationGroup is the message of a location's group of
// location_silent and location_back alerts (results.LocationGroupKey):
// "🔇 location ap-south silent: 10 probes", the list of the probes that
// went silent, each with its last run, the list of those recording again,
// and the context line.
func renderLocationGroup(g results.AlertGroup, loc string) Message {
	silent, back := splitByKind(g.Alerts, results.AlertLocationBack)
	title := locationGroupTitle(loc, len(silent), len(back))
	blocks := []goslack.Block{headerBlock(title)}
	blocks = append(blocks, listSections("*Silent*", silent, silentLine)...)
	blocks = append(blocks, listSections("*Recording again*", back, backLine)...)
	blocks = append(blocks, groupContext(g))
	names := make([]string, 0, len(g.Alerts))
	for _, a := range silent {
		names = append(names, a.Probe)
	}
	for _, a := range back {
		if len(silent) > 0 {
			names = append(names, a.Probe+" (back)")
		} else {
			names = append(names, a.Probe)
		}
	}
	return Message{Text: clip(esc(oneLine(title+": "+strings.Join(names, ", "))), maxFallback), Blocks: blocks}
}

// locationGroupTitle is the group's line (results.LocationGroupSummary)
// after its emoji: "🔇 location ap-south silent: 10 probes", or "🟢
// location ap-south back: 10 probes" for a return alone.
func locationGroupTitle(loc string, silent, back int) string {
	emoji := ":mute: "
	if silent == 0 {
		emoji = ":large_green_circle: "
	}
	return emoji + results.LocationGroupSummary(loc, silent, back)
}

// silentLine is one probe of a silent location with the location's last
// run of it: "`search_eu` last run pass at 2026-12-03T14:00:05Z".
func silentLine(a results.Alert) string {
	s := code(a.Probe) + " last run " + esc(string(a.Outcome))
	if a.Code != "" {
		s += " (" + code(string(a.Code)) + ")"
	}
	if len(a.Locations) == 1 && !a.Locations[0].LastRun.IsZero() {
		s += " at " + slackDate(a.Locations[0].LastRun)
	}
	return s
}

// backLine is one probe of a location recording again.
func backLine(a results.Alert) string { return code(a.Probe) + " recording again" }

// groupContext is the group's labels and the span of its alerts' times.
func groupContext(g results.AlertGroup) *goslack.ContextBlock {
	var els []goslack.MixedElement
	if loc, ok := results.GroupLocation(g.Labels); ok {
		els = append(els, mrkdwn(clip("location "+code(loc), maxSectionText)))
	} else if labels := results.GroupLabelText(g.Labels); labels != "" {
		els = append(els, mrkdwn(clip("group "+code(labels), maxSectionText)))
	}
	first, last := g.Alerts[0].CreatedAt, g.Alerts[0].CreatedAt
	for _, a := range g.Alerts[1:] {
		if a.CreatedAt.Before(first) {
			first = a.CreatedAt
		}
		if a.CreatedAt.After(last) {
			last = a.CreatedAt
		}
	}
	if !first.IsZero() {
		span := slackDate(first)
		if last.Sub(first) >= time.Second {
			span += " to " + slackDate(last)
		}
		els = append(els, mrkdwn(span))
	}
	els = append(els, mrkdwn(fmt.Sprintf("%d alerts in one message", len(g.Alerts))))
	return goslack.NewContextBlock("", els...)
}

// groupFallback is the notification line: the title, then the probes by
// name, as many as fit.
func groupFallback(title string, failing, resolved []results.Alert) string {
	names := make([]string, 0, len(failing)+len(resolved))
	for _, a := range failing {
		names = append(names, a.Probe)
	}
	for _, a := range resolved {
		names = append(names, a.Probe+" (resolved)")
	}
	return clip(esc(oneLine(title+": "+strings.Join(names, ", "))), maxFallback)
}

// splitByKind splits a group's alerts into those not of kind and those
// of kind (the ones that say a failure ended), each in the group's order.
func splitByKind(alerts []results.Alert, kind results.AlertKind) (others, ofKind []results.Alert) {
	for _, a := range alerts {
		if a.Kind == kind {
			ofKind = append(ofKind, a)
		} else {
			others = append(others, a)
		}
	}
	return others, ofKind
}

// headerBlock is a message's title as its header block, on one line and
// within Slack's limit.
func headerBlock(title string) goslack.Block {
	return goslack.NewHeaderBlock(goslack.NewTextBlockObject(goslack.PlainTextType,
		clip(oneLine(title), maxHeaderText), true, false))
}
