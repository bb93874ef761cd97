package results

import (
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestMaintenanceWindowActiveAt(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	sunday := []time.Weekday{time.Sunday}
	// Berlin's clocks jump from 02:00 to 03:00 on Sunday 2026-03-29
	// (01:00 UTC) and go back from 03:00 to 02:00 on Sunday 2026-10-25
	// (01:00 UTC).
	tests := []struct {
		name   string
		w      MaintenanceWindow
		at     string
		active bool
		until  string
	}{
		{"before a plain Sunday's start", MaintenanceWindow{Days: sunday, Hour: 2, Duration: 2 * time.Hour, Location: berlin},
			"2026-12-06T00:59:59Z", false, ""},
		{"at a plain Sunday's start, CET", MaintenanceWindow{Days: sunday, Hour: 2, Duration: 2 * time.Hour, Location: berlin},
			"2026-12-06T01:00:00Z", true, "2026-12-06T03:00:00Z"},
		{"at a plain Sunday's end", MaintenanceWindow{Days: sunday, Hour: 2, Duration: 2 * time.Hour, Location: berlin},
			"2026-12-06T03:00:00Z", false, ""},
		{"summer time, CEST", MaintenanceWindow{Days: sunday, Hour: 2, Duration: 2 * time.Hour, Location: berlin},
			"2026-07-05T00:00:00Z", true, "2026-07-05T02:00:00Z"},
		{"not on a Saturday", MaintenanceWindow{Days: sunday, Hour: 2, Duration: 2 * time.Hour, Location: berlin},
			"2026-12-05T01:30:00Z", false, ""},
		{"a skipped start, just before the jump", MaintenanceWindow{Days: sunday, Hour: 2, Minute: 30, Duration: 2 * time.Hour, Location: berlin},
			"2026-03-29T00:59:59Z", false, ""},
		{"a skipped start begins at the jump", MaintenanceWindow{Days: sunday, Hour: 2, Minute: 30, Duration: 2 * time.Hour, Location: berlin},
			"2026-03-29T01:00:00Z", true, "2026-03-29T03:00:00Z"},
		{"a skipped start lasts its elapsed duration", MaintenanceWindow{Days: sunday, Hour: 2, Minute: 30, Duration: 2 * time.Hour, Location: berlin},
			"2026-03-29T03:00:00Z", false, ""},
		{"a repeated start is taken the first time", MaintenanceWindow{Days: sunday, Hour: 2, Minute: 30, Duration: time.Hour, Location: berlin},
			"2026-10-25T00:30:00Z", true, "2026-10-25T01:30:00Z"},
		{"a repeated start, before its first showing", MaintenanceWindow{Days: sunday, Hour: 2, Minute: 30, Duration: time.Hour, Location: berlin},
			"2026-10-25T00:29:59Z", false, ""},
		{"a repeated start, not again at its second showing", MaintenanceWindow{Days: sunday, Hour: 2, Minute: 30, Duration: time.Hour, Location: berlin},
			"2026-10-25T01:30:00Z", false, ""},
		{"a start after the jump is read in summer time", MaintenanceWindow{Days: sunday, Hour: 4, Duration: time.Hour, Location: berlin},
			"2026-03-29T02:00:00Z", true, "2026-03-29T03:00:00Z"},
		{"a start before the jump back is read in summer time", MaintenanceWindow{Days: sunday, Hour: 1, Duration: 3 * time.Hour, Location: berlin},
			"2026-10-24T23:00:00Z", true, "2026-10-25T02:00:00Z"},
		{"across midnight, on the next day", MaintenanceWindow{Days: sunday, Hour: 23, Duration: 3 * time.Hour},
			"2026-12-07T01:59:59Z", true, "2026-12-07T02:00:00Z"},
		{"across midnight, the next day's own start is not a window", MaintenanceWindow{Days: []time.Weekday{time.Monday}, Hour: 23, Duration: 3 * time.Hour},
			"2026-12-07T01:00:00Z", false, ""},
		{"no days is every day", MaintenanceWindow{Hour: 12, Duration: time.Minute},
			"2026-12-02T12:00:30Z", true, "2026-12-02T12:01:00Z"},
		{"nil location is UTC", MaintenanceWindow{Days: sunday, Hour: 2, Duration: time.Hour},
			"2026-12-06T02:00:00Z", true, "2026-12-06T03:00:00Z"},
		{"overlapping days are one stretch", MaintenanceWindow{Days: []time.Weekday{time.Saturday, time.Sunday}, Hour: 22, Duration: 26 * time.Hour},
			"2026-12-05T23:00:00Z", true, "2026-12-08T00:00:00Z"},
		{"started six days ago and still on", MaintenanceWindow{Days: []time.Weekday{time.Monday}, Duration: 7*24*time.Hour - time.Minute},
			"2026-12-13T23:58:00Z", true, "2026-12-13T23:59:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			until, active := tt.w.ActiveAt(utc(tt.at))
			if active != tt.active {
				t.Fatalf("ActiveAt(%s) active = %v, want %v (until %s)", tt.at, active, tt.active, until)
			}
			if tt.active && !until.Equal(utc(tt.until)) {
				t.Errorf("ActiveAt(%s) until = %s, want %s", tt.at, until.UTC().Format(time.RFC3339), tt.until)
			}
		})
	}
}

