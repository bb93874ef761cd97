package alertmanager

import (
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

// TestLocationsAnnotation: a fleet-wide alert carries each location's
// verdict in the locations annotation; a single location's has none.
func TestLocationsAnnotation(t *testing.T) {
	n, err := New(Config{URL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.postable(firing()).Annotations["locations"]; ok {
		t.Error("a single location's alert has a locations annotation")
	}
	a := firing()
	a.Locations = []results.LocationView{
		{Location: "eu-west", Failing: true, Outcome: results.Unavailable, Code: results.CodeTimeout},
		{Location: "us-east", Outcome: results.Pass},
	}
	if got, want := n.postable(a).Annotations["locations"], "eu-west: failing, unavailable timeout\nus-east: passing"; got != want {
		t.Errorf("locations annotation %q, want %q", got, want)
	}
}
