package checks

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// invalidMaintenance are the maintenance: fixtures under
// testdata/maintenance/, one per rule, with every error Load reports.
// beyond: a JSON Schema cannot judge it (the probes and the time zone
// database are Load's alone).
var invalidMaintenance = []struct {
	rule   string
	want   []string
	beyond bool
}{
	{rule: "weekday", want: []string{
		`testdata/maintenance/invalid-weekday.yaml:16:18: maintenance[0].every[1]: unknown weekday "Sonntag"; expected Mon, Tue, Wed, Thu, Fri, Sat or Sun`,
		`testdata/maintenance/invalid-weekday.yaml:16:27: maintenance[0].every[2]: Sun is listed twice`,
	}},
	{rule: "start", want: []string{
		`testdata/maintenance/invalid-start.yaml:16:12: maintenance[0].start: expected a time of day as HH:MM on a 24-hour clock, such as "02:00" or "23:30", got "2am"`,
		`testdata/maintenance/invalid-start.yaml:19:12: maintenance[1].start: expected a time of day as HH:MM on a 24-hour clock, such as "02:00" or "23:30", got "24:00"`,
	}},
	{rule: "duration", want: []string{
		"testdata/maintenance/invalid-duration.yaml:17:15: maintenance[0].duration: must be positive, got 0s",
		"testdata/maintenance/invalid-duration.yaml:20:15: maintenance[1].duration: must be less than a week (168h): the window starts again every week, got 168h",
	}},
	{rule: "timezone", beyond: true, want: []string{
		`testdata/maintenance/invalid-timezone.yaml:18:15: maintenance[0].timezone: unknown time zone "Europe/Berlim"; expected an IANA name such as Europe/Berlin, America/New_York or UTC`,
		"testdata/maintenance/invalid-timezone.yaml:22:15: maintenance[1].timezone: Local differs from host to host; name the zone, such as Europe/Berlin",
	}},
	{rule: "probe", want: []string{
		`testdata/maintenance/invalid-probe.yaml:15:14: maintenance[0].probes[0]: no probe is named "serch" (did you mean "search"?)`,
		"testdata/maintenance/invalid-probe.yaml:15:29: maintenance[0].probes[2]: search is listed twice",
	}},
	{rule: "covers-none", beyond: true, want: []string{
		"testdata/maintenance/invalid-covers-none.yaml:15:5: maintenance[0]: no probe matches team=searhc; a window that covers no probe mutes nothing",
		"testdata/maintenance/invalid-covers-none.yaml:18:5: maintenance[1]: no probe matches probe=billing team=search; a window that covers no probe mutes nothing",
	}},
	{rule: "matchers", want: []string{
		"testdata/maintenance/invalid-matchers.yaml:15:5: maintenance[0]: name the probes it covers with probes: [name, ...], labels: {team: search}, or both",
		"testdata/maintenance/invalid-matchers.yaml:18:13: maintenance[1].labels: must list at least one label; leave labels out to match by probes alone",
	}},
	{rule: "required", want: []string{
		"testdata/maintenance/invalid-required.yaml:15:5: maintenance[0]: duration is required, such as duration: 2h",
		`testdata/maintenance/invalid-required.yaml:15:5: maintenance[0]: start is required, such as start: "02:00"`,
		`testdata/maintenance/invalid-required.yaml:17:5: maintenance[0]: unknown key "days"; expected one of probes, labels, every, start, duration, timezone`,
	}},
}

func TestLoadMaintenanceInvalid(t *testing.T) {
	for _, tt := range invalidMaintenance {
		t.Run(tt.rule, func(t *testing.T) {
			cfg, err := Load("testdata/maintenance/invalid-"+tt.rule+".yaml", noEnv)
			if cfg != nil {
				t.Errorf("Load returned a config along with the error")
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Load error = %v (%T), want an ErrorList", err, err)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, want)
			}
		})
	}
	files, err := filepath.Glob("testdata/maintenance/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rule := strings.TrimSuffix(strings.TrimPrefix(f, "testdata/maintenance/invalid-"), ".yaml")
		if !slices.ContainsFunc(invalidMaintenance, func(c struct {
			rule   string
			want   []string
			beyond bool
		}) bool {
			return c.rule == rule
		}) {
			t.Errorf("%s has no case in invalidMaintenance", f)
		}
	}
}