func TestMaintenanceWindowNextAfter(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	tests := []struct {
		name       string
		w          MaintenanceWindow
		after      string
		start, end string
	}{
		{"the coming Sunday", MaintenanceWindow{Days: []time.Weekday{time.Sunday}, Hour: 2, Duration: 2 * time.Hour, Location: berlin},
			"2026-12-02T10:00:00Z", "2026-12-06T01:00:00Z", "2026-12-06T03:00:00Z"},
		{"during one, the next week's", MaintenanceWindow{Days: []time.Weekday{time.Sunday}, Hour: 2, Duration: 2 * time.Hour, Location: berlin},
			"2026-12-06T01:30:00Z", "2026-12-13T01:00:00Z", "2026-12-13T03:00:00Z"},
		{"a skipped start, at the jump", MaintenanceWindow{Days: []time.Weekday{time.Sunday}, Hour: 2, Minute: 30, Duration: 2 * time.Hour, Location: berlin},
			"2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T03:00:00Z"},
		{"the later of two days", MaintenanceWindow{Days: []time.Weekday{time.Monday, time.Thursday}, Hour: 6, Duration: time.Hour},
			"2026-12-07T07:00:00Z", "2026-12-10T06:00:00Z", "2026-12-10T07:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := tt.w.NextAfter(utc(tt.after))
			if !start.Equal(utc(tt.start)) || !end.Equal(utc(tt.end)) {
				t.Errorf("NextAfter(%s) = %s..%s, want %s..%s", tt.after, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), tt.start, tt.end)
			}
		})
	}
}

func TestInMaintenance(t *testing.T) {
	sunday := []time.Weekday{time.Sunday}
	search := MaintenanceWindow{Matchers: Matchers{Labels: map[string]string{"team": "search"}}, Days: sunday, Hour: 2, Duration: 2 * time.Hour}
	longer := MaintenanceWindow{Matchers: Matchers{Probes: []string{"search-api"}}, Days: sunday, Hour: 1, Duration: 4 * time.Hour}
	both := MaintenanceWindow{Matchers: Matchers{Probes: []string{"billing"}, Labels: map[string]string{"team": "search"}}, Days: sunday, Duration: 24 * time.Hour}
	windows := []MaintenanceWindow{search, longer, both}
	at := utc("2026-12-06T03:00:00Z")
	tests := []struct {
		name   string
		probe  string
		labels map[string]string
		in     bool
		until  string
	}{
		{"by label", "search-web", map[string]string{"team": "search"}, true, "2026-12-06T04:00:00Z"},
		{"by name and label, the later end", "search-api", map[string]string{"team": "search"}, true, "2026-12-06T05:00:00Z"},
		{"another team", "payments", map[string]string{"team": "payments"}, false, ""},
		{"both: the name without the label", "billing", map[string]string{"team": "payments"}, false, ""},
		{"both: the name and the label", "billing", map[string]string{"team": "search"}, true, "2026-12-07T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			until, in := InMaintenance(windows, at, tt.probe, tt.labels)
			if in != tt.in || (in && !until.Equal(utc(tt.until))) {
				t.Errorf("InMaintenance(%s) = %s, %v; want %s, %v", tt.probe, until, in, tt.until, tt.in)
			}
		})
	}
	if _, in := InMaintenance(windows, utc("2026-12-06T05:00:00Z"), "search-api", map[string]string{"team": "search"}); in {
		t.Error("InMaintenance after every window ended = true")
	}
}

