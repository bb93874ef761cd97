package checks

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

var maintenanceKeys = []string{"probes", "labels", "every", "start", "duration", "timezone"}

// maxMaintenance is the longest a maintenance window may last: a window
// of a week or more would never end.
const maxMaintenance = 7 * 24 * time.Hour

// DefaultMaintenanceZone is the time zone of a maintenance window that
// names none: UTC, the same on every host of a fleet, rather than the
// local zone, which differs between them (and is UTC in a container).
const DefaultMaintenanceZone = "UTC"

// weekdays are the names every: takes, Monday first as people write weeks.
var weekdays = []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday, time.Sunday}

// clockTime is start:'s syntax, HH:MM on a 24-hour clock.
var clockTime = regexp.MustCompile(`^([01][0-9]|2[0-3]):([0-5][0-9])$`)

// maintenance decodes the top-level maintenance: list, the recurring
// windows that mute probes' alerts. probes must be decoded already: a
// window names them, and one that covers none is an error (a typo in a
// label would otherwise mute nothing, silently, and the probes it is meant
// for are in this same file).
func (l *loader) maintenance(e entry, probes []*Probe) []results.MaintenanceWindow {
	d := l.d
	items, ok := d.list(e.value, e.path)
	if !ok {
		return nil
	}
	var out []results.MaintenanceWindow
	for i, item := range items {
		path := index(e.path, i)
		w := results.MaintenanceWindow{Name: path, Location: time.UTC}
		valid := true
		present, ok := d.object(item, path, maintenanceKeys, func(x entry) {
			before := len(*d.errs)
			switch x.key {
			case "probes":
				w.Matchers.Probes = l.windowProbes(x, probes)
			case "labels":
				w.Matchers.Labels = l.windowLabels(x)
			case "every":
				w.Days = l.windowDays(x)
			case "start":
				w.Hour, w.Minute = l.windowStart(x)
			case "duration":
				v, ok := d.duration(x.value, x.path)
				switch {
				case !ok:
				case v <= 0:
					d.errorf(x.value, "%s: must be positive, got %s", x.path, fmtDuration(v))
				case v >= maxMaintenance:
					d.errorf(x.value, "%s: must be less than a week (168h): the window starts again every week, got %s", x.path, fmtDuration(v))
				}
				w.Duration = v
			case "timezone":
				w.Location = l.windowZone(x)
			}
			valid = valid && len(*d.errs) == before
		})
		if !ok {
			continue
		}
		_, hasProbes := present["probes"]
		_, hasLabels := present["labels"]
		if !hasProbes && !hasLabels {
			d.errorf(item, "%s: name the probes it covers with probes: [name, ...], labels: {team: search}, or both", path)
			valid = false
		}
		for _, req := range []struct{ key, example string }{{"start", `start: "02:00"`}, {"duration", "duration: 2h"}} {
			if _, has := present[req.key]; !has {
				d.errorf(item, "%s: %s is required, such as %s", path, req.key, req.example)
				valid = false
			}
		}
		if !valid {
			continue
		}
		if !slices.ContainsFunc(probes, func(p *Probe) bool { return w.Matches(p.Name, p.Labels) }) {
			d.errorf(item, "%s: no probe matches %s; a window that covers no probe mutes nothing", path, w.Matchers)
			continue
		}
		out = append(out, w)
	}
	return out
}

// windowProbes decodes a window's probes:, each the name of a probe.
func (l *loader) windowProbes(x entry, probes []*Probe) []string {
	d := l.d
	items, ok := d.list(x.value, x.path)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		d.errorf(x.value, "%s: must name at least one probe; leave probes out to match by labels alone", x.path)
		return nil
	}
	names := make([]string, len(probes))
	for i, p := range probes {
		names[i] = p.Name
	}
	var out []string
	for i, item := range items {
		p := index(x.path, i)
		name, ok := d.str(item, p)
		switch {
		case !ok:
		case !slices.Contains(names, name):
			hint := ""
			if s := Suggest(name, names); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.errorf(item, "%s: no probe is named %q%s", p, name, hint)
		case slices.Contains(out, name):
			d.errorf(item, "%s: %s is listed twice", p, name)
		default:
			out = append(out, name)
		}
	}
	return out
}

// windowLabels decodes a window's labels:, every one of which a probe must
// carry.
func (l *loader) windowLabels(x entry) map[string]string {
	return l.labelMatch(x, "leave labels out to match by probes alone", "match the probe's own labels, or name it in probes")
}

// windowDays decodes every:, weekdays by their English names (Sun or
// Sunday, in any case); empty means every day.
func (l *loader) windowDays(x entry) []time.Weekday {
	d := l.d
	items, ok := d.list(x.value, x.path)
	if !ok {
		return nil
	}
	var out []time.Weekday
	for i, item := range items {
		p := index(x.path, i)
		s, ok := d.str(item, p)
		if !ok {
			continue
		}
		day, known := weekday(s)
		switch {
		case !known:
			d.errorf(item, "%s: unknown weekday %q; expected Mon, Tue, Wed, Thu, Fri, Sat or Sun", p, s)
		case slices.Contains(out, day):
			d.errorf(item, "%s: %s is listed twice", p, day.String()[:3])
		default:
			out = append(out, day)
		}
	}
	return out
}

// weekday reads a weekday's English name or its first three letters, in
// any case.
func weekday(s string) (time.Weekday, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, d := range weekdays {
		name := strings.ToLower(d.String())
		if s == name || s == name[:3] {
			return d, true
		}
	}
	return 0, false
}

// windowStart decodes start:, HH:MM on a 24-hour clock (unquoted, 02:00
// is read as written, not as YAML 1.1's base-60 number).
func (l *loader) windowStart(x entry) (hour, minute int) {
	d := l.d
	s, ok := d.str(x.value, x.path)
	if !ok {
		return 0, 0
	}
	m := clockTime.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		d.errorf(x.value, "%s: expected a time of day as HH:MM on a 24-hour clock, such as \"02:00\" or \"23:30\", got %q", x.path, s)
		return 0, 0
	}
	hour, _ = strconv.Atoi(m[1])
	minute, _ = strconv.Atoi(m[2])
	return hour, minute
}

// windowZone decodes timezone:, an IANA name. The binary carries the time
// zone database (time/tzdata), so a name valid on one host is valid on all.
func (l *loader) windowZone(x entry) *time.Location {
	d := l.d
	s, ok := d.str(x.value, x.path)
	if !ok {
		return time.UTC
	}
	name := strings.TrimSpace(s)
	switch name {
	case "":
		d.errorf(x.value, "%s: must not be empty; leave it out for %s", x.path, DefaultMaintenanceZone)
		return time.UTC
	case "Local":
		d.errorf(x.value, "%s: Local differs from host to host; name the zone, such as Europe/Berlin", x.path)
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		d.errorf(x.value, "%s: unknown time zone %q; expected an IANA name such as Europe/Berlin, America/New_York or UTC", x.path, name)
		return time.UTC
	}
	return loc
}

// MaintenanceAt returns the probes some maintenance window of c covers,
// each true when one covering it is on at now: what
// toolpulse_probe_in_maintenance shows. Probes no window covers are not
// in it.
func (c *Config) MaintenanceAt(now time.Time) map[string]bool {
	if len(c.Maintenance) == 0 {
		return nil
	}
	on := results.WindowsOn(c.Maintenance, now)
	out := map[string]bool{}
	for _, p := range c.Probes {
		for i, w := range c.Maintenance {
			if w.Matches(p.Name, p.Labels) {
				out[p.Name] = out[p.Name] || !on[i].IsZero()
			}
		}
	}
	return out
}
