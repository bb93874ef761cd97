package webhook

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// TestBodyLocations: a fleet-wide alert's body has a locations array, one
// object per location side by side; a single location's alert has none.
func TestBodyLocations(t *testing.T) {
	n, err := New(Config{URL: "https://hooks.example.com" + hookPath, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if body, err := n.Body(firing()); err != nil || strings.Contains(string(body), `"locations"`) {
		t.Errorf("a single location's body has locations: %s, %v", body, err)
	}
	at := time.Date(2026, 12, 3, 14, 2, 5, 0, time.UTC)
	a := firing()
	a.Locations = []results.LocationView{
		{Location: "eu-west", Failing: true, Outcome: results.Unavailable, Code: results.CodeTimeout, LastRun: at},
		{Location: "ap-south", Silent: true},
	}
	body, err := n.Body(a)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Locations []map[string]any `json:"locations"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"location": "eu-west", "failing": true, "silent": false, "outcome": "unavailable", "code": "timeout", "last_run": "2026-12-03T14:02:05Z"},
		{"location": "ap-south", "failing": false, "silent": true},
	}
	if len(got.Locations) != len(want) {
		t.Fatalf("locations: %v, want %v", got.Locations, want)
	}
	for i := range want {
		for k, v := range want[i] {
			if got.Locations[i][k] != v {
				t.Errorf("location %d %s: %v, want %v", i, k, got.Locations[i][k], v)
			}
		}
		if len(got.Locations[i]) != len(want[i]) {
			t.Errorf("location %d: %v, want exactly %v", i, got.Locations[i], want[i])
		}
	}
}

// TestBodyLocationSilent: a location_silent alert posts its kind and
// names its location; an alert of another kind names none.
func TestBodyLocationSilent(t *testing.T) {
	n, err := New(Config{URL: "https://hooks.example.com" + hookPath, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	a := firing()
	a.Locations = []results.LocationView{{Location: "ap-south", Silent: true}}
	if p := n.Payload(a); p.Location != "" {
		t.Errorf("a firing alert names location %q", p.Location)
	}
	a.Kind = results.AlertLocationSilent
	body, err := n.Body(a)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Kind     string `json:"kind"`
		Location string `json:"location"`
	}
	if err := json.Unmarshal(body, &got); err != nil || got.Kind != "location_silent" || got.Location != "ap-south" {
		t.Errorf("location_silent body: %s (%v)", body, err)
	}
}

// TestGroupBodyLocation: a dead location's group posts one body that says
// "location ap-south silent: 10 probes" and lists the ten alerts, counted
// as silent (not as firing); its return's body counts them back; a
// group_by group's body has none of these fields.
func TestGroupBodyLocation(t *testing.T) {
	n, err := New(Config{URL: "https://hooks.example.com" + hookPath, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	group := func(kind results.AlertKind) results.AlertGroup {
		g := results.AlertGroup{Key: results.LocationGroupKey("routes[0]/webhook", "ap-south"),
			Labels: map[string]string{results.SilentLocationLabel: "ap-south"}}
		for i := range 10 {
			a := firing()
			a.ID, a.Kind, a.Probe = int64(i+1), kind, fmt.Sprintf("search_%02d", i)
			a.Locations = []results.LocationView{{Location: "ap-south", Silent: kind == results.AlertLocationSilent}}
			g.Alerts = append(g.Alerts, a)
		}
		return g
	}
	type body struct {
		Firing, Resolved, Silent, Back int
		Location, Summary              string
		Alerts                         []struct{ Probe, Kind string }
	}
	decode := func(g results.AlertGroup) body {
		t.Helper()
		raw, err := n.GroupBody(g)
		if err != nil {
			t.Fatal(err)
		}
		var b body
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	silent := decode(group(results.AlertLocationSilent))
	if silent.Summary != "location ap-south silent: 10 probes" || silent.Location != "ap-south" ||
		silent.Silent != 10 || silent.Back != 0 || silent.Firing != 0 || len(silent.Alerts) != 10 ||
		silent.Alerts[9].Probe != "search_09" || silent.Alerts[9].Kind != "location_silent" {
		t.Errorf("the dead location's body: %+v", silent)
	}
	back := decode(group(results.AlertLocationBack))
	if back.Summary != "location ap-south back: 10 probes" || back.Back != 10 || back.Silent != 0 || back.Resolved != 0 || len(back.Alerts) != 10 {
		t.Errorf("the return's body: %+v", back)
	}
	raw, err := n.GroupBody(results.AlertGroup{Key: `routes[0]/webhook{team="search"}`, Labels: map[string]string{"team": "search"}, Alerts: []results.Alert{firing()}})
	if err != nil || strings.Contains(string(raw), `"summary"`) || strings.Contains(string(raw), `"silent"`) {
		t.Errorf("a group_by group's body: %s (%v), want no location fields", raw, err)
	}
}
