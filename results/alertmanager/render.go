package alertmanager

import (
	"maps"
	"net/url"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// postable is one alert as Alertmanager's v2 API takes it
// (PostableAlert). EndsAt zero means "active for TTL from this post", which
// post fills in; a set EndsAt is sent as is.
type postable struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// ending returns p ending at now: how a resolve is posted.
func (p postable) ending(now time.Time) postable {
	p.EndsAt = now
	return p
}

// postable builds the Alertmanager alert for a, every text scrubbed of the
// secrets the Notifier knows. Labels: the probe's own, then alertname,
// probe, outcome and code (and fingerprint and drift_kind, response or
// definition, for a drift), which win over a probe label of the same name
// so that routes can rely on them. Annotations: summary, message,
// operation_id, trace_id when the run was traced, link when set, target
// (what the run called) and
// response_excerpt (the start of a failed run's body) when known,
// locations (each location's verdict, a line each) on a fleet-wide
// decision about a probe of several locations, and for a
// drift its baseline and diff (and the old and new description when a
// tool's changed, and resolving when the run also resolved the failure).
func (n *Notifier) postable(a results.Alert) postable {
	labels := make(map[string]string, len(a.Labels)+5)
	for k, v := range a.Labels {
		labels[k] = n.redact(v)
	}
	labels["alertname"] = AlertNameFailing
	labels["probe"] = n.redact(a.Probe)
	labels["outcome"] = string(a.Outcome)
	if a.Code != "" {
		labels["code"] = n.redact(string(a.Code))
	}
	ann := map[string]string{
		"summary": n.redact(summary(a)),
	}
	if a.Message != "" {
		ann["message"] = n.redact(a.Message)
	}
	if a.OperationID != "" {
		ann["operation_id"] = n.redact(a.OperationID)
	}
	if a.TraceID != "" {
		ann["trace_id"] = a.TraceID
	}
	if a.Target != "" {
		ann["target"] = n.redact(a.Target)
	}
	if a.ResponseExcerpt != "" {
		ann["response_excerpt"] = n.redact(results.Excerpt(a.ResponseExcerpt))
	}
	if len(a.Locations) > 0 {
		ann["locations"] = n.redact(results.LocationLines(a.Locations))
	}
	link := probeLink(n.baseURL, a.Probe)
	if link != "" {
		ann["link"] = link
	}
	if a.Kind == results.AlertFlapping {
		labels["alertname"] = AlertNameFlapping
	}
	if a.Kind == results.AlertLocationSilent || a.Kind == results.AlertLocationBack {
		// About the location, not the run it quotes.
		labels["alertname"], labels["location"] = AlertNameLocationSilent, n.redact(a.SilentLocation())
		delete(labels, "outcome")
		delete(labels, "code")
	}
	if a.Kind == results.AlertDrift {
		labels["alertname"] = AlertNameDrift
		if a.Drift != nil {
			labels["fingerprint"] = n.redact(a.Drift.Current)
			labels["drift_kind"] = string(a.Drift.KindOrResponse())
			ann["baseline"] = n.redact(a.Drift.Baseline)
			ann["diff"] = n.redact(strings.Join(a.Drift.Diff, "\n"))
			if a.Resolving {
				ann["resolving"] = "true"
			}
			if a.Drift.Before != "" || a.Drift.After != "" {
				ann["description_before"] = n.redact(a.Drift.Before)
				ann["description_after"] = n.redact(a.Drift.After)
			}
		}
	}
	starts := a.FailingSince
	if starts.IsZero() {
		starts = a.CreatedAt
	}
	return postable{Labels: labels, Annotations: ann, StartsAt: starts.UTC(), GeneratorURL: link}
}

// summary is the one line an Alertmanager template shows first.
func summary(a results.Alert) string {
	failure := string(a.Outcome)
	if a.Code != "" {
		failure += " (" + string(a.Code) + ")"
	}
	if a.Message != "" {
		failure += ": " + strings.Join(strings.Fields(a.Message), " ")
	}
	if a.Kind == results.AlertDrift {
		s := a.Probe + " response shape changed"
		switch {
		case a.Drift != nil && a.Drift.Kind == results.DriftDefinition:
			s = a.Probe + " tool definition changed"
		case a.Drift != nil && a.Drift.Step != "":
			s = a.Probe + " step " + a.Drift.Step + " response shape changed"
		}
		if a.Drift != nil {
			s += " (" + a.Drift.Baseline + " → " + a.Drift.Current + ")"
		}
		return s + "; this run: " + failure
	}
	if a.Kind == results.AlertFlapping {
		return a.Probe + " flapping: quiet until it settles; this run: " + failure
	}
	if a.Kind == results.AlertLocationSilent {
		return a.Probe + ": location " + results.LocationLines(a.Locations)
	}
	return a.Probe + " " + failure
}

func sameLabels(a, b map[string]string) bool { return maps.Equal(a, b) }

// redact scrubs s of the configured secrets and the destination's own.
func (n *Notifier) redact(s string) string {
	return n.secrets.Redact(n.redactor.Redact(s))
}

// probeLink points at the probe's page on the status page,
// {server.public_url}/probes/{name}, the link Slack messages carry too; ""
// without a base URL.
func probeLink(baseURL, probe string) string {
	if baseURL == "" || probe == "" {
		return ""
	}
	return strings.TrimRight(baseURL, "/") + "/probes/" + url.PathEscape(probe)
}
