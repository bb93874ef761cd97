package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// decisionDB is a fleet's store as the decider sees it: every location's
// runs, the alert states and alerts, and the decider's lease epoch, by
// which it fences decisions as results/postgres does.
type decisionDB struct {
	mu     sync.Mutex
	now    time.Time // the store's clock
	epoch  int64     // the epoch holding the decider's lease
	runs   []results.Result
	states map[string]results.AlertState
	alerts []results.Alert
	lastID int64
	n      int // runs recorded, for operation ids
	reads  int // NewestRuns calls
}

func (db *decisionDB) NewestRuns(_ context.Context, want []results.RunsFrom) ([][]results.Result, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.reads++
	out := make([][]results.Result, len(want))
	for i, w := range want {
		for j := len(db.runs) - 1; j >= 0 && len(out[i]) < w.Limit; j-- {
			if r := db.runs[j]; results.RunsKey(r) == (results.RunsFrom{Probe: w.Probe, Location: w.Location}) {
				out[i] = append(out[i], r)
			}
		}
	}
	return out, nil
}

func (db *decisionDB) RecordDecision(_ context.Context, rec *results.DecisionRecord) error {
	if err := rec.Validate(); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if rec.Fence.Epoch != db.epoch {
		return fmt.Errorf("%w: epoch %d, the lease is at %d", results.ErrFenced, rec.Fence.Epoch, db.epoch)
	}
	if rec.AlertState != nil {
		db.states[rec.Probe] = *rec.AlertState
	}
	for i := range rec.Alerts {
		db.lastID++
		rec.Alerts[i].ID = db.lastID
		db.alerts = append(db.alerts, rec.Alerts[i])
	}
	return nil
}

func (db *decisionDB) Fleet(context.Context) (results.Fleet, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return results.Fleet{Now: db.now}, nil
}

func (db *decisionDB) AlertStates(context.Context) (map[string]results.AlertState, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := make(map[string]results.AlertState, len(db.states))
	for k, v := range db.states {
		out[k] = v
	}
	return out, nil
}

// ran records a run of search from location at the store's clock: a
// timeout when failed, else a pass.
func (db *decisionDB) ran(location string, failed bool) { db.ranProbe("search", location, failed) }

// ranProbe is ran for any probe.
func (db *decisionDB) ranProbe(probe, location string, failed bool) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.n++
	r := results.Result{OperationID: fmt.Sprintf("op-%d", db.n), Probe: probe, Location: location,
		StartedAt: db.now, Outcome: results.Pass, Attempts: []results.Attempt{{Number: 1}}}
	if failed {
		r.Fail(results.NewError(results.CodeTimeout, "timed out"))
	}
	db.runs = append(db.runs, r)
}

// advance moves the store's clock (and the test's) by d.
func (db *decisionDB) advance(clock *clockwork.FakeClock, d time.Duration) {
	db.mu.Lock()
	db.now = db.now.Add(d)
	db.mu.Unlock()
	clock.Advance(d)
}

// since returns the alerts stored after the first n.
func (db *decisionDB) since(n int) []results.Alert {
	db.mu.Lock()
	defer db.mu.Unlock()
	return slices.Clone(db.alerts[n:])
}