func TestMaintenanceWindowString(t *testing.T) {
	w := MaintenanceWindow{Days: []time.Weekday{time.Saturday, time.Sunday}, Hour: 2, Minute: 5, Duration: 90 * time.Minute, Location: mustZone(t, "Europe/Berlin")}
	if got, want := w.String(), "Sat,Sun 02:05 Europe/Berlin for 1h30m"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	w = MaintenanceWindow{Hour: 23, Duration: 2 * time.Hour}
	if got, want := w.String(), "every day 23:00 UTC for 2h"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestMaintenanceStartAgainstTheClock checks the start of a window on
// every day around each change of the clocks of zones with the usual and
// the unusual changes (a 30-minute one, one at midnight, a skipped day)
// against a reading of the wall clock minute by minute: a window starts
// at the first instant whose wall clock shows its date and time or later.
func TestMaintenanceStartAgainstTheClock(t *testing.T) {
	zones := map[string]int{
		"Europe/Berlin": 2026, "America/New_York": 2026, "Australia/Lord_Howe": 2026,
		"America/Santiago": 2026, "Pacific/Apia": 2011,
	}
	times := [][2]int{{0, 0}, {0, 30}, {1, 59}, {2, 0}, {2, 30}, {3, 0}, {23, 30}}
	for name, year := range zones {
		loc := mustZone(t, name)
		var dates []time.Time // the local dates of a change, and the days either side
		for d := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() == year; d = d.AddDate(0, 0, 1) {
			_, before := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc).Add(-time.Hour).Zone()
			_, after := time.Date(d.Year(), d.Month(), d.Day(), 23, 59, 0, 0, loc).Add(time.Hour).Zone()
			if before != after {
				dates = append(dates, d.AddDate(0, 0, -1), d, d.AddDate(0, 0, 1))
			}
		}
		if len(dates) == 0 {
			t.Fatalf("%s: no change of the clocks found in %d", name, year)
		}
		for _, date := range dates {
			for _, hm := range times {
				w := MaintenanceWindow{Hour: hm[0], Minute: hm[1], Duration: time.Hour, Location: loc}
				got := w.startOn(date.Date())
				want := firstShowing(date, hm[0], hm[1], loc)
				if !got.Equal(want) {
					t.Errorf("%s %s %02d:%02d: starts at %s, want %s (the first minute the clock shows it or later)",
						name, date.Format("2006-01-02"), hm[0], hm[1], got.In(loc).Format(time.RFC3339), want.In(loc).Format(time.RFC3339))
				}
			}
		}
	}
}

// firstShowing is the first instant, minute by minute, whose wall clock
// in loc reads date at hour:minute or later.
func firstShowing(date time.Time, hour, minute int, loc *time.Location) time.Time {
	want := time.Date(date.Year(), date.Month(), date.Day(), hour, minute, 0, 0, time.UTC)
	for u := want.Add(-30 * time.Hour); ; u = u.Add(time.Minute) {
		l := u.In(loc)
		wall := time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
		if !wall.Before(want) {
			return u
		}
	}
}
