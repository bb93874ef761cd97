package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

var testGrouping = checks.Grouping{GroupBy: []string{"provider"}, GroupWait: 30 * time.Second, GroupInterval: 5 * time.Minute}

// TestGroupDue: when a group's pending alerts go out, from what the store
// holds alone, so that a restart computes the same time.
func TestGroupDue(t *testing.T) {
	at := func(d time.Duration) time.Time { return alertT0.Add(d) }
	pending := func(created time.Duration) results.Alert { return results.Alert{CreatedAt: at(created)} }
	putOff := func(created, until time.Duration) results.Alert {
		return results.Alert{CreatedAt: at(created), NextAttemptAt: at(until)}
	}
	retried := func(created, next time.Duration, tries int) results.Alert {
		return results.Alert{CreatedAt: at(created), NextAttemptAt: at(next), DeliveryTries: tries}
	}
	tests := []struct {
		name   string
		alerts []results.Alert
		last   time.Time
		want   time.Time
	}{
		{"wait: a new group waits group_wait after its first alert", []results.Alert{pending(0)}, time.Time{}, at(30 * time.Second)},
		{"join: alerts joining within the wait do not delay it", []results.Alert{pending(0), pending(10 * time.Second), pending(29 * time.Second)}, time.Time{}, at(30 * time.Second)},
		{"join: the oldest counts whatever the order", []results.Alert{pending(20 * time.Second), pending(5 * time.Second)}, time.Time{}, at(35 * time.Second)},
		{"interval: an update waits group_interval after the last message", []results.Alert{pending(time.Minute)}, at(30 * time.Second), at(5*time.Minute + 30*time.Second)},
		{"leave: a resolve is an update like a join", []results.Alert{{Kind: results.AlertResolved, CreatedAt: at(2 * time.Minute)}}, at(30 * time.Second), at(5*time.Minute + 30*time.Second)},
		{"interval: a quiet group starts afresh with the wait", []results.Alert{pending(time.Hour)}, at(30 * time.Second), at(time.Hour + 30*time.Second)},
		{"interval: the later of wait and interval", []results.Alert{pending(5 * time.Minute)}, at(30 * time.Second), at(5*time.Minute + 30*time.Second)},
		{"restart: a put-off alert's time is no constraint of its own", []results.Alert{putOff(0, 2*time.Hour)}, time.Time{}, at(30 * time.Second)},
		{"retry: a failed attempt's back-off holds the group", []results.Alert{retried(0, 40*time.Second, 1), pending(35 * time.Second)}, time.Time{}, at(40 * time.Second)},
		{"retry: a back-off already past holds nothing", []results.Alert{retried(0, 10*time.Second, 1)}, time.Time{}, at(30 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := groupDue(tt.alerts, tt.last, testGrouping); !got.Equal(tt.want) {
				t.Errorf("groupDue = %s, want %s", got.Sub(alertT0), tt.want.Sub(alertT0))
			}
		})
	}
}

// TestAddressGroupKeys: an alert to a receiver whose route groups gets its
// group's key, unless it is a shape_drift; other receivers' go alone.
func TestAddressGroupKeys(t *testing.T) {
	groups := map[string]checks.Grouping{"default/slack": testGrouping}
	to := addressing{current: []string{"default/slack", "routes[0]/webhook"}, groups: groups}
	labels := map[string]string{"provider": "search", "team": "a"}
	in := []results.Alert{{Kind: results.AlertFiring, Probe: "p"}, {Kind: results.AlertDrift, Probe: "p"}}
	out, _ := address(in, to, labels, alertT0)
	got := map[string]string{}
	for _, a := range out {
		got[string(a.Kind)+" "+a.Receiver] = a.GroupKey
	}
	want := map[string]string{
		"firing default/slack":          `default/slack{provider="search"}`,
		"firing routes[0]/webhook":      "",
		"shape_drift default/slack":     "",
		"shape_drift routes[0]/webhook": "",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("group keys %v, want %v", got, want)
	}
}

// groupedAlert is a pending alert of probe in the search group.
func groupedAlert(probe string, kind results.AlertKind, at time.Time) results.Alert {
	a := testAlert(at)
	a.Probe, a.Kind, a.Receiver = probe, kind, "default/slack"
	a.Labels = map[string]string{"provider": "search"}
	a.GroupKey = results.GroupKey(a.Receiver, testGrouping.GroupBy, a.Labels)
	if kind == results.AlertResolved {
		a.Outcome, a.Code = results.Pass, ""
	}
	return a
}

// groupDeliverer is a deliverer of store whose every receiver groups as
// testGrouping says.
func groupDeliverer(store Outbox, sender Sender, clock interface{ Now() time.Time }) *deliverer {
	d := newDeliverer(store, sender, delivererOptions{Rand: fixedRand(0.5)})
	d.now = clock.Now
	d.grouping = func(string) checks.Grouping { return testGrouping }
	return d
}

