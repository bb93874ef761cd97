package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// GroupPayload is the JSON body of one grouped post (notify.group_by):
// the group, and each of its alerts as Payload, the body of a post of one
// alert. Its field names are the contract with receivers as Payload's
// are: add fields, never rename or drop one. A receiver tells the two
// bodies apart by the "alerts" field, which only a group's has.
type GroupPayload struct {
	// Group names the group: its key (receiver and group_by values) and
	// its group_by labels with their values.
	Group Group `json:"group"`
	// Firing and Resolved count the alerts by what they tell: resolved
	// alerts against the others (firing, reminder, update).
	Firing   int `json:"firing"`
	Resolved int `json:"resolved"`
	// Location, Silent, Back and Summary are set for a location's group
	// of location_silent and location_back alerts only (whose alerts are
	// counted there, not in Firing and Resolved): the location, how many
	// of its probes went silent and how many record again, and the
	// message in a line, "location ap-south silent: 10 probes".
	Location string `json:"location,omitempty"`
	Silent   int    `json:"silent,omitempty"`
	Back     int    `json:"back,omitempty"`
	Summary  string `json:"summary,omitempty"`
	// Alerts are the group's alerts, oldest first. Each has its own id:
	// a receiver deduplicates on it as for a single alert.
	Alerts []Payload `json:"alerts"`
}

// Group names a group of alerts.
type Group struct {
	Key    string            `json:"key"`
	Labels map[string]string `json:"labels"` // {} when the group has none
}

// GroupPayload returns what SendGroup posts for g, every text scrubbed.
func (n *Notifier) GroupPayload(g results.AlertGroup) GroupPayload {
	p := GroupPayload{Group: Group{Key: n.redact(g.Key), Labels: map[string]string{}}, Alerts: make([]Payload, len(g.Alerts))}
	for k, v := range g.Labels {
		p.Group.Labels[n.redact(k)] = n.redact(v)
	}
	loc, byLocation := results.GroupLocation(g.Labels)
	for i, a := range g.Alerts {
		p.Alerts[i] = n.Payload(a)
		switch {
		case byLocation && a.Kind == results.AlertLocationBack:
			p.Back++
		case byLocation:
			p.Silent++
		case a.Kind == results.AlertResolved:
			p.Resolved++
		default:
			p.Firing++
		}
	}
	if byLocation {
		p.Location = n.redact(loc)
		p.Summary = results.LocationGroupSummary(p.Location, p.Silent, p.Back)
	}
	return p
}

// GroupBody returns the exact bytes SendGroup posts (and signs) for g.
func (n *Notifier) GroupBody(g results.AlertGroup) ([]byte, error) {
	return encode(n.GroupPayload(g))
}

// SendGroup posts g once, signed, as one body (GroupPayload), even a group
// of one alert, so that a receiver of a grouping route parses one shape;
// it answers as Send does.
func (n *Notifier) SendGroup(ctx context.Context, g results.AlertGroup) (retry bool, retryAfter time.Duration, err error) {
	body, err := n.GroupBody(g)
	if err != nil {
		return false, 0, n.fail(nil, "encoding the alert group: %v", err)
	}
	return n.post(ctx, body)
}

// encode is v as JSON without HTML escaping and without a final newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// A receiver may show the message in a web page; that is its job to
	// escape, and \u003c in the body would only make the JSON harder to
	// read in its logs.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