// TestDeciderKOfNAndFailover: two of three locations failing page once,
// listing every location; a new decider after a failover neither repeats
// the page nor misses the resolve; a silent location neither resolves
// the outage nor counts as failing, and its return resolves it.
func TestDeciderKOfNAndFailover(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(alertT0)
	db := &decisionDB{now: alertT0, epoch: 1, states: map[string]results.AlertState{}}
	probe := &checks.Probe{Name: "search", Interval: time.Minute, Locations: []string{"eu-west", "us-east", "ap-south"}}
	cfg := &checks.Config{Probes: []*checks.Probe{probe}, Notify: notifyOn(1, time.Hour, true, "unavailable")}
	rc := NewRecorder(nil, cfg.Notify, RecorderOptions{Deliver: true, Clock: clock})
	rc.SetConfig(cfg, true)
	newDecider := func(epoch int64) (*decider, *int) {
		refused := new(int)
		return &decider{store: db, states: db.AlertStates, rc: rc, config: func() *checks.Config { return cfg },
			fence: results.Fence{Location: results.DeciderLease, Epoch: epoch}, logger: rc.logger,
			wake: func() {}, fenced: func() { *refused++ }}, refused
	}
	kinds := func(as []results.Alert) []results.AlertKind {
		var out []results.AlertKind
		for _, a := range as {
			out = append(out, a.Kind)
		}
		return out
	}
	// minute runs a round of the three locations (those not listed in
	// silent), failed as fail says, then a decision by dc, and returns
	// the alerts it stored.
	minute := func(dc *decider, eu, us, ap string) []results.Alert {
		t.Helper()
		db.advance(clock, time.Minute)
		for _, l := range []struct{ loc, outcome string }{{"eu-west", eu}, {"us-east", us}, {"ap-south", ap}} {
			if l.outcome != "silent" {
				db.ran(l.loc, l.outcome == "fail")
			}
		}
		before := len(db.since(0))
		if err := dc.round(ctx); err != nil {
			t.Fatalf("round: %v", err)
		}
		return db.since(before)
	}

	first, _ := newDecider(1)
	if got := minute(first, "fail", "pass", "pass"); len(got) != 0 {
		t.Fatalf("one location of three failing: %v, want no alert", kinds(got))
	}
	got := minute(first, "fail", "fail", "pass")
	if len(got) != 1 || got[0].Kind != results.AlertFiring {
		t.Fatalf("two of three failing: %v, want one firing alert", kinds(got))
	}
	a := got[0]
	if a.Decider != results.DeciderLease || a.Receiver != "default/slack" || a.State != results.DeliveryPending {
		t.Errorf("the firing alert: decider %q receiver %q state %q", a.Decider, a.Receiver, a.State)
	}
	wantViews := []struct {
		loc     string
		failing bool
	}{{"eu-west", true}, {"us-east", true}, {"ap-south", false}}
	if len(a.Locations) != 3 {
		t.Fatalf("the firing alert's locations: %+v, want three", a.Locations)
	}
	for i, w := range wantViews {
		if v := a.Locations[i]; v.Location != w.loc || v.Failing != w.failing || v.Silent {
			t.Errorf("location %d: %+v, want %s failing=%v", i, v, w.loc, w.failing)
		}
	}
	if got := minute(first, "fail", "fail", "pass"); len(got) != 0 {
		t.Errorf("still two of three, decided again: %v, want nothing new", kinds(got))
	}

	// Failover: another node takes the decider's lease.
	db.mu.Lock()
	db.epoch = 2
	db.mu.Unlock()
	db.advance(clock, time.Minute)
	db.ran("eu-west", true)
	db.ran("us-east", false)
	db.ran("ap-south", false)
	if err := first.round(ctx); !errors.Is(err, results.ErrFenced) {
		t.Errorf("the deposed decider's round: %v, want ErrFenced", err)
	}
	if n := len(db.since(1)); n != 0 {
		t.Errorf("the deposed decider stored %d alerts", n)
	}
	second, _ := newDecider(2)
	if got := minute(second, "fail", "fail", "pass"); len(got) != 0 {
		t.Errorf("the new decider, still two of three failing: %v, want no repeated page", kinds(got))
	}

	// ap-south goes silent and us-east recovers: one failing, one silent
	// could still be two: the outage is not resolved by a dead location.
	if got := minute(second, "fail", "fail", "silent"); len(got) != 0 {
		t.Errorf("ap-south silent for a minute: %v", kinds(got))
	}
	minute(second, "fail", "fail", "silent")
	got = minute(second, "fail", "pass", "silent")
	if !slices.Equal(kinds(got), []results.AlertKind{results.AlertLocationSilent}) {
		t.Errorf("one failing, one silent, one passing: %v, want no resolve, only ap-south's location_silent", kinds(got))
	}
	db.mu.Lock()
	st := db.states["search"]
	db.mu.Unlock()
	if !st.Firing {
		t.Errorf("the state after a silent location: %+v, want still firing", st)
	}
	got = minute(second, "fail", "pass", "pass")
	if !slices.Equal(kinds(got), []results.AlertKind{results.AlertResolved, results.AlertLocationBack}) {
		t.Fatalf("ap-south back and passing: %v, want one resolved alert and ap-south's location_back", kinds(got))
	}
	if v := got[0].Locations; len(v) != 3 || v[2].Silent || v[0].Failing != true {
		t.Errorf("the resolved alert's locations: %+v", v)
	}
}