func groupProbes(g results.AlertGroup) []string {
	var out []string
	for _, a := range g.Alerts {
		out = append(out, a.Probe)
	}
	return out
}

// TestDeliverGroup: twenty probes failing within group_wait make one
// message, sent group_wait after the first; resolves that follow make one
// update, group_interval after it; a deliverer started afresh in between
// (a restart) neither sends the group early nor twice. Every alert keeps
// its row, marked delivered with the others.
func TestDeliverGroup(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	sender := &fakeSender{}
	var ids []int64
	for i := range 20 {
		ids = append(ids, store.enqueue(groupedAlert(fmt.Sprintf("search_%02d", i), results.AlertFiring, alertT0.Add(time.Duration(i)*time.Second))))
	}
	alone := store.enqueue(testAlert(alertT0)) // no group: at once

	d := groupDeliverer(store, sender, clock)
	setClock(clock, alertT0.Add(20*time.Second))
	if !d.pass(ctx) {
		t.Fatal("pass: store failed")
	}
	if n := len(sender.sentGroups()); n != 0 {
		t.Fatalf("%d group messages before group_wait, want none", n)
	}
	if got := sender.callCount(); got != 1 || store.storedAlert(alone).State != results.DeliveryDelivered {
		t.Fatalf("the ungrouped alert: %d sends, state %s; want it sent alone at once", got, store.storedAlert(alone).State)
	}
	next, ok, err := store.NextAlertDue(ctx)
	if err != nil || !ok || !next.Equal(alertT0.Add(30*time.Second)) {
		t.Errorf("NextAlertDue = %v %v %v, want the group's due time %v: the waiting group must not keep the deliverer busy", next, ok, err, alertT0.Add(30*time.Second))
	}

	// A restart: a new deliverer on the same store.
	d = groupDeliverer(store, sender, clock)
	setClock(clock, alertT0.Add(29*time.Second))
	d.pass(ctx)
	if n := len(sender.sentGroups()); n != 0 {
		t.Fatalf("%d group messages after a restart before group_wait, want none", n)
	}
	setClock(clock, alertT0.Add(30*time.Second))
	d.pass(ctx)
	d.pass(ctx)
	groups := sender.sentGroups()
	if len(groups) != 1 || len(groups[0].Alerts) != 20 {
		t.Fatalf("messages: %d (first with %d alerts), want one listing all 20", len(groups), len(groups[0].Alerts))
	}
	if groups[0].Labels["provider"] != "search" || groups[0].Key != `default/slack{provider="search"}` {
		t.Errorf("group %q labels %v, want provider=search", groups[0].Key, groups[0].Labels)
	}
	for _, id := range ids {
		if a := store.storedAlert(id); a.State != results.DeliveryDelivered || a.DeliveryTries != 1 || !a.DeliveredAt.Equal(alertT0.Add(30*time.Second)) {
			t.Fatalf("alert %d: %s after %d tries at %v, want delivered with the group", id, a.State, a.DeliveryTries, a.DeliveredAt)
		}
	}

	// Three resolve a minute later: one update, group_interval after the
	// first message, even across another restart.
	for i := range 3 {
		store.enqueue(groupedAlert(fmt.Sprintf("search_%02d", i), results.AlertResolved, alertT0.Add(time.Minute+time.Duration(i)*time.Second)))
	}
	setClock(clock, alertT0.Add(2*time.Minute))
	d.pass(ctx)
	d = groupDeliverer(store, sender, clock)
	setClock(clock, alertT0.Add(5*time.Minute+29*time.Second))
	d.pass(ctx)
	if n := len(sender.sentGroups()); n != 1 {
		t.Fatalf("%d messages before group_interval passed, want still 1", n)
	}
	setClock(clock, alertT0.Add(5*time.Minute+30*time.Second))
	d.pass(ctx)
	groups = sender.sentGroups()
	if len(groups) != 2 {
		t.Fatalf("%d messages, want 2: the first and one update", len(groups))
	}
	if got, want := groupProbes(groups[1]), []string{"search_00", "search_01", "search_02"}; !slices.Equal(got, want) {
		t.Errorf("update lists %v, want the resolved %v", got, want)
	}
}

