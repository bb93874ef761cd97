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