// TestDeciderLocationSilent: a location of a passing probe that stops
// recording is announced once, location_silent, to the probe's route,
// and pages nobody; a new decider after a failover does not announce it
// again; its return is announced once, location_back.
func TestDeciderLocationSilent(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(alertT0)
	db := &decisionDB{now: alertT0, epoch: 1, states: map[string]results.AlertState{}}
	probe := &checks.Probe{Name: "search", Interval: time.Minute, Locations: []string{"eu-west", "us-east", "ap-south"}}
	cfg := &checks.Config{Probes: []*checks.Probe{probe}, Notify: notifyOn(1, time.Hour, true, "unavailable")}
	rc := NewRecorder(nil, cfg.Notify, RecorderOptions{Deliver: true, Clock: clock})
	rc.SetConfig(cfg, true)
	newDecider := func(epoch int64) *decider {
		return &decider{store: db, states: db.AlertStates, rc: rc, config: func() *checks.Config { return cfg },
			fence: results.Fence{Location: results.DeciderLease, Epoch: epoch}, logger: rc.logger,
			wake: func() {}, fenced: func() {}}
	}
	// minute runs eu-west and us-east, passing, and ap-south unless
	// apDead, then a round of dc; it returns the alerts stored.
	minute := func(dc *decider, apDead bool) []results.Alert {
		t.Helper()
		db.advance(clock, time.Minute)
		db.ran("eu-west", false)
		db.ran("us-east", false)
		if !apDead {
			db.ran("ap-south", false)
		}
		before := len(db.since(0))
		if err := dc.round(ctx); err != nil {
			t.Fatalf("round: %v", err)
		}
		return db.since(before)
	}

	first := newDecider(1)
	minute(first, false)
	var silent []results.Alert
	for range 4 { // silent after 2m10s without a run
		silent = append(silent, minute(first, true)...)
	}
	if len(silent) != 1 || silent[0].Kind != results.AlertLocationSilent {
		t.Fatalf("ap-south dead for four minutes: %v, want one location_silent and no firing", silent)
	}
	a := silent[0]
	if len(a.Locations) != 1 || a.Locations[0].Location != "ap-south" || !a.Locations[0].Silent ||
		a.Receiver != "default/slack" || a.State != results.DeliveryPending || a.Decider != results.DeciderLease {
		t.Errorf("the location_silent alert: %+v", a)
	}
	db.mu.Lock()
	st := db.states["search"]
	db.mu.Unlock()
	if st.IsFailing() || st.Firing || !st.SilentLocations["ap-south"].Equal(a.CreatedAt) {
		t.Errorf("the state with ap-south silent: %+v, want passing, ap-south announced at %v", st, a.CreatedAt)
	}

	// Failover while ap-south is still dead: the new decider reads what
	// was announced and says nothing again.
	db.mu.Lock()
	db.epoch = 2
	db.mu.Unlock()
	second := newDecider(2)
	for range 2 {
		if got := minute(second, true); len(got) != 0 {
			t.Errorf("the new decider, ap-south still silent: %+v, want no repeat", got)
		}
	}

	back := minute(second, false)
	if len(back) != 1 || back[0].Kind != results.AlertLocationBack || back[0].Locations[0].Location != "ap-south" || back[0].Locations[0].Silent {
		t.Fatalf("ap-south records again: %+v, want one location_back", back)
	}
	if got := minute(second, false); len(got) != 0 {
		t.Errorf("ap-south recording: %+v, want nothing more", got)
	}
	db.mu.Lock()
	st = db.states["search"]
	db.mu.Unlock()
	if st.SilentLocations != nil {
		t.Errorf("silent locations after ap-south's return: %v, want none", st.SilentLocations)
	}
}

// TestDeciderReadsOnceARound: a round reads every location's runs of
// every probe of several locations in one call to the store, and decides
// each probe from its own runs: search failing from two of three pages,
// billing failing from one does not, each alert showing its own probe's
// locations.
func TestDeciderReadsOnceARound(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(alertT0)
	db := &decisionDB{now: alertT0, epoch: 1, states: map[string]results.AlertState{}}
	locations := []string{"eu-west", "us-east", "ap-south"}
	cfg := &checks.Config{Probes: []*checks.Probe{
		{Name: "search", Interval: time.Minute, Locations: locations},
		{Name: "solo", Interval: time.Minute, Locations: []string{"eu-west"}},
		{Name: "billing", Interval: time.Minute, Locations: []string{"us-east", "ap-south", "eu-west"}},
	}, Notify: notifyOn(1, time.Hour, true, "unavailable")}
	rc := NewRecorder(nil, cfg.Notify, RecorderOptions{Deliver: true, Clock: clock})
	rc.SetConfig(cfg, true)
	dc := &decider{store: db, states: db.AlertStates, rc: rc, config: func() *checks.Config { return cfg },
		fence: results.Fence{Location: results.DeciderLease, Epoch: 1}, logger: rc.logger,
		wake: func() {}, fenced: func() {}}
	db.advance(clock, time.Minute)
	for _, l := range locations {
		db.ranProbe("search", l, l != "ap-south")
		db.ranProbe("billing", l, l == "eu-west")
	}
	if err := dc.round(ctx); err != nil {
		t.Fatal(err)
	}
	if db.reads != 1 {
		t.Errorf("one round read the store's runs %d times, want once", db.reads)
	}
	got := db.since(0)
	if len(got) != 1 || got[0].Probe != "search" || got[0].Kind != results.AlertFiring {
		t.Fatalf("alerts: %+v, want one firing about search", got)
	}
	var views []string
	for _, v := range got[0].Locations {
		views = append(views, fmt.Sprintf("%s=%v", v.Location, v.Failing))
	}
	if want := "eu-west=true us-east=true ap-south=false"; strings.Join(views, " ") != want {
		t.Errorf("search's locations: %s, want %s", strings.Join(views, " "), want)
	}
}