// TestSchemaMaintenance: the schema rejects each invalid window it can
// judge and accepts the valid ones.
func TestSchemaMaintenance(t *testing.T) {
	s := compiledSchema(t)
	for _, tt := range invalidMaintenance {
		path := "testdata/maintenance/invalid-" + tt.rule + ".yaml"
		err := validate(t, s, path)
		switch {
		case err == nil && !tt.beyond:
			t.Errorf("%s: the schema accepts it; Load says %q", path, tt.want[0])
		case err != nil && tt.beyond:
			t.Errorf("%s: the schema rejects it now (%v); it is not beyond the schema", path, firstLineOf(err))
		}
	}
	if err := validate(t, s, "testdata/maintenance/valid.yaml"); err != nil {
		t.Errorf("valid.yaml: the schema rejects it:\n%v", err)
	}
}

func TestLoadMaintenance(t *testing.T) {
	cfg, err := Load("testdata/maintenance/valid.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	want := []results.MaintenanceWindow{
		{Name: "maintenance[0]", Matchers: results.Matchers{Labels: map[string]string{"team": "search"}},
			Days: []time.Weekday{time.Sunday}, Hour: 2, Duration: 2 * time.Hour, Location: berlin},
		{Name: "maintenance[1]", Matchers: results.Matchers{Probes: []string{"billing"}},
			Days: []time.Weekday{time.Saturday, time.Sunday}, Hour: 23, Minute: 30, Duration: 90 * time.Minute, Location: time.UTC},
		{Name: "maintenance[2]", Matchers: results.Matchers{Probes: []string{"search", "billing"}, Labels: map[string]string{"team": "payments"}},
			Duration: 10 * time.Minute, Location: time.UTC},
	}
	if len(cfg.Maintenance) != len(want) {
		t.Fatalf("Maintenance = %v, want %v", cfg.Maintenance, want)
	}
	for i, got := range cfg.Maintenance {
		w := want[i]
		if got.Name != w.Name || got.Matchers.String() != w.Matchers.String() || !slices.Equal(got.Days, w.Days) ||
			got.Hour != w.Hour || got.Minute != w.Minute || got.Duration != w.Duration || got.Location.String() != w.Location.String() {
			t.Errorf("Maintenance[%d] = %+v (%s), want %+v (%s)", i, got, got.Location, w, w.Location)
		}
	}
}

// TestMaintenanceEnv: a window's settings take ${VAR} like every other
// setting.
func TestMaintenanceEnv(t *testing.T) {
	src := storageBase + "probes:\n  - {name: a, consumer: c, request: {url: \"http://127.0.0.1:9/\"}}\n" +
		"maintenance:\n  - {probes: [a], start: \"${TP_START}\", duration: 1h, timezone: \"${TP_ZONE:-UTC}\"}\n"
	env := mapEnv(map[string]string{"TP_START": "04:15", "TP_ZONE": "America/New_York"})
	cfg, err := Parse("checks.yaml", []byte(src), "conf", env)
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Maintenance[0]
	if w.Hour != 4 || w.Minute != 15 || w.Location.String() != "America/New_York" {
		t.Errorf("window = %v, want 04:15 America/New_York", w)
	}
}

// TestMaintenanceAt: the probes some window covers, each true while one
// is on; the others are left out.
func TestMaintenanceAt(t *testing.T) {
	cfg, err := Load("testdata/maintenance/valid.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	// valid.yaml: search by its label on Sundays from 02:00 Berlin for 2h;
	// billing on Saturdays and Sundays from 23:30 UTC for 1h30m, and
	// daily from 00:00 UTC for 10m (named, with team payments).
	tests := []struct {
		at   string
		want map[string]bool
	}{
		{"2026-12-06T00:50:00Z", map[string]bool{"search": false, "billing": true}},  // Saturday's 23:30 still on
		{"2026-12-06T01:30:00Z", map[string]bool{"search": true, "billing": false}},  // Sunday 02:30 Berlin
		{"2026-12-06T03:30:00Z", map[string]bool{"search": false, "billing": false}}, // both ended
		{"2026-12-02T00:05:00Z", map[string]bool{"search": false, "billing": true}},  // the daily ten minutes
	}
	for _, tt := range tests {
		at, _ := time.Parse(time.RFC3339, tt.at)
		if got := cfg.MaintenanceAt(at); !maps.Equal(got, tt.want) {
			t.Errorf("MaintenanceAt(%s) = %v, want %v", tt.at, got, tt.want)
		}
	}
	cfg.Maintenance = nil
	if got := cfg.MaintenanceAt(time.Now()); got != nil {
		t.Errorf("without windows: %v, want nil", got)
	}
}
