package slack

import (
	"strings"
	"testing"

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
