package results

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Silence mutes the alerts of the probes it matches between StartsAt and
// EndsAt, or until it is expired by hand. A silenced probe still runs and
// its results are recorded; its alerts are recorded as skipped, not sent.
type Silence struct {
	ID       int64
	Matchers Matchers
	StartsAt time.Time
	EndsAt   time.Time
	Reason   string
	// CreatedAt is when the silence was added.
	CreatedAt time.Time
	// ExpiredAt is when it was expired by hand; zero when it was not.
	ExpiredAt time.Time
}

// Matchers say which probes a silence covers. A probe matches when its name
// is one of Probes (or Probes is empty) and it has every label of Labels
// with that value (or Labels is empty). Matchers with neither match
// nothing: a silence of everything is not something to add by mistake.
type Matchers struct {
	Probes []string          `json:"probes,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Empty reports whether m names no probe and no label.
func (m Matchers) Empty() bool { return len(m.Probes) == 0 && len(m.Labels) == 0 }

// String prints m for a person: probe=a,b and k=v pairs, sorted.
func (m Matchers) String() string {
	var parts []string
	if len(m.Probes) > 0 {
		parts = append(parts, "probe="+strings.Join(m.Probes, ","))
	}
	keys := make([]string, 0, len(m.Labels))
	for k := range m.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%s", k, m.Labels[k]))
	}
	return strings.Join(parts, " ")
}

// Matches reports whether the silence's matchers cover a probe with this
// name and these labels, whatever the time.
func (s Silence) Matches(probe string, labels map[string]string) bool {
	return s.Matchers.Matches(probe, labels)
}

// Matches reports whether m covers a probe with this name and these
// labels.
func (m Matchers) Matches(probe string, labels map[string]string) bool {
	if m.Empty() {
		return false
	}
	if len(m.Probes) > 0 && !slices.Contains(m.Probes, probe) {
		return false
	}
	for k, v := range m.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ActiveAt reports whether the silence mutes alerts at now: started, not
// ended and not expired.
func (s Silence) ActiveAt(now time.Time) bool {
	return !now.Before(s.StartsAt) && now.Before(s.EndsAt) && (s.ExpiredAt.IsZero() || now.Before(s.ExpiredAt))
}

// Silenced reports whether any of silences is active at now and matches
// the probe.
func Silenced(silences []Silence, now time.Time, probe string, labels map[string]string) bool {
	for _, s := range silences {
		if s.ActiveAt(now) && s.Matches(probe, labels) {
			return true
		}
	}
	return false
}
