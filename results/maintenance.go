package results

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// MaintenanceWindow is a recurring stretch of time during which the
// alerts of the probes it matches are muted as a Silence mutes them: the
// probes still run and their results are recorded; their alerts are
// recorded as skipped, and a resolve is never muted. It is written in the
// config (maintenance:), not added by hand.
//
// A window starts at Hour:Minute on the wall clock of Location, on each
// of Days, and lasts Duration of elapsed time. Around a change of the
// clocks:
//   - a start the clocks skip (02:30 on a day that jumps from 02:00 to
//     03:00) is taken at the jump, the first instant the clock has passed
//     it;
//   - a start the clocks show twice (02:30 on a day that goes back from
//     03:00 to 02:00) is taken the first time;
//   - Duration is elapsed time, so a window of 2h across a change lasts
//     two hours, whatever the wall clock shows at its end.
//
// A window that crosses midnight belongs to the day it starts on.
type MaintenanceWindow struct {
	// Name is where the window is written, such as "maintenance[0]".
	Name     string
	Matchers Matchers
	// Days are the weekdays the window starts on, in the order written;
	// empty means every day.
	Days         []time.Weekday
	Hour, Minute int
	// Duration is more than zero and less than a week.
	Duration time.Duration
	// Location is the time zone Hour:Minute is read in; nil means UTC.
	Location *time.Location
}

// Matches reports whether the window covers a probe with this name and
// these labels, whatever the time (see Matchers).
func (w MaintenanceWindow) Matches(probe string, labels map[string]string) bool {
	return w.Matchers.Matches(probe, labels)
}

// zone returns the window's Location, UTC when it is nil.
func (w MaintenanceWindow) zone() *time.Location {
	if w.Location == nil {
		return time.UTC
	}
	return w.Location
}

// String prints the window for a person: "Sun 02:00 Europe/Berlin for 2h".
func (w MaintenanceWindow) String() string {
	days := "every day"
	if len(w.Days) > 0 {
		names := make([]string, len(w.Days))
		for i, d := range w.Days {
			names[i] = d.String()[:3]
		}
		days = strings.Join(names, ",")
	}
	return fmt.Sprintf("%s %02d:%02d %s for %s", days, w.Hour, w.Minute, w.zone(), formatSpan(w.Duration))
}

// formatSpan prints d without trailing zero units: 2h, 1h30m, 45m.
func formatSpan(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// startsOn reports whether the window starts on weekday.
func (w MaintenanceWindow) startsOn(weekday time.Weekday) bool {
	return len(w.Days) == 0 || slices.Contains(w.Days, weekday)
}

// startOn returns the instant the window starts on the local date y-m-d,
// by the rules of MaintenanceWindow for a change of the clocks.
func (w MaintenanceWindow) startOn(y int, m time.Month, d int) time.Time {
	loc := w.zone()
	// The wall clock wanted, written as if it were UTC: an instant u shows
	// it in loc when u plus loc's offset at u is wall.
	wall := time.Date(y, m, d, w.Hour, w.Minute, 0, 0, time.UTC)
	var first time.Time
	found := false
	// A zone changes its offset at most once around one date: the
	// offsets two days either side and at wall itself are all it has.
	for _, near := range []time.Time{wall.Add(-48 * time.Hour), wall, wall.Add(48 * time.Hour)} {
		_, off := near.In(loc).Zone()
		u := wall.Add(-time.Duration(off) * time.Second)
		if _, got := u.In(loc).Zone(); got != off {
			continue // u does not show wall in loc
		}
		if !found || u.Before(first) {
			first, found = u, true
		}
	}
	if found {
		return first
	}
	// The clocks skip wall: read with the offset before the jump, it lands
	// after the jump, in the zone the jump began.
	_, before := wall.Add(-48 * time.Hour).In(loc).Zone()
	jumped, _ := wall.Add(-time.Duration(before) * time.Second).In(loc).ZoneBounds()
	return jumped
}

// span is one stretch of time, [Start, End).
type span struct{ start, end time.Time }

// stretches returns the window's occurrences that start on the local dates
// from days before t's to days after it, overlapping ones merged, in
// order.
func (w MaintenanceWindow) stretches(t time.Time, before, after int) []span {
	y, m, d := t.In(w.zone()).Date()
	var out []span
	for i := -before; i <= after; i++ {
		// Dates are counted at noon UTC, where no clock change reaches.
		date := time.Date(y, m, d+i, 12, 0, 0, 0, time.UTC)
		if !w.startsOn(date.Weekday()) {
			continue
		}
		start := w.startOn(date.Date())
		out = append(out, span{start, start.Add(w.Duration)})
	}
	slices.SortFunc(out, func(a, b span) int { return a.start.Compare(b.start) })
	merged := out[:0]
	for _, s := range out {
		if n := len(merged); n > 0 && !s.start.After(merged[n-1].end) {
			if s.end.After(merged[n-1].end) {
				merged[n-1].end = s.end
			}
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// A window lasts less than a week, so the occurrences that may cover an
// instant started within the eight days before it; one starts within the
// eight days after it, when it has any day at all.
const (
	windowLookBack  = 8
	windowLookAhead = 8
)

// ActiveAt reports whether the window is on at t, and until when: the end
// of the stretch covering t, occurrences that overlap counted as one.
func (w MaintenanceWindow) ActiveAt(t time.Time) (until time.Time, active bool) {
	for _, s := range w.stretches(t, windowLookBack, windowLookAhead) {
		if !t.Before(s.start) && t.Before(s.end) {
			return s.end, true
		}
	}
	return time.Time{}, false
}

// NextAfter returns the first stretch of the window that starts after t.
func (w MaintenanceWindow) NextAfter(t time.Time) (start, end time.Time) {
	for _, s := range w.stretches(t, windowLookBack, windowLookAhead) {
		if s.start.After(t) {
			return s.start, s.end
		}
	}
	return time.Time{}, time.Time{} // a window without days: not loaded
}

// InMaintenance reports whether any of windows is on at now and covers
// the probe, and until when the last of those is on.
func InMaintenance(windows []MaintenanceWindow, now time.Time, probe string, labels map[string]string) (until time.Time, in bool) {
	for _, w := range windows {
		if !w.Matches(probe, labels) {
			continue
		}
		if end, ok := w.ActiveAt(now); ok && end.After(until) {
			until, in = end, true
		}
	}
	return until, in
}

// WindowsOn returns, for each of windows in order, until when it is on at
// now, or the zero time when it is off: what a page or a scrape that asks
// about many probes computes once.
func WindowsOn(windows []MaintenanceWindow, now time.Time) []time.Time {
	out := make([]time.Time, len(windows))
	for i, w := range windows {
		out[i], _ = w.ActiveAt(now)
	}
	return out
}
