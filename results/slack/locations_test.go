package slack

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// TestRenderLocations: a fleet-wide alert lists every location's verdict
// in a Locations field; a single location's message has no such field.
func TestRenderLocations(t *testing.T) {
	if all := strings.Join(texts(t, Render(firingUnavailable())), "\n"); strings.Contains(all, "*Locations*") {
		t.Errorf("a single location's message lists locations\n%s", all)
	}
	a := firingUnavailable()
	a.Locations = []results.LocationView{
		{Location: "eu-west", Failing: true, Outcome: results.Unavailable, Code: results.CodeConnectionRefused},
		{Location: "us-east", Failing: true, Outcome: results.Unavailable, Code: results.CodeTimeout},
		{Location: "ap-south", Outcome: results.Pass},
	}
	m := Render(a)
	checkLimits(t, m)
	all := strings.Join(texts(t, m), "\n")
	for _, w := range []string{"*Locations*\neu-west: failing, unavailable connection_refused\nus-east: failing, unavailable timeout\nap-south: passing"} {
		if !strings.Contains(all, w) {
			t.Errorf("message lacks %q\n%s", w, all)
		}
	}
}

// TestRenderLocationSilent: a location_silent message names the probe and
// the location in its header and its fallback text; location_back says
// it records again.
func TestRenderLocationSilent(t *testing.T) {
	a := firingUnavailable()
	a.Kind, a.Locations = results.AlertLocationSilent, []results.LocationView{{Location: "ap-south", Silent: true}}
	m := Render(a)
	checkLimits(t, m)
	all := strings.Join(texts(t, m), "\n")
	if !strings.Contains(all, a.Probe+": location ap-south silent") || !strings.Contains(m.Text, "location ap-south: silent, never ran") {
		t.Errorf("location_silent message:\n%s\nfallback %q", all, m.Text)
	}
	a.Kind = results.AlertLocationBack
	if m := Render(a); !strings.Contains(m.Text, a.Probe+": location ap-south recording again") {
		t.Errorf("location_back fallback %q", m.Text)
	}
}

// locationGroup is the group of ten probes' alerts of kind about
// ap-south, as the decider's deliverer sends it.
func locationGroup(kind results.AlertKind) results.AlertGroup {
	g := results.AlertGroup{Key: results.LocationGroupKey("default/slack", "ap-south"),
		Labels: map[string]string{results.SilentLocationLabel: "ap-south"}}
	for i := range 10 {
		a := firingUnavailable()
		a.Kind, a.Probe = kind, fmt.Sprintf("search_%02d", i)
		a.CreatedAt = created.Add(time.Duration(i) * time.Second)
		a.Locations = []results.LocationView{{Location: "ap-south", Silent: kind == results.AlertLocationSilent,
			Outcome: results.Pass, LastRun: created.Add(-2 * time.Minute)}}
		a.Outcome, a.Code, a.HTTPStatus = results.Pass, "", 200
		g.Alerts = append(g.Alerts, a)
	}
	return g
}

// TestRenderLocationGroup: the probes of a dead location are one message,
// "location ap-south silent: 10 probes", listing each with its last run;
// their return is one message listing them again; neither shows the
// group's internal label.
func TestRenderLocationGroup(t *testing.T) {
	for _, tt := range []struct {
		kind  results.AlertKind
		title string
		line  string
	}{
		{results.AlertLocationSilent, ":mute: location ap-south silent: 10 probes", "• `search_%02d` last run pass at "},
		{results.AlertLocationBack, ":large_green_circle: location ap-south back: 10 probes", "• `search_%02d` recording again"},
	} {
		t.Run(string(tt.kind), func(t *testing.T) {
			m := RenderGroup(locationGroup(tt.kind))
			checkLimits(t, m)
			all := strings.Join(texts(t, m), "\n")
			if !strings.HasPrefix(m.Text, tt.title+": search_00, search_01") || !strings.Contains(all, tt.title) {
				t.Errorf("fallback %q, want it to start with %q; message:\n%s", m.Text, tt.title, all)
			}
			for i := range 10 {
				if !strings.Contains(all, fmt.Sprintf(tt.line, i)) {
					t.Errorf("probe %d not listed as %q:\n%s", i, tt.line, all)
				}
			}
			if strings.Contains(all, results.SilentLocationLabel) || !strings.Contains(all, "location `ap-south`") {
				t.Errorf("the context shows the group's label, or not its location:\n%s", all)
			}
		})
	}
}
