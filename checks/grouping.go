package checks

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// groupingKeys are notify's and every route's grouping keys (see Grouping).
var groupingKeys = []string{"group_by", "group_wait", "group_interval"}

// Defaults of Grouping, Alertmanager's.
const (
	DefaultGroupWait     = 30 * time.Second
	DefaultGroupInterval = 5 * time.Minute
)

// Grouping is how a route gathers its alerts into messages, as
// Alertmanager's route does: the alerts of probes whose GroupBy labels
// have the same values go to each receiver as one message, GroupWait after
// the first of them, then as updates at most every GroupInterval. Without
// GroupBy every alert is a message of its own, sent at once.
type Grouping struct {
	// GroupBy lists the labels whose values make a group; nil or empty:
	// no grouping. A probe without one of them groups with the probes
	// that lack it too (its value is "").
	GroupBy []string
	// GroupWait is how long a group's message waits for more alerts after
	// the first one it carries.
	GroupWait time.Duration
	// GroupInterval is the least time between two messages of a group.
	GroupInterval time.Duration
}

// Enabled reports whether the route groups its alerts.
func (g Grouping) Enabled() bool { return len(g.GroupBy) > 0 }

// groupingKey decodes one of groupingKeys into g; it reports whether x
// was one.
func (l *loader) groupingKey(x entry, g *Grouping) bool {
	d := l.d
	switch x.key {
	case "group_by":
		items, ok := d.list(x.value, x.path)
		if !ok {
			return true
		}
		g.GroupBy = []string{}
		for i, item := range items {
			p := index(x.path, i)
			s, ok := d.str(item, p)
			switch {
			case !ok:
			case !labelName.MatchString(s) || strings.HasPrefix(s, "__"):
				d.errorf(item, "%s: %q is not a valid label name; expected letters, digits and _, not starting with a digit or __", p, s)
			case slices.Contains(reservedLabels, s):
				// A group per probe is what notify does without group_by;
				// outcome and code change within one failure.
				d.errorf(item, "%s: %q is reserved (%s); group by the probes' own labels, such as provider", p, s, strings.Join(reservedLabels, ", "))
			case slices.Contains(g.GroupBy, s):
				d.errorf(item, "%s: %s is listed twice", p, s)
			default:
				g.GroupBy = append(g.GroupBy, s)
			}
		}
	case "group_wait":
		v, ok := d.duration(x.value, x.path)
		if ok && v < 0 {
			d.errorf(x.value, "%s: must not be negative (0 sends a group's first message at once), got %s", x.path, fmtDuration(v))
		}
		g.GroupWait = v
	case "group_interval":
		v, ok := d.duration(x.value, x.path)
		if ok && v <= 0 {
			d.errorf(x.value, "%s: must be positive, got %s", x.path, fmtDuration(v))
		}
		g.GroupInterval = v
	default:
		return false
	}
	return true
}

// withGrouping adds the schema of groupingKeys to props, notify's or a
// route's, and returns it.
func withGrouping(props map[string]any) map[string]any {
	maps.Copy(props, map[string]any{
		"group_by": map[string]any{
			"type":        []string{"array", "null"},
			"uniqueItems": true,
			"items":       map[string]any{"type": "string", "pattern": labelName.String(), "not": map[string]any{"anyOf": labelNameExclusions()}},
			"description": "labels whose values make a group: its alerts go out as one message; empty: one message per alert",
		},
		"group_wait":     withDoc(durationSchema("a group's first message waits this long for more alerts", false), "default 30s"),
		"group_interval": withDoc(durationSchema("the least time between two messages of a group", true), "default 5m"),
	})
	return props
}
