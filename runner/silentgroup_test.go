package runner

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// TestDeciderSilentLocationOneMessage: a location dies under ten probes
// whose last runs there are spread over their interval, so the decider
// finds them silent over that interval; the decider's deliverer, on a
// route that does not group, sends one message listing the ten (not ten
// messages), and when the location records again one message listing
// their return.
func TestDeciderSilentLocationOneMessage(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(alertT0)
	db := &decisionDB{now: alertT0, epoch: 1, states: map[string]results.AlertState{}}
	locations := []string{"eu-west", "us-east", "ap-south"}
	cfg := &checks.Config{Notify: notifyOn(1, time.Hour, true, "unavailable")}
	for i := range 10 {
		cfg.Probes = append(cfg.Probes, &checks.Probe{Name: fmt.Sprintf("search_%02d", i), Interval: time.Minute, Locations: locations})
	}
	rc := NewRecorder(nil, cfg.Notify, RecorderOptions{Deliver: true, Clock: clock})
	rc.SetConfig(cfg, true)
	dc := &decider{store: db, states: db.AlertStates, rc: rc, config: func() *checks.Config { return cfg },
		fence: results.Fence{Location: results.DeciderLease, Epoch: 1}, logger: rc.logger,
		wake: func() {}, fenced: func() {}}

	outbox := newTestStore(t)
	sender := &fakeSender{}
	d := newDeliverer(outbox, sender, delivererOptions{Rand: fixedRand(0.5)})
	d.now = clock.Now
	d.silentGrouping = func() checks.Grouping { return silentGrouping(cfg) }

	// step moves 5 s on: probe i runs at second 5*i of each minute, from
	// ap-south too unless apDead; then a decider round, its alerts put in
	// the outbox, and a delivery pass.
	const step = 5 * time.Second
	elapsed := time.Duration(0)
	stepOnce := func(apDead bool) {
		t.Helper()
		db.advance(clock, step)
		elapsed += step
		for i, p := range cfg.Probes {
			if elapsed%time.Minute != time.Duration(i)*step {
				continue
			}
			db.ranProbe(p.Name, "eu-west", false)
			db.ranProbe(p.Name, "us-east", false)
			if !apDead {
				db.ranProbe(p.Name, "ap-south", false)
			}
		}
		before := len(db.since(0))
		if err := dc.round(ctx); err != nil {
			t.Fatalf("round: %v", err)
		}
		for _, a := range db.since(before) {
			a.ID = 0
			outbox.enqueue(a)
		}
		if !d.pass(ctx) {
			t.Fatal("pass: store failed")
		}
	}
	for range 12 { // a minute of every location recording
		stepOnce(false)
	}
	for range 12 * 5 { // ap-south dead for five minutes
		stepOnce(true)
	}
	if n := sender.callCount(); n != 0 {
		t.Errorf("%d single messages while ap-south was dead, want none", n)
	}
	groups := sender.sentGroups()
	if len(groups) != 1 {
		t.Fatalf("%d messages about ap-south dead, want one: %+v", len(groups), groups)
	}
	want := make([]string, 0, len(cfg.Probes))
	for _, p := range cfg.Probes {
		want = append(want, p.Name)
	}
	g := groups[0]
	got := groupProbes(g)
	slices.Sort(got)
	if !slices.Equal(got, want) || g.Labels[results.SilentLocationLabel] != "ap-south" || g.Key != `default/slack{__location="ap-south"}` {
		t.Fatalf("the message lists %v in group %q, want the ten probes in ap-south's group", got, g.Key)
	}
	for _, a := range g.Alerts {
		if a.Kind != results.AlertLocationSilent {
			t.Errorf("%s: %s in the message, want location_silent", a.Probe, a.Kind)
		}
	}

	for range 12 * 3 { // ap-south records again
		stepOnce(false)
	}
	groups = sender.sentGroups()
	if len(groups) != 2 || sender.callCount() != 0 {
		t.Fatalf("%d messages in all (%d single), want two: the silence and the return", len(groups), sender.callCount())
	}
	got = groupProbes(groups[1])
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the return lists %v, want the ten probes", got)
	}
	for _, a := range groups[1].Alerts {
		if a.Kind != results.AlertLocationBack {
			t.Errorf("%s: %s in the return, want location_back", a.Probe, a.Kind)
		}
	}
}

// TestSilentGrouping: a route that does not group waits for a location's
// probes the longest interval of the probes of several locations and a
// decider's round, at most maxSilentGroupWait; probes of one location do
// not count.
func TestSilentGrouping(t *testing.T) {
	two := []string{"a", "b"}
	tests := []struct {
		name   string
		probes []*checks.Probe
		want   time.Duration
	}{
		{"the longest interval", []*checks.Probe{{Interval: 30 * time.Second, Locations: two}, {Interval: 2 * time.Minute, Locations: two}, {Interval: time.Hour}}, 2*time.Minute + DecideEvery},
		{"a second", []*checks.Probe{{Interval: time.Second, Locations: two}}, time.Second + DecideEvery},
		{"no longer than the cap", []*checks.Probe{{Interval: time.Hour, Locations: two}}, maxSilentGroupWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := silentGrouping(&checks.Config{Probes: tt.probes})
			if g.GroupWait != tt.want || g.GroupInterval != tt.want || !g.Enabled() {
				t.Errorf("silentGrouping = %+v, want wait and interval %s", g, tt.want)
			}
		})
	}
}
