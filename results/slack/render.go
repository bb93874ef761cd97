package slack

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/toolpulse/toolpulse/results"
)

// Message is the whole Slack payload of one alert. Text is the plain-text
// fallback that notifications, screen readers and old clients show; it is
// mrkdwn-escaped, as Slack parses it too. Blocks is the Block Kit layout.
// Both respect Slack's size limits.
type Message struct {
	Text   string          `json:"text"`
	Blocks []goslack.Block `json:"blocks"`
}

// Render returns the payload for a: a header, a section of fields (what
// was called among them), the run's message and the start of the body it
// received in code blocks, the shape diff for a drift, and a context line
// with the operation id, consumer@version and rule hash. It is a pure
// function of a: it neither redacts nor links (the Notifier does both), so
// a golden file pins the exact layout.
func Render(a results.Alert) Message { return render(a, "") }

// render is Render with an optional status-page link to the probe.
func render(a results.Alert, baseURL string) Message {
	blocks := []goslack.Block{headerBlock(header(a))}
	if intro := intro(a); intro != "" {
		blocks = append(blocks, section(intro))
	}
	blocks = append(blocks, &goslack.SectionBlock{Type: goslack.MBTSection, Fields: fields(a)})
	if a.Message != "" {
		blocks = append(blocks, section(codeBlock("*Message*\n", []string{a.Message}, maxSectionText)))
	}
	if a.ResponseExcerpt != "" {
		blocks = append(blocks, section(excerptText(a.ResponseExcerpt)))
	}
	if a.Kind == results.AlertDrift && a.Drift != nil {
		blocks = append(blocks, section(diffText(a.Drift)))
		if definitionDrift(a) && (a.Drift.Before != "" || a.Drift.After != "") {
			blocks = append(blocks, section(descriptionText("*Description before*\n", a.Drift.Before)),
				section(descriptionText("*Description now*\n", a.Drift.After)))
		}
	}
	blocks = append(blocks, contextBlock(a, baseURL))
	if len(blocks) > maxBlocks {
		blocks = blocks[:maxBlocks]
	}
	return Message{Text: fallback(a), Blocks: blocks}
}

// emoji marks an alert at a glance. The two failing outcomes get different
// colours because they need different people: contract_error means the
// provider changed what it returns, unavailable means it did not answer.
func emoji(a results.Alert) string {
	switch a.Kind {
	case results.AlertResolved:
		return ":large_green_circle:"
	case results.AlertDrift:
		return ":warning:"
	case results.AlertFlapping:
		return ":repeat:"
	case results.AlertLocationSilent:
		return ":mute:"
	case results.AlertLocationBack:
		return ":large_green_circle:"
	}
	if a.Outcome == results.Unavailable {
		return ":large_orange_circle:"
	}
	return ":red_circle:"
}

func header(a results.Alert) string {
	switch a.Kind {
	case results.AlertFiring:
		return fmt.Sprintf("%s %s failing: %s", emoji(a), a.Probe, a.Outcome)
	case results.AlertReminder:
		return fmt.Sprintf("%s %s still failing: %s", emoji(a), a.Probe, a.Outcome)
	case results.AlertUpdate:
		return fmt.Sprintf("%s %s still failing, now %s", emoji(a), a.Probe, a.Outcome)
	case results.AlertResolved:
		return fmt.Sprintf("%s %s resolved", emoji(a), a.Probe)
	case results.AlertDrift:
		return fmt.Sprintf("%s %s", emoji(a), driftSubject(a))
	case results.AlertFlapping:
		return fmt.Sprintf("%s %s flapping: failing and passing by turns", emoji(a), a.Probe)
	case results.AlertLocationSilent:
		return fmt.Sprintf("%s %s: location %s silent", emoji(a), a.Probe, a.SilentLocation())
	case results.AlertLocationBack:
		return fmt.Sprintf("%s %s: location %s recording again", emoji(a), a.Probe, a.SilentLocation())
	}
	return fmt.Sprintf("%s %s: %s", emoji(a), a.Probe, a.Kind)
}

// descriptionText shows one side of a changed tool description, capped at
// results.DescriptionRunes whatever the store held.
func descriptionText(title, description string) string {
	if description == "" {
		return title + "_(none)_"
	}
	return codeBlock(title, []string{results.Clip(description, results.DescriptionRunes)}, maxSectionText)
}

