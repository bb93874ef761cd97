package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// outboxGroups: PendingGroup gives a group's pending alerts, oldest first,
// due or not, with their group key, and when the group last had an alert
// delivered; nothing of another group, an ungrouped alert, or an alert no
// longer pending.
func outboxGroups(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	search := `default/slack{provider="search"}`
	mail := `default/slack{provider="mail"}`
	var ids []int64
	for i, key := range []string{search, mail, search, "", search} {
		rec := alertRun("op-group-"+string(rune('a'+i)), results.AlertFiring, time.Duration(i)*time.Second, results.DeliveryPending)
		rec.Result.Probe = "probe_" + string(rune('a'+i))
		rec.Alerts[0].Probe = rec.Result.Probe
		rec.Alerts[0].Receiver, rec.Alerts[0].GroupKey = "default/slack", key
		if i == 4 {
			// Put off: a group's alert is returned whether due or not.
			rec.Alerts[0].NextAttemptAt = t0.Add(48 * time.Hour)
		}
		recordRun(t, s, rec)
		ids = append(ids, rec.Alerts[0].ID)
	}
	group := func(key string) results.AlertGroup {
		t.Helper()
		g, err := s.PendingGroup(ctx, key)
		if err != nil {
			t.Fatalf("PendingGroup(%s): %v", key, err)
		}
		for _, a := range g.Alerts {
			if a.GroupKey != key || a.State != results.DeliveryPending {
				t.Errorf("PendingGroup(%s) gave alert %d of group %q, %s", key, a.ID, a.GroupKey, a.State)
			}
		}
		return g
	}
	alertIDs := func(g results.AlertGroup) []int64 {
		var out []int64
		for _, a := range g.Alerts {
			out = append(out, a.ID)
		}
		return out
	}

	g := group(search)
	if got, want := alertIDs(g), []int64{ids[0], ids[2], ids[4]}; !slices.Equal(got, want) {
		t.Errorf("search group: alerts %v, want %v", got, want)
	}
	if !g.LastDelivered.IsZero() {
		t.Errorf("search group: last delivered %v before any delivery, want zero", g.LastDelivered)
	}
	if got, want := alertIDs(group(mail)), []int64{ids[1]}; !slices.Equal(got, want) {
		t.Errorf("mail group: alerts %v, want %v", got, want)
	}
	if got := group(`routes[0]/webhook{provider="search"}`); len(got.Alerts) != 0 || !got.LastDelivered.IsZero() {
		t.Errorf("unknown group: %+v, want none", got)
	}

	first, second := t0.Add(3*time.Hour), t0.Add(4*time.Hour)
	if err := s.MarkAlertDelivered(ctx, ids[0], first); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkAlertDelivered(ctx, ids[2], second); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkAlertFailed(ctx, ids[1], 1, "x"); err != nil {
		t.Fatal(err)
	}
	g = group(search)
	if got, want := alertIDs(g), []int64{ids[4]}; !slices.Equal(got, want) {
		t.Errorf("search group after two deliveries: alerts %v, want %v", got, want)
	}
	if !g.LastDelivered.Equal(second) {
		t.Errorf("search group: last delivered %v, want the newest delivery %v", g.LastDelivered, second)
	}
	if g := group(mail); len(g.Alerts) != 0 || !g.LastDelivered.IsZero() {
		t.Errorf("mail group after its alert failed: %+v, want no alert and no delivery", g)
	}
	if _, err := s.PendingGroup(ctx, ""); err == nil {
		t.Errorf("PendingGroup(\"\") = nil error, want one: an ungrouped alert has no group")
	}
}
