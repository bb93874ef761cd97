package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// recordDecision: a fleet-wide decision (SPEC §13) stores the probe's
// alert state and its alerts without a run, each alert with every
// location's view and the decider's name, all of it or nothing; a record
// that breaks the invariants is refused, permanently, writing nothing.
func recordDecision(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	ran := runAt("op-eu", "search", t0, results.Unavailable, results.CodeTimeout, 30, 1)
	ran.Location = "eu-west"
	recordRun(t, s, &results.RunRecord{Result: ran})

	views := []results.LocationView{
		{Location: "eu-west", Failing: true, Outcome: results.Unavailable, Code: results.CodeTimeout, LastRun: t0},
		{Location: "us-east", Failing: true, Outcome: results.Unavailable, Code: results.CodeServerError, LastRun: t0.Add(-time.Second)},
		{Location: "ap-south", Silent: true, Outcome: results.Pass, LastRun: t0.Add(-10 * time.Minute)},
	}
	a := results.NewAlert(results.AlertFiring, &ran, t0.Add(time.Second))
	a.Locations, a.Decider, a.Receiver, a.NextAttemptAt = views, results.DeciderLease, "default/slack", t0.Add(time.Second)
	a.FailingSince = t0
	st := results.AlertState{Probe: "search", Failing: true, Firing: true, FailingSince: t0,
		LastNotifiedAt: t0.Add(time.Second), Receivers: []string{"default/slack"}}
	rec := &results.DecisionRecord{Probe: "search", At: t0.Add(time.Second), AlertState: &st, Alerts: []results.Alert{a}}
	if err := s.RecordDecision(ctx, rec); err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	if rec.Alerts[0].ID == 0 {
		t.Error("RecordDecision left the alert without its ID")
	}
	states, err := s.AlertStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := states["search"]; !got.Firing || !got.Failing || !got.FailingSince.Equal(t0) || !reflect.DeepEqual(got.Receivers, st.Receivers) {
		t.Errorf("alert state after the decision: %+v, want %+v", got, st)
	}
	stored := storedAlerts(t, s)
	if len(stored) != 1 {
		t.Fatalf("stored alerts: %d, want 1", len(stored))
	}
	got := stored[0]
	if got.ID != rec.Alerts[0].ID || got.Kind != results.AlertFiring || got.Decider != results.DeciderLease || got.OperationID != "op-eu" {
		t.Errorf("stored alert: %+v", got)
	}
	if !reflect.DeepEqual(got.Locations, views) {
		t.Errorf("stored locations:\n%+v\nwant\n%+v", got.Locations, views)
	}

	// An alert of another probe: refused as a whole, the state unchanged.
	other := a
	other.Probe = "billing"
	changed := st
	changed.Firing = false
	bad := &results.DecisionRecord{Probe: "search", At: t0.Add(2 * time.Second), AlertState: &changed, Alerts: []results.Alert{other}}
	if err := s.RecordDecision(ctx, bad); err == nil || !permanent(err) {
		t.Errorf("RecordDecision with another probe's alert: %v, want a permanent refusal", err)
	}
	if states, err := s.AlertStates(ctx); err != nil || !states["search"].Firing {
		t.Errorf("a refused decision changed the alert state: %+v, %v", states["search"], err)
	}
	if n := len(storedAlerts(t, s)); n != 1 {
		t.Errorf("a refused decision stored alerts: %d, want 1", n)
	}
	// A decision fenced by a location's lease is not the decider's.
	located := &results.DecisionRecord{Probe: "search", At: t0, Fence: results.Fence{Location: "eu-west", Epoch: 1}}
	if err := s.RecordDecision(ctx, located); err == nil || !permanent(err) {
		t.Errorf("RecordDecision fenced by a location's lease: %v, want a permanent refusal", err)
	}
}

// silentLocations: the locations of a probe announced silent, each with
// when, are kept in its alert state (what a new decider reads so as not to
// announce one again), and a location_silent alert and its location_back
// end are stored as the decider made them; a state with none reads nil.
func silentLocations(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	ran := runAt("op-ap", "search", t0, results.Pass, "", 30, 1)
	ran.Location = "ap-south"
	recordRun(t, s, &results.RunRecord{Result: ran})

	at := t0.Add(5 * time.Minute)
	view := []results.LocationView{{Location: "ap-south", Silent: true, Outcome: results.Pass, LastRun: t0}}
	a := results.NewAlert(results.AlertLocationSilent, &ran, at)
	a.Locations, a.Decider, a.Receiver, a.NextAttemptAt = view, results.DeciderLease, "default/slack", at
	st := results.AlertState{Probe: "search", SilentLocations: map[string]time.Time{"ap-south": at, "us-east": at.Add(-time.Minute)}}
	if err := s.RecordDecision(ctx, &results.DecisionRecord{Probe: "search", At: at, AlertState: &st, Alerts: []results.Alert{a}}); err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	states, err := s.AlertStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := states["search"].SilentLocations; !reflect.DeepEqual(got, st.SilentLocations) {
		t.Errorf("silent locations read back: %v, want %v", got, st.SilentLocations)
	}
	stored := storedAlerts(t, s)
	if len(stored) != 1 || stored[0].Kind != results.AlertLocationSilent || !reflect.DeepEqual(stored[0].Locations, view) {
		t.Fatalf("stored alerts: %+v, want one location_silent with ap-south's view", stored)
	}

	back := results.NewAlert(results.AlertLocationBack, &ran, at.Add(time.Minute))
	back.Locations, back.Decider, back.Receiver, back.NextAttemptAt = []results.LocationView{{Location: "ap-south", Outcome: results.Pass, LastRun: at}}, results.DeciderLease, "default/slack", at.Add(time.Minute)
	none := results.AlertState{Probe: "search"}
	if err := s.RecordDecision(ctx, &results.DecisionRecord{Probe: "search", At: at.Add(time.Minute), AlertState: &none, Alerts: []results.Alert{back}}); err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	if states, err := s.AlertStates(ctx); err != nil || states["search"].SilentLocations != nil {
		t.Errorf("silent locations after none: %v, %v; want nil", states["search"].SilentLocations, err)
	}
	if stored := storedAlerts(t, s); len(stored) != 2 || stored[1].Kind != results.AlertLocationBack {
		t.Errorf("stored alerts: %+v, want location_silent then location_back", stored)
	}
}