// excerptText is the section with the start of the body a failed run
// received, capped at results.ExcerptRunes whatever the store held.
func excerptText(excerpt string) string {
	return codeBlock("*Response body* (start)\n", []string{results.Excerpt(excerpt)}, maxSectionText)
}

// driftSubject is what a shape_drift alert says changed: "PROBE response
// shape changed", "PROBE step STEP response shape changed" for a step of a
// steps probe (each step has a baseline of its own), or "PROBE tool
// definition changed".
func driftSubject(a results.Alert) string {
	switch {
	case definitionDrift(a):
		return a.Probe + " tool definition changed"
	case a.Drift != nil && a.Drift.Step != "":
		return a.Probe + " step " + a.Drift.Step + " response shape changed"
	}
	return a.Probe + " response shape changed"
}

// definitionDrift reports whether a announces a change of an MCP tool's
// definition rather than of the response's shape.
func definitionDrift(a results.Alert) bool {
	return a.Kind == results.AlertDrift && a.Drift != nil && a.Drift.Kind == results.DriftDefinition
}

// modeOf is the mode an alert's run failed in.
func modeOf(a results.Alert) results.Mode {
	return results.Mode{Outcome: a.Outcome, Code: a.Code}
}

// modeList says a failure's modes in order: "unavailable (timeout), then
// contract_error (rule_error)".
func modeList(modes []results.Mode) string {
	parts := make([]string, len(modes))
	for i, m := range modes {
		parts[i] = m.String()
	}
	return strings.Join(parts, ", then ")
}

// failingFor is how long the current failure has lasted at the alert, or
// lasted in all for a resolved alert; 0 when unknown.
func failingFor(a results.Alert) time.Duration {
	if a.FailingSince.IsZero() || a.CreatedAt.IsZero() || !a.CreatedAt.After(a.FailingSince) {
		return 0
	}
	return a.CreatedAt.Sub(a.FailingSince)
}

// intro is a sentence a reader needs before the fields, for the kinds
// whose header alone does not say enough.
func intro(a results.Alert) string {
	d := failingFor(a)
	switch a.Kind {
	case results.AlertUpdate:
		return fmt.Sprintf("The failure changed: it was *%s*, it is now *%s*.", esc(a.Previous.String()), esc(modeOf(a).String()))
	case results.AlertResolved:
		switch {
		case d > 0 && len(a.Modes) > 0:
			return fmt.Sprintf("Passing again after failing for *%s*, as %s.", humanDuration(d), esc(modeList(a.Modes)))
		case d > 0:
			return fmt.Sprintf("Passing again after failing for *%s*.", humanDuration(d))
		}
		return "Passing again."
	case results.AlertDrift:
		if a.Resolving {
			return driftIntro(a) + " This run passed and resolved the probe's failure (the resolved message came first)."
		}
		return driftIntro(a)
	case results.AlertFlapping:
		return "Its verdict changed too often to page on each change (notify.flapping). " +
			"No more messages until it has been stable; then one says whether it settled failing or passing."
	case results.AlertLocationSilent:
		return "This location recorded no run for two intervals: it counts neither as passing nor as failing, " +
			"and the probe's own alerts come from its other locations. The run below is its last."
	case results.AlertLocationBack:
		return "This location records again, and counts again in the probe's verdict."
	}
	return ""
}

// driftIntro says what a shape_drift alert announces.
func driftIntro(a results.Alert) string {
	if definitionDrift(a) {
		return "The MCP server changed the tool's definition (its description, input or output schema, or annotations) " +
			"since the probe's previous run: agents that call the tool now read what is below. " +
			"The run's outcome shows whether the probe's call still works."
	}
	return "The response shape shows what the probe's learned baseline never showed (this change is announced once). " +
		"The run's outcome below shows whether the consumer still copes."
}

