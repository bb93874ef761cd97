package webhook

import (
	"net/url"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// Payload is the JSON body of one post (SPEC §8). Its field names are the
// contract with receivers: add fields, never rename or drop one.
type Payload struct {
	// ID is the alert's outbox id. Delivery is at least once, so a
	// receiver that must not act twice deduplicates on it.
	ID      int64             `json:"id"`
	Kind    results.AlertKind `json:"kind"`
	Probe   string            `json:"probe"`
	Labels  map[string]string `json:"labels"` // {} when the probe has none
	Outcome results.Outcome   `json:"outcome"`
	Code    results.Code      `json:"code"` // "" on resolved and on a passing run's drift
	Message string            `json:"message"`
	// OperationID is the run that caused the alert.
	OperationID string `json:"operation_id"`
	// TraceID is the W3C trace id the run's requests carried (SPEC
	// §10.1), to find the run in the provider's traces; omitted when the
	// run was not traced.
	TraceID string `json:"trace_id,omitempty"`
	// StartedAt is when the failure began (firing, reminder, resolved, and
	// flapping while failing), or when the alert was made (shape_drift,
	// flapping while passing).
	StartedAt time.Time `json:"started_at"`
	// CreatedAt is when the alert was made: for resolved, when the probe
	// passed again.
	CreatedAt time.Time `json:"created_at"`
	// Link is the probe's page on toolpulse's status page; omitted when
	// server.public_url is not set.
	Link string `json:"link,omitempty"`
	// Target is what the run called: "POST https://host/path" or "tool
	// NAME at https://host/path", never a query, userinfo or header;
	// omitted when unknown.
	Target string `json:"target,omitempty"`
	// ResponseExcerpt is the start of the body a failed run received (at
	// most 500 characters, secrets scrubbed); omitted when the run passed
	// or got no body.
	ResponseExcerpt string `json:"response_excerpt,omitempty"`
	// Resolving is true on a shape_drift alert whose run also resolved
	// the probe's failure; that run's resolved alert is posted before it.
	Resolving bool   `json:"resolving,omitempty"`
	Drift     *Drift `json:"drift,omitempty"` // shape_drift only
	// Locations is each location's verdict, side by side, on an alert the
	// fleet's decider made about a probe of several locations (SPEC §13);
	// omitted on an alert about a probe of one location.
	Locations []Location `json:"locations,omitempty"`
	// Location is the location a location_silent or location_back alert
	// is about (its one entry in Locations); omitted on other kinds.
	Location string `json:"location,omitempty"`
}

// Location is one location's part of a fleet-wide decision: whether its
// runs make it failing by the probe's thresholds, or it is silent (it
// recorded nothing for two intervals, and counts neither way), and its
// newest run's outcome, code and start.
type Location struct {
	Location string          `json:"location"`
	Failing  bool            `json:"failing"`
	Silent   bool            `json:"silent"`
	Outcome  results.Outcome `json:"outcome,omitempty"`
	Code     results.Code    `json:"code,omitempty"`
	LastRun  *time.Time      `json:"last_run,omitempty"`
}

// Drift is the change a shape_drift alert announces: of the response's
// shape (kind "response") or of an MCP tool's definition (kind
// "definition", with the old and new description when it changed).
type Drift struct {
	Kind     results.DriftKind `json:"kind"`
	Baseline string            `json:"baseline"`
	Current  string            `json:"current"`
	Diff     []string          `json:"diff"`
	// DescriptionBefore and DescriptionAfter are the tool's old and new
	// description, capped, when a definition drift changed it.
	DescriptionBefore string `json:"description_before,omitempty"`
	DescriptionAfter  string `json:"description_after,omitempty"`
	// Step is the step of a steps probe whose answer drifted; absent for
	// a single probe's drift.
	Step string `json:"step,omitempty"`
}

// Payload returns what Send posts for a, every text scrubbed of the secrets
// the Notifier knows.
func (n *Notifier) Payload(a results.Alert) Payload {
	p := Payload{
		ID:          a.ID,
		Kind:        a.Kind,
		Probe:       n.redact(a.Probe),
		Labels:      map[string]string{},
		Outcome:     a.Outcome,
		Code:        results.Code(n.redact(string(a.Code))),
		Message:     n.redact(a.Message),
		OperationID: n.redact(a.OperationID),
		TraceID:     a.TraceID,
		StartedAt:   a.FailingSince.UTC(),
		CreatedAt:   a.CreatedAt.UTC(),
		Link:        probeLink(n.baseURL, a.Probe),
		Target:      n.redact(a.Target),
		Resolving:   a.Resolving,
		// Cut again: the outbox may hold an excerpt a release cut longer.
		ResponseExcerpt: n.redact(results.Excerpt(a.ResponseExcerpt)),
		Location:        a.SilentLocation(),
	}
	if a.FailingSince.IsZero() {
		p.StartedAt = p.CreatedAt
	}
	for k, v := range a.Labels {
		p.Labels[n.redact(k)] = n.redact(v)
	}
	for _, v := range a.Locations {
		l := Location{Location: v.Location, Failing: v.Failing, Silent: v.Silent, Outcome: v.Outcome,
			Code: results.Code(n.redact(string(v.Code)))}
		if !v.LastRun.IsZero() {
			at := v.LastRun.UTC()
			l.LastRun = &at
		}
		p.Locations = append(p.Locations, l)
	}
	if a.Drift != nil {
		p.Drift = &Drift{Kind: a.Drift.KindOrResponse(), Baseline: a.Drift.Baseline, Current: a.Drift.Current,
			Diff: make([]string, len(a.Drift.Diff)), DescriptionBefore: n.redact(a.Drift.Before), DescriptionAfter: n.redact(a.Drift.After), Step: a.Drift.Step}
		for i, l := range a.Drift.Diff {
			p.Drift.Diff[i] = n.redact(l)
		}
	}
	return p
}

// Body returns the exact bytes Send posts (and signs) for a.
func (n *Notifier) Body(a results.Alert) ([]byte, error) {
	return encode(n.Payload(a))
}

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
