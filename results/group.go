package results

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AlertGroup is what one grouped message carries: the pending alerts of
// one group to one receiver, and the group's labels.
type AlertGroup struct {
	// Key is the alerts' GroupKey.
	Key string
	// Labels are the group_by labels with the group's values, "" for a
	// label its probes lack; parsed from Key.
	Labels map[string]string
	// Alerts are the group's pending alerts, oldest first.
	Alerts []Alert
	// LastDelivered is when a message of the group was last accepted by
	// its receiver; zero when none was (or retention pruned it).
	LastDelivered time.Time
}

// Groupable reports whether an alert of kind may join a group: firing,
// reminder, update and resolved tell of a probe's failure, which a line
// of a grouped message can say. A shape_drift alert, which carries a diff
// of its own, is always a message of its own.
func Groupable(kind AlertKind) bool {
	switch kind {
	case AlertFiring, AlertReminder, AlertUpdate, AlertResolved:
		return true
	}
	return false
}

// GroupKey returns the key of the group of alerts to receiver whose
// group_by labels (names) have the values in labels:
// `routes[0]/slack{provider="search",region=""}`, the labels in the order
// of names. A name labels lacks has the value "".
func GroupKey(receiver string, names []string, labels map[string]string) string {
	var b strings.Builder
	b.WriteString(receiver)
	b.WriteByte('{')
	for i, name := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(labels[name]))
	}
	b.WriteByte('}')
	return b.String()
}

// ParseGroupKey returns the receiver and the labels of a key GroupKey made.
func ParseGroupKey(key string) (receiver string, labels map[string]string, err error) {
	open := strings.IndexByte(key, '{')
	if open < 0 || !strings.HasSuffix(key, "}") {
		return "", nil, fmt.Errorf("group key %q: want receiver{label=\"value\",...}", key)
	}
	receiver, rest := key[:open], key[open+1:len(key)-1]
	labels = map[string]string{}
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq < 1 {
			return "", nil, fmt.Errorf("group key %q: a label without a name", key)
		}
		name := rest[:eq]
		quoted, err := strconv.QuotedPrefix(rest[eq+1:])
		if err != nil {
			return "", nil, fmt.Errorf("group key %q: label %s: %w", key, name, err)
		}
		labels[name], _ = strconv.Unquote(quoted) // QuotedPrefix vouches for it
		rest = strings.TrimPrefix(rest[eq+1+len(quoted):], ",")
	}
	return receiver, labels, nil
}

// GroupLabelText is a group's labels as a message header shows them,
// "provider=search, region=eu", sorted by name; "" for none.
func GroupLabelText(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for name := range labels {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + "=" + labels[name]
	}
	return strings.Join(parts, ", ")
}

// SilentLocationLabel is the group label of the alerts that say a
// location went silent or came back (location_silent, location_back): one
// group per receiver and location, so that a location that dies under
// forty probes is one message listing them. Its name starts with "__",
// which no probe label or group_by name may, so it never clashes with a
// probe's own location label.
const SilentLocationLabel = "__location"

// LocationGroupKey returns the key of the group of location_silent and
// location_back alerts about location to receiver.
func LocationGroupKey(receiver, location string) string {
	return GroupKey(receiver, []string{SilentLocationLabel}, map[string]string{SilentLocationLabel: location})
}

// GroupLocation returns the location a group's labels name when it is a
// group of location_silent and location_back alerts (see
// LocationGroupKey).
func GroupLocation(labels map[string]string) (string, bool) {
	loc, ok := labels[SilentLocationLabel]
	return loc, ok
}

// CountProbes is "1 probe" or "n probes", as group messages count them.
func CountProbes(n int) string {
	if n == 1 {
		return "1 probe"
	}
	return fmt.Sprintf("%d probes", n)
}

// LocationGroupSummary is the one line that says what a group of
// location_silent and location_back alerts about loc holds: "location
// ap-south silent: 10 probes", "location ap-south back: 1 probe" when none
// is silent, or "location ap-south silent: 10 probes, 2 back". Every
// receiver words a location group with it.
func LocationGroupSummary(loc string, silent, back int) string {
	probes := CountProbes
	switch {
	case silent == 0:
		return fmt.Sprintf("location %s back: %s", loc, probes(back))
	case back == 0:
		return fmt.Sprintf("location %s silent: %s", loc, probes(silent))
	}
	return fmt.Sprintf("location %s silent: %s, %d back", loc, probes(silent), back)
}
