package checks

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

const locationsBase = "version: 1\nconsumers:\n  - {name: c, select: response.items}\n"

// locationsProbe is one probe of a config under test, its extra keys
// given in flow style.
func locationsProbe(name, extra string) string {
	s := "  - {name: " + name + ", request: {url: http://127.0.0.1:8099/}, consumer: c"
	if extra != "" {
		s += ", " + extra
	}
	return s + "}\n"
}

// TestLoadLocationsDefaults: the rule of checks/locations.go, case by
// case: a probe's own list, then defaults.locations, then every location
// some probe names, then the single default; fleet.location never counts.
func TestLoadLocationsDefaults(t *testing.T) {
	tests := []struct {
		name     string
		defaults string // defaults: block, "" for none
		fleet    string // fleet.location, "" for none
		probes   map[string]string
		want     map[string][]string
		all      []string // Config.Locations
		location string   // Fleet.Location
	}{
		{
			name:   "no locations anywhere: everything in default",
			probes: map[string]string{"a": "", "b": ""},
			want:   map[string][]string{"a": {results.DefaultLocation}, "b": {results.DefaultLocation}},
			all:    []string{results.DefaultLocation}, location: results.DefaultLocation,
		},
		{
			name:   "fleet.location does not count",
			fleet:  "eu-west",
			probes: map[string]string{"a": ""},
			want:   map[string][]string{"a": {"default"}},
			all:    []string{"default"}, location: "eu-west",
		},
		{
			name:   "a probe without a list runs from every location named",
			probes: map[string]string{"a": "locations: [eu-west, us-east]", "b": "locations: [ap-south, eu-west]", "c": ""},
			want:   map[string][]string{"a": {"eu-west", "us-east"}, "b": {"ap-south", "eu-west"}, "c": {"eu-west", "us-east", "ap-south"}},
			all:    []string{"eu-west", "us-east", "ap-south"}, location: "default",
		},
		{
			name:     "defaults.locations before the union",
			defaults: "  locations: [us-east]\n",
			probes:   map[string]string{"a": "locations: [eu-west]", "b": ""},
			want:     map[string][]string{"a": {"eu-west"}, "b": {"us-east"}},
			all:      []string{"eu-west", "us-east"}, location: "default",
		},
		{
			name:   "an empty fleet.location is the default",
			fleet:  `""`,
			probes: map[string]string{"a": "locations: [default, eu-west]"},
			want:   map[string][]string{"a": {"default", "eu-west"}},
			all:    []string{"default", "eu-west"}, location: "default",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := locationsBase
			if tt.fleet != "" {
				src += "fleet: {location: " + tt.fleet + "}\n"
			}
			if tt.defaults != "" {
				src += "defaults:\n" + tt.defaults
			}
			src += "probes:\n"
			names := make([]string, 0, len(tt.probes))
			for name := range tt.probes {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				src += locationsProbe(name, tt.probes[name])
			}
			cfg, err := Parse("checks.yaml", []byte(src), "conf", noEnv)
			if err != nil {
				t.Fatalf("Parse:\n%s\n%v", src, err)
			}
			for _, p := range cfg.Probes {
				if got, want := p.Locations, tt.want[p.Name]; !slices.Equal(got, want) {
					t.Errorf("probe %s: Locations = %q, want %q", p.Name, got, want)
				}
			}
			if got := cfg.Locations(); !slices.Equal(got, tt.all) {
				t.Errorf("Config.Locations() = %q, want %q", got, tt.all)
			}
			if cfg.Fleet.Location != tt.location {
				t.Errorf("Fleet.Location = %q, want %q", cfg.Fleet.Location, tt.location)
			}
		})
	}
}

// TestAlertLocations: the K of K-of-N, written or by default: all of one
// or two locations, a majority of three or more.
func TestAlertLocations(t *testing.T) {
	tests := []struct {
		n, written, want int
	}{
		{1, 0, 1}, {2, 0, 2}, {3, 0, 2}, {4, 0, 3}, {5, 0, 3}, {6, 0, 4},
		{3, 1, 1}, {3, 3, 3}, {2, 1, 1},
	}
	for _, tt := range tests {
		p := &Probe{AlertWhen: AlertWhen{Locations: tt.written}}
		for i := range tt.n {
			p.Locations = append(p.Locations, string(rune('a'+i)))
		}
		if got := p.AlertLocations(); got != tt.want {
			t.Errorf("%d locations, alert_when %d: AlertLocations() = %d, want %d", tt.n, tt.written, got, tt.want)
		}
	}
}