func fields(a results.Alert) []*goslack.TextBlockObject {
	outcomeLabel := "Outcome"
	if a.Kind == results.AlertDrift {
		outcomeLabel = "Outcome of this run"
	}
	var fs []*goslack.TextBlockObject
	add := func(label, value string) {
		fs = append(fs, mrkdwn(clip("*"+label+"*\n"+value, maxFieldText)))
	}
	add(outcomeLabel, code(string(a.Outcome)))
	if a.Code != "" {
		add("Code", code(string(a.Code)))
	}
	if len(a.Locations) > 0 {
		// A fleet-wide decision: every location's verdict, side by side.
		add("Locations", esc(results.LocationLines(a.Locations)))
	}
	status := "none (no response)"
	if a.HTTPStatus != 0 {
		status = fmt.Sprint(a.HTTPStatus)
	}
	add("HTTP status", status)
	add("Attempts", fmt.Sprint(a.Attempts))
	add("Latency", latency(a.Duration))
	if a.Kind == results.AlertUpdate && a.Previous != (results.Mode{}) {
		add("Was", code(a.Previous.String()))
	}
	if a.Target != "" {
		add("Called", code(a.Target))
	}
	switch a.Kind {
	case results.AlertFiring:
		// How long a failure has lasted means nothing on its first alert
		// (with failure_threshold 1 it is the run's own latency); when it
		// began does.
		if !a.FailingSince.IsZero() {
			add("Failing since", slackDate(a.FailingSince))
		}
	case results.AlertReminder, results.AlertUpdate:
		if d := failingFor(a); d > 0 {
			add("Failing for", humanDuration(d))
		}
	}
	if definitionDrift(a) {
		add("Previous definition", code(a.Drift.Baseline))
		add("Current definition", code(a.Drift.Current))
	} else if a.Kind == results.AlertDrift && a.Drift != nil {
		if a.Drift.Step != "" {
			add("Step", code(a.Drift.Step))
		}
		add("Baseline shape", code(a.Drift.Baseline))
		add("Current shape", code(a.Drift.Current))
	}
	if len(fs) > maxFields {
		fs = fs[:maxFields]
	}
	return fs
}

// code quotes s as inline code after escaping it.
func code(s string) string {
	if s == "" {
		return "-"
	}
	return "`" + strings.ReplaceAll(esc(oneLine(s)), "`", "'") + "`"
}

// mrkdwn is a text object that Slack shows verbatim: no automatic links or
// channel and user names, which provider text could otherwise trigger even
// without angle brackets.
func mrkdwn(text string) *goslack.TextBlockObject {
	return &goslack.TextBlockObject{Type: goslack.MarkdownType, Text: text, Verbatim: true}
}

func section(text string) *goslack.SectionBlock {
	return &goslack.SectionBlock{Type: goslack.MBTSection, Text: mrkdwn(clip(text, maxSectionText))}
}

// codeBlock writes title and as many of lines as fit in limit characters
// into a ``` block, and notes how many lines it left out. One line longer
// than the whole budget is itself clipped, so the block is never empty.
func codeBlock(title string, lines []string, limit int) string {
	esced := make([]string, len(lines))
	for i, l := range lines {
		esced[i] = escCode(l)
	}
	const fence = "```"
	fixed := runes(title) + 2*len(fence)
	note := func(left int) string {
		if left == 0 {
			return ""
		}
		return fmt.Sprintf("\n_(%d more diff lines)_", left)
	}
	if len(esced) == 1 {
		return title + fence + clip(esced[0], limit-fixed) + fence
	}
	// Take the longest prefix of lines that fits with its note.
	keep, used := 0, 0
	for i, l := range esced {
		n := used + runes(l)
		if i > 0 {
			n++ // the newline before it
		}
		if fixed+n+runes(note(len(esced)-i-1)) > limit {
			break
		}
		keep, used = i+1, n
	}
	if keep == 0 {
		return clip(title+strings.TrimPrefix(note(len(esced)), "\n"), limit)
	}
	return title + fence + strings.Join(esced[:keep], "\n") + fence + note(len(esced)-keep)
}

// diffText is the drift section: both fingerprints and the diff lines.
func diffText(d *results.Drift) string {
	// The fingerprints are in the fields; the title only says which way.
	title := "*Shape diff* (baseline → current)\n"
	if d.Kind == results.DriftDefinition {
		title = "*Definition diff* (previous → current)\n"
	}
	if len(d.Diff) == 0 {
		return title + "_(no diff lines recorded)_"
	}
	lines := make([]string, len(d.Diff))
	for i, l := range d.Diff {
		// Clip before escaping costs nothing in safety (clip never splits
		// an entity) and keeps one monster path from taking the block.
		lines[i] = clip(oneLine(l), maxDiffLine)
	}
	return codeBlock(title, lines, maxSectionText)
}

