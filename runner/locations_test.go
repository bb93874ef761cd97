package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// locationsConfig is a config of three failing probes: one run from
// eu-west, one from us-east, one from both.
func locationsConfig(t *testing.T, url string) *checks.Config {
	eu := schedProbe(t, "eu-only", url, 5*time.Second)
	eu.Locations = []string{"eu-west"}
	us := schedProbe(t, "us-only", url, 5*time.Second)
	us.Locations = []string{"us-east"}
	both := schedProbe(t, "both", url, 5*time.Second)
	both.Locations = []string{"eu-west", "us-east"}
	cfg := schedConfig(4, eu, us, both)
	cfg.Notify.On = []string{"unavailable", "contract_error"}
	return cfg
}

// at puts a fleet node in location.
func at(location string) func(*Deps) {
	return func(d *Deps) { d.Fleet.Location = location }
}

// TestFleetLocationsRunTheirProbes: two locations of one instance each on
// one store. Each leads its own location's lease and runs exactly the
// probes that run from it, each run recording its location; a probe of
// one location alerts (its state decided by that location's leader), and
// a probe of both alerts from neither (its decision is the fleet's, not a location's) and
// gets no alert state.
func TestFleetLocationsRunTheirProbes(t *testing.T) {
	schedCheckLeaks(t)
	url := jsonBody(500, `{"error":"down"}`)(t)
	ft := newFleetTest(t)
	eu := ft.node("eu", locationsConfig(t, url), at("eu-west"))
	us := ft.node("us", locationsConfig(t, url), at("us-east"))
	eu.run()
	us.run()
	eu.leading(true)
	us.leading(true)
	const timers = 2 + 2 + 2 // two electors, two probes each
	for range 3 {
		eu.idle()
		us.idle()
		ft.step(5*time.Second, timers)
	}
	// The outbox is the store's, one for the fleet: each location's leader
	// drains it, and each alert is delivered once, by whichever claims it.
	sent := func() []string {
		var out []string
		for _, a := range append(eu.sender.alerts(), us.sender.alerts()...) {
			out = append(out, a.Probe)
		}
		slices.Sort(out)
		return out
	}
	eu.eventually("both alerts", func() bool { return len(sent()) >= 2 })
	eu.waitRuns("both", 2)

	ctx := context.Background()
	ranFrom := func(probe string) map[string]int {
		rs, err := ft.db.faultStore.RecordedRuns(ctx, probe)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, r := range rs {
			out[r.Node+"@"+r.RanFrom()]++
		}
		return out
	}
	for probe, want := range map[string][]string{
		"eu-only": {"eu@eu-west"},
		"us-only": {"us@us-east"},
		"both":    {"eu@eu-west", "us@us-east"},
	} {
		got := ranFrom(probe)
		if len(got) != len(want) {
			t.Errorf("%s ran from %v, want only %v", probe, got, want)
		}
		for _, w := range want {
			if got[w] < 2 {
				t.Errorf("%s ran from %v, want several runs by %s", probe, got, w)
			}
		}
	}
	time.Sleep(50 * time.Millisecond)
	if got := sent(); !slices.Equal(got, []string{"eu-only", "us-only"}) {
		t.Errorf("alerts sent %v, want eu-only's and us-only's, once each", got)
	}
	states := ft.db.states()
	if _, ok := states["both"]; ok {
		t.Errorf("alert states %v: a location decided about a probe of two", states)
	}
	if !states["eu-only"].Firing || !states["us-only"].Firing {
		t.Errorf("alert states %v, want eu-only and us-only firing", states)
	}
	if r := eu.d.Role(); r.Location != "eu-west" || !r.Leading || r.Idle {
		t.Errorf("eu's role %+v, want leading eu-west", r)
	}
}

// TestLocationWithoutProbesRunsNothing: an instance whose location no
// probe runs from schedules nothing, says so in its log and in its Role,
// and a reload that gives it a probe makes it run that one.
func TestLocationWithoutProbesRunsNothing(t *testing.T) {
	schedCheckLeaks(t)
	p := schedServe(t, nil, false)
	cfg := schedConfig(4, schedProbe(t, "search", p.URL, 5*time.Second))
	cfg.Probes[0].Locations = []string{"eu-west", "us-east"}
	cfg.Fleet.Location = "ap-south"
	h := schedNew(t, cfg, nil)
	h.run()
	h.eventually("the warning", func() bool {
		return len(h.logs.records("locations: no probe runs from this instance's location; it runs nothing")) == 1
	})
	rec := h.logs.records("locations: no probe runs from this instance's location; it runs nothing")[0]
	if rec["location"] != "ap-south" {
		t.Errorf("warning %v, want it to name ap-south", rec)
	}
	if r := h.d.Role(); !r.Idle || r.Location != "ap-south" {
		t.Errorf("Role %+v, want idle in ap-south", r)
	}
	for range 3 {
		h.clock.Advance(5 * time.Second)
		time.Sleep(5 * time.Millisecond)
	}
	if n := p.requests.Load(); n != 0 {
		t.Errorf("the provider was called %d times; the instance must run nothing", n)
	}

	next := schedConfig(4, schedProbe(t, "search", p.URL, 5*time.Second))
	next.Probes[0].Locations = []string{"eu-west", "ap-south"}
	next.Fleet.Location = "ap-south"
	if err := h.d.Reload(next); err != nil {
		t.Fatal(err)
	}
	h.tick(1, 5*time.Second)
	runs := h.waitRuns("search", 1)
	if got := runs[0].Location; got != "ap-south" {
		t.Errorf("the run's location %q, want ap-south", got)
	}
	if r := h.d.Role(); r.Idle {
		t.Errorf("Role %+v after the reload, want not idle", r)
	}
}

// TestSingleInstanceRecordsDefaultLocation: a single instance of today's
// config runs every probe and records its runs as from the default
// location, stored as "".
func TestSingleInstanceRecordsDefaultLocation(t *testing.T) {
	schedCheckLeaks(t)
	p := schedServe(t, nil, false)
	h := schedNew(t, schedConfig(4, schedProbe(t, "search", p.URL, 5*time.Second)), nil)
	h.run()
	h.tick(1, 5*time.Second)
	runs := h.waitRuns("search", 1)
	if r := runs[0]; r.Location != "" || r.RanFrom() != results.DefaultLocation {
		t.Errorf("location %q (ran from %q), want the default", r.Location, r.RanFrom())
	}
	if r := h.d.Role(); r.Idle || r.Location != results.DefaultLocation || !slices.Equal(h.d.probeNames(h.d.cfg), []string{"search"}) {
		t.Errorf("Role %+v, probes %v; want the default location running search", r, h.d.probeNames(h.d.cfg))
	}
}