// TestLoadAlertWhen: alert_when.locations is read and counted against the
// probe's resolved locations, its own or the default ones.
func TestLoadAlertWhen(t *testing.T) {
	src := locationsBase + "probes:\n" +
		locationsProbe("a", "locations: [eu-west, us-east, ap-south], alert_when: {locations: 3}") +
		locationsProbe("b", "alert_when: {locations: 1}") +
		locationsProbe("c", "")
	cfg, err := Parse("checks.yaml", []byte(src), "conf", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ written, k int }{{3, 3}, {1, 1}, {0, 2}} {
		p := cfg.Probes[i]
		if p.AlertWhen.Locations != want.written || p.AlertLocations() != want.k {
			t.Errorf("probe %s: alert_when %d, K %d; want %d, %d", p.Name, p.AlertWhen.Locations, p.AlertLocations(), want.written, want.k)
		}
	}
}

// TestLoadLocationsInvalid: each rule's exact message, at file:line:col.
func TestLoadLocationsInvalid(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{
			name: "fleet.location syntax",
			src:  locationsBase + "fleet:\n  location: EU_West\n",
			want: []string{`checks.yaml:5:13: fleet.location: "EU_West" is not a valid location name; use lower-case letters, digits and -`},
		},
		{
			name: "fleet.location length",
			src:  locationsBase + "fleet:\n  location: " + strings.Repeat("a", 64) + "\n",
			want: []string{"checks.yaml:5:13: fleet.location: must be at most 63 characters, got 64"},
		},
		{
			name: "a probe's list",
			src: locationsBase + "probes:\n" +
				locationsProbe("a", "locations: [eu-west, eu-west]") +
				locationsProbe("b", "locations: []") +
				locationsProbe("c", `locations: ["", us east]`) +
				locationsProbe("d", "locations: eu-west"),
			want: []string{
				`checks.yaml:5:89: probes[0].locations[1]: location "eu-west" is listed twice; first at line 5, column 80`,
				"checks.yaml:6:79: probes[1].locations: must name at least one location; leave it out to run from the default locations",
				"checks.yaml:7:80: probes[2].locations[0]: must not be empty; expected a location name such as eu-west",
				`checks.yaml:7:84: probes[2].locations[1]: "us east" is not a valid location name; use lower-case letters, digits and -`,
				"checks.yaml:8:79: probes[3].locations: expected a list, got a string",
			},
		},
		{
			name: "defaults' list",
			src:  locationsBase + "defaults:\n  locations: [Mars]\n",
			want: []string{`checks.yaml:5:15: defaults.locations[0]: "Mars" is not a valid location name; use lower-case letters, digits and -`},
		},
		{
			name: "alert_when",
			src: locationsBase + "probes:\n" +
				locationsProbe("a", "locations: [eu-west, us-east], alert_when: {locations: 3}") +
				locationsProbe("b", "alert_when: {locations: 0}") +
				locationsProbe("c", "alert_when: {locations: 3}") +
				locationsProbe("d", "alert_when: {regions: 2}"),
			want: []string{
				"checks.yaml:5:123: probes[0].alert_when.locations: must be at most 2, the number of the probe's locations (eu-west, us-east), got 3",
				"checks.yaml:6:92: probes[1].alert_when.locations: must be at least 1 (locations failing before the probe alerts), got 0",
				"checks.yaml:7:92: probes[2].alert_when.locations: must be at most 2, the number of the probe's locations (eu-west, us-east), got 3",
				`checks.yaml:8:81: probes[3].alert_when: unknown key "regions"; expected one of locations`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("checks.yaml", []byte(tt.src), "conf", noEnv)
			if err == nil {
				t.Fatalf("loaded %+v; want errors", cfg)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestSchemaLocations: the schema takes what the loader takes of
// locations, and refuses a bad name, an empty list and a K below 1.
func TestSchemaLocations(t *testing.T) {
	s := compiledSchema(t)
	for _, tt := range []struct {
		src string
		ok  bool
	}{
		{locationsBase + "fleet: {location: eu-west}\ndefaults: {locations: [eu-west]}\nprobes:\n" + locationsProbe("a", "locations: [eu-west, us-east], alert_when: {locations: 2}"), true},
		{locationsBase + "fleet: {location: '${TOOLPULSE_LOCATION:-}'}\n", true},
		{locationsBase + "fleet: {location: EU}\n", false},
		{locationsBase + "probes:\n" + locationsProbe("a", "locations: []"), false},
		{locationsBase + "probes:\n" + locationsProbe("a", "locations: [a, a]"), false},
		{locationsBase + "probes:\n" + locationsProbe("a", "alert_when: {locations: 0}"), false},
		{locationsBase + "defaults: {locations: [Mars]}\n", false},
	} {
		path := t.TempDir() + "/checks.yaml"
		if err := os.WriteFile(path, []byte(tt.src), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := validate(t, s, path); (err == nil) != tt.ok {
			t.Errorf("schema on\n%s\naccepts: %v, want %v (%v)", tt.src, err == nil, tt.ok, err)
		}
	}
}