// firingSilentLocations: FiringAlerts also returns, for each location a
// probe's alert state holds announced silent, the newest location_silent
// alert about it delivered to the receiver (what a new decider re-posts
// after a failover, SPEC §13): not one still pending, not one to another
// receiver, not one of a location no longer silent; and none once the
// location is back. The probe need not be firing.
func firingSilentLocations(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	ran := runAt("op-ap", "search", t0, results.Pass, "", 30, 1)
	ran.Location = "ap-south"
	recordRun(t, s, &results.RunRecord{Result: ran})
	at := t0.Add(5 * time.Minute)
	silent := func(loc, receiver string, when time.Time) results.Alert {
		a := results.NewAlert(results.AlertLocationSilent, &ran, when)
		a.Locations = []results.LocationView{{Location: loc, Silent: true, Outcome: results.Pass, LastRun: t0}}
		a.Decider, a.Receiver, a.NextAttemptAt = results.DeciderLease, receiver, when
		return a
	}
	// eu-west was silent once (its alert delivered, then back); ap-south
	// and us-east are silent now.
	old := results.AlertState{Probe: "search", SilentLocations: map[string]time.Time{"eu-west": t0}}
	if err := s.RecordDecision(ctx, &results.DecisionRecord{Probe: "search", At: t0, AlertState: &old,
		Alerts: []results.Alert{silent("eu-west", "default/alertmanager", t0)}}); err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	st := results.AlertState{Probe: "search", SilentLocations: map[string]time.Time{"ap-south": at, "us-east": at}}
	if err := s.RecordDecision(ctx, &results.DecisionRecord{Probe: "search", At: at, AlertState: &st, Alerts: []results.Alert{
		silent("ap-south", "default/alertmanager", at), silent("ap-south", "default/slack", at),
		silent("us-east", "default/alertmanager", at)}}); err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	stored := storedAlerts(t, s)
	if len(stored) != 4 {
		t.Fatalf("stored %d alerts, want 4", len(stored))
	}
	// Delivered: eu-west's, and ap-south's to both receivers; us-east's
	// is pending.
	for _, i := range []int{0, 1, 2} {
		if err := s.MarkAlertDelivered(ctx, stored[i].ID, at); err != nil {
			t.Fatal(err)
		}
	}
	located := func(as []results.Alert) []string {
		out := []string{}
		for _, a := range as {
			out = append(out, fmt.Sprintf("%s %s %s", a.Kind, a.SilentLocation(), a.Receiver))
		}
		return out
	}
	got, err := s.FiringAlerts(ctx, "default/alertmanager")
	if want := []string{"location_silent ap-south default/alertmanager"}; err != nil || !reflect.DeepEqual(located(got), want) {
		t.Errorf("FiringAlerts(default/alertmanager): %v, %v; want %v", located(got), err, want)
	}
	if err := s.MarkAlertDelivered(ctx, stored[3].ID, at); err != nil {
		t.Fatal(err)
	}
	got, err = s.FiringAlerts(ctx, "default/alertmanager")
	if want := []string{"location_silent ap-south default/alertmanager", "location_silent us-east default/alertmanager"}; err != nil || !reflect.DeepEqual(located(got), want) {
		t.Errorf("FiringAlerts(default/alertmanager), us-east's delivered too: %v, %v; want %v", located(got), err, want)
	}
	if len(got) > 0 && (got[0].ID != stored[1].ID || len(got[0].Locations) != 1 || !got[0].Locations[0].Silent) {
		t.Errorf("the alert read back: %+v, want ap-south's, whole", got[0])
	}

	// Both back: nothing to re-post.
	none := results.AlertState{Probe: "search"}
	if err := s.RecordDecision(ctx, &results.DecisionRecord{Probe: "search", At: at.Add(time.Minute), AlertState: &none}); err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	if got, err := s.FiringAlerts(ctx, "default/alertmanager"); err != nil || len(got) != 0 {
		t.Errorf("FiringAlerts with no location silent: %v, %v; want none", located(got), err)
	}
}