func contextBlock(a results.Alert, baseURL string) *goslack.ContextBlock {
	var els []goslack.MixedElement
	add := func(text string) {
		if len(els) < maxContextElem {
			els = append(els, mrkdwn(clip(text, maxSectionText)))
		}
	}
	add("operation " + code(a.OperationID))
	if a.TraceID != "" {
		// The provider's trace of the run (SPEC §10.1), for the on-call
		// engineer to look up in their tracing.
		add("trace " + code(a.TraceID))
	}
	if a.Consumer.Name != "" {
		c := a.Consumer.Name
		if a.Consumer.Version != "" {
			c += "@" + a.Consumer.Version
		}
		add("consumer " + code(c))
	}
	if a.Consumer.RuleHash != "" {
		add("rule " + code(a.Consumer.RuleHash))
	}
	if !a.CreatedAt.IsZero() {
		// The outbox may deliver an alert long after the run.
		add(slackDate(a.CreatedAt))
	}
	if len(a.Labels) > 0 {
		add("labels " + code(labelText(a.Labels)))
	}
	if link := probeLink(baseURL, a.Probe); link != "" {
		add("<" + esc(link) + "|probe page>")
	}
	return goslack.NewContextBlock("", els...)
}

// slackDate writes t so that Slack shows it in the reader's local time,
// with t in UTC as the fallback for clients that cannot.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time_secs}|%s>", t.Unix(), results.FormatTime(t))
}

// labelText is a probe's labels as "team=search, tier=gold", sorted.
func labelText(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ", ")
}

// probeLink points at the probe's page on the status page,
// {server.public_url}/probes/{name} (SPEC §8).
func probeLink(baseURL, probe string) string {
	if baseURL == "" || probe == "" || strings.ContainsAny(baseURL, "|<> ") {
		return ""
	}
	return strings.TrimRight(baseURL, "/") + "/probes/" + url.PathEscape(probe)
}

// fallback is the one line a phone notification shows, e.g.
// ":red_circle: external_search contract_error (unsupported_results_container): results is map".
func fallback(a results.Alert) string {
	what := string(a.Outcome)
	if a.Code != "" {
		what += " (" + string(a.Code) + ")"
	}
	if a.Message != "" {
		what += ": " + a.Message
	}
	var s string
	switch a.Kind {
	case results.AlertFiring:
		s = fmt.Sprintf("%s %s %s", emoji(a), a.Probe, what)
	case results.AlertReminder:
		if d := failingFor(a); d > 0 {
			s = fmt.Sprintf("%s %s still failing after %s: %s", emoji(a), a.Probe, humanDuration(d), what)
		} else {
			s = fmt.Sprintf("%s %s still failing: %s", emoji(a), a.Probe, what)
		}
	case results.AlertUpdate:
		s = fmt.Sprintf("%s %s still failing, now %s (was %s)", emoji(a), a.Probe, what, a.Previous)
	case results.AlertResolved:
		if d := failingFor(a); d > 0 {
			s = fmt.Sprintf("%s %s resolved: passing again after failing for %s", emoji(a), a.Probe, humanDuration(d))
			if len(a.Modes) > 0 {
				s += " as " + modeList(a.Modes)
			}
		} else {
			s = fmt.Sprintf("%s %s resolved: passing again", emoji(a), a.Probe)
		}
	case results.AlertDrift:
		s = fmt.Sprintf("%s %s", emoji(a), driftSubject(a))
		if d := a.Drift; d != nil {
			s += fmt.Sprintf(" (%s → %s)", d.Baseline, d.Current)
			if len(d.Diff) > 0 {
				s += ": " + clip(d.Diff[0], maxDiffLine)
				if len(d.Diff) > 1 {
					s += fmt.Sprintf(" (+%d more)", len(d.Diff)-1)
				}
			}
		}
		s += "; this run: " + what
		if a.Resolving {
			s += ", which resolved the failure"
		}
	case results.AlertFlapping:
		s = fmt.Sprintf("%s %s flapping: quiet until it settles; this run: %s", emoji(a), a.Probe, what)
	case results.AlertLocationSilent, results.AlertLocationBack:
		s = header(a)
		if a.Kind == results.AlertLocationSilent && len(a.Locations) > 0 {
			s = fmt.Sprintf("%s %s: location %s", emoji(a), a.Probe, a.Locations[0])
		}
	default:
		s = fmt.Sprintf("%s %s %s: %s", emoji(a), a.Probe, a.Kind, what)
	}
	return clip(esc(oneLine(s)), maxFallback)
}