// TestDeliverGroupRetry: a failed group message is retried for all its
// alerts with the back-off, each alert counting its own tries; one refused
// for good fails them all.
func TestDeliverGroupRetry(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	sender := &fakeSender{groupReply: func(n int, g results.AlertGroup) (bool, time.Duration, error) {
		if n == 1 {
			return true, 0, errors.New("slack: HTTP 503")
		}
		return false, 0, nil
	}}
	a := store.enqueue(groupedAlert("search_a", results.AlertFiring, alertT0))
	b := store.enqueue(groupedAlert("search_b", results.AlertFiring, alertT0.Add(time.Second)))
	d := groupDeliverer(store, sender, clock)
	setClock(clock, alertT0.Add(30*time.Second))
	d.pass(ctx)
	next := time.Time{}
	for _, id := range []int64{a, b} {
		got := store.storedAlert(id)
		if got.State != results.DeliveryPending || got.DeliveryTries != 1 || got.LastError != "slack: HTTP 503" {
			t.Fatalf("alert %d after a failed message: %s, %d tries, %q; want pending after 1 try", id, got.State, got.DeliveryTries, got.LastError)
		}
		if !next.IsZero() && !got.NextAttemptAt.Equal(next) {
			t.Errorf("alerts of one group retry at %v and %v, want together", next, got.NextAttemptAt)
		}
		next = got.NextAttemptAt
	}
	if !next.After(clock.Now()) {
		t.Fatalf("retry at %v, not after the failure at %v", next, clock.Now())
	}
	// One joins while the group backs off; it waits for the retry.
	c := store.enqueue(groupedAlert("search_c", results.AlertFiring, alertT0.Add(30*time.Second)))
	d.pass(ctx)
	if n := len(sender.sentGroups()); n != 1 {
		t.Fatalf("%d messages: the joining alert broke the back-off", n)
	}
	setClock(clock, next)
	d.pass(ctx)
	groups := sender.sentGroups()
	if len(groups) != 2 || len(groups[1].Alerts) != 3 {
		t.Fatalf("%d messages, want the retry listing all 3", len(groups))
	}
	for id, tries := range map[int64]int{a: 2, b: 2, c: 1} {
		if got := store.storedAlert(id); got.State != results.DeliveryDelivered || got.DeliveryTries != tries {
			t.Errorf("alert %d: %s after %d tries, want delivered after %d", id, got.State, got.DeliveryTries, tries)
		}
	}

	refused := &fakeSender{groupReply: func(int, results.AlertGroup) (bool, time.Duration, error) {
		return false, 0, errors.New("slack: invalid_blocks")
	}}
	x := store.enqueue(groupedAlert("search_x", results.AlertFiring, clock.Now()))
	y := store.enqueue(groupedAlert("search_y", results.AlertFiring, clock.Now()))
	d = groupDeliverer(store, refused, clock)
	setClock(clock, clock.Now().Add(10*time.Minute))
	d.pass(ctx)
	for _, id := range []int64{x, y} {
		if got := store.storedAlert(id); got.State != results.DeliveryFailed {
			t.Errorf("alert %d of a refused message: %s, want failed", id, got.State)
		}
	}
}

// TestReloadAppliesGrouping: a reload that sets group_by gives the alerts
// recorded after it their group key, and the deliverer the route's timing;
// one that removes it makes alerts go alone again.
func TestReloadAppliesGrouping(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	labels := map[string]map[string]string{"search": {"provider": "search"}}
	plain := routedNotify()
	grouped := routedNotify()
	grouped.Grouping = testGrouping
	rc := NewRecorder(store, plain, RecorderOptions{Clock: clock, Deliver: true, Labels: labels})
	set := &receiverSet{}
	set.setGroups(plain)

	keys := func(code string) []string {
		t.Helper()
		clock.Advance(time.Minute)
		var out []string
		for _, a := range process(t, rc, pipelineRun(t, "search", clock.Now(), "", results.Code(code))) {
			out = append(out, a.GroupKey)
		}
		return out
	}
	if got := keys("timeout"); !slices.Equal(got, []string{""}) {
		t.Errorf("before the reload: group keys %q, want none", got)
	}
	if g := set.grouping("default/slack"); g.Enabled() {
		t.Errorf("before the reload: the receiver groups as %+v", g)
	}
	rc.SetConfig(&checks.Config{Notify: grouped, Probes: []*checks.Probe{{Name: "search", Labels: labels["search"]}}}, true)
	set.setGroups(grouped)
	if got := keys(""); !slices.Equal(got, []string{`default/slack{provider="search"}`}) {
		t.Errorf("after the reload: group keys %q, want the search group", got)
	}
	if g := set.grouping("default/slack"); g.GroupWait != testGrouping.GroupWait || !g.Enabled() {
		t.Errorf("after the reload: the receiver groups as %+v, want %+v", g, testGrouping)
	}
	rc.SetConfig(&checks.Config{Notify: plain, Probes: []*checks.Probe{{Name: "search", Labels: labels["search"]}}}, true)
	set.setGroups(plain)
	if got := keys("timeout"); !slices.Equal(got, []string{""}) {
		t.Errorf("after grouping was removed: group keys %q, want none", got)
	}
}
