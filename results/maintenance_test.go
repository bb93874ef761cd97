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
