package alertmanager

import (
	"context"
	"testing"
	"time"

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

// TestPostsLocationSilent: a location_silent alert is posted as
// ToolpulseLocationSilent with the location as a label, stays active
// beside the probe's own firing alert without ending it, and is ended by
// its location_back, which leaves the probe's alert active.
func TestPostsLocationSilent(t *testing.T) {
	srv, got := fakeAM(t, respond(200, ""))
	now := t0
	n, err := New(Config{URL: srv.URL, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	silent := firing()
	silent.Kind, silent.Outcome, silent.Code, silent.Message = results.AlertLocationSilent, results.Pass, "", ""
	silent.Locations = []results.LocationView{{Location: "ap-south", Silent: true, Outcome: results.Pass, LastRun: t0}}
	back := silent
	back.Kind, back.Locations = results.AlertLocationBack, []results.LocationView{{Location: "ap-south", Outcome: results.Pass, LastRun: t0}}
	var posts [][]postable
	for _, a := range []results.Alert{firing(), silent, back} {
		now = now.Add(time.Minute)
		if _, _, err := n.Send(context.Background(), a); err != nil {
			t.Fatalf("%s: %v", a.Kind, err)
		}
		posts = append(posts, decode(t, <-got))
	}
	p := posts[1]
	if len(p) != 1 || p[0].Labels["alertname"] != AlertNameLocationSilent || p[0].Labels["location"] != "ap-south" ||
		p[0].Labels["outcome"] != "" || !p[0].EndsAt.After(now.Add(-time.Minute)) {
		t.Errorf("location_silent post %+v, want one active ToolpulseLocationSilent of ap-south alone", p)
	}
	e := posts[2]
	if len(e) != 1 || e[0].Labels["alertname"] != AlertNameLocationSilent || !e[0].EndsAt.Equal(now) {
		t.Errorf("location_back post %+v, want the location_silent alert ended", e)
	}
	if _, ok := n.active[silent.Probe]; !ok || len(n.active) != 1 {
		t.Errorf("active after location_back: %v, want the probe's firing alert alone", n.active)
	}
}
