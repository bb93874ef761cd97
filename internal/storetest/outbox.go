package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// outboxLifecycle takes alerts through every delivery state: pending,
// retried later, delivered; failed; and skipped, which is never due. An
// outcome is recorded once, and only for a pending alert.
func outboxLifecycle(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	if _, ok := nextDue(t, s); ok {
		t.Fatal("NextAlertDue of an empty outbox: got true")
	}

	firing := alertRun("op-1", results.AlertFiring, 0, results.DeliveryPending)
	reminder := alertRun("op-2", results.AlertReminder, time.Minute, results.DeliveryPending)
	skipped := alertRun("op-3", results.AlertFiring, 0, results.DeliverySkipped)
	for _, rec := range []*results.RunRecord{firing, reminder, skipped} {
		recordRun(t, s, rec)
	}
	a, b, c := firing.Alerts[0], reminder.Alerts[0], skipped.Alerts[0]
	start := a.CreatedAt
	farFuture := start.Add(365 * 24 * time.Hour)

	if got, want := dueIDs(t, s, farFuture, 10), []int64{a.ID, b.ID}; !reflect.DeepEqual(got, want) {
		t.Fatalf("due at first: got %v, want %v (the skipped alert %d is never due)", got, want, c.ID)
	}
	// Never tried: due from its creation.
	if at, ok := nextDue(t, s); !ok || !at.Equal(start) {
		t.Errorf("NextAlertDue: got %v %v, want %v true", at, ok, start)
	}

	// The first delivery of a fails: it is due again a minute later, not before.
	retryAt := start.Add(time.Minute + 30*time.Second)
	if err := s.MarkAlertRetry(ctx, a.ID, 1, retryAt, "slack: HTTP 503"); err != nil {
		t.Fatal(err)
	}
	if got, want := dueIDs(t, s, retryAt.Add(-time.Millisecond), 10), []int64{b.ID}; !reflect.DeepEqual(got, want) {
		t.Errorf("due just before the retry time: got %v, want %v", got, want)
	}
	if at, ok := nextDue(t, s); !ok || !at.Equal(b.CreatedAt) {
		t.Errorf("NextAlertDue with b never tried: got %v %v, want %v", at, ok, b.CreatedAt)
	}
	due, err := s.DueAlerts(ctx, retryAt, 10)
	if err != nil {
		t.Fatal(err)
	}
	wantA := a
	wantA.DeliveryTries, wantA.NextAttemptAt, wantA.LastError = 1, retryAt, "slack: HTTP 503"
	if len(due) != 2 || !reflect.DeepEqual(due[0], wantA) || due[1].ID != b.ID {
		t.Fatalf("due at the retry time: got %+v, want %+v first, then alert %d", due, wantA, b.ID)
	}

	// b gives up; a goes through on its second try.
	if err := s.MarkAlertFailed(ctx, b.ID, 1, "slack: channel_not_found"); err != nil {
		t.Fatal(err)
	}
	if at, ok := nextDue(t, s); !ok || !at.Equal(retryAt) {
		t.Errorf("NextAlertDue with only a pending: got %v %v, want %v", at, ok, retryAt)
	}
	deliveredAt := retryAt.Add(120 * time.Millisecond)
	if err := s.MarkAlertDelivered(ctx, a.ID, deliveredAt); err != nil {
		t.Fatal(err)
	}
	if got := dueIDs(t, s, farFuture, 10); len(got) != 0 {
		t.Errorf("due after delivery and failure: got %v, want none", got)
	}
	if at, ok := nextDue(t, s); ok {
		t.Errorf("NextAlertDue with nothing pending: got %v true", at)
	}

	// Delivered counts the try that succeeded and keeps the last error;
	// delivered and failed have no next attempt.
	wantA.State, wantA.DeliveryTries, wantA.NextAttemptAt, wantA.DeliveredAt = results.DeliveryDelivered, 2, time.Time{}, deliveredAt
	wantB := b
	wantB.State, wantB.DeliveryTries, wantB.LastError = results.DeliveryFailed, 1, "slack: channel_not_found"
	want := []results.Alert{wantA, wantB, c}
	if got := storedAlerts(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("stored alerts:\n got  %+v\n want %+v", got, want)
	}

	for name, mark := range map[string]func(id int64) error{
		"delivered": func(id int64) error { return s.MarkAlertDelivered(ctx, id, farFuture) },
		"retry":     func(id int64) error { return s.MarkAlertRetry(ctx, id, 3, farFuture, "x") },
		"failed":    func(id int64) error { return s.MarkAlertFailed(ctx, id, 3, "x") },
	} {
		for _, id := range []int64{a.ID, b.ID, c.ID, 999} {
			if err := mark(id); !errors.Is(err, impl.ErrNotFound) {
				t.Errorf("mark %s of alert %d: got %v, want ErrNotFound", name, id, err)
			}
		}
	}
	if got := storedAlerts(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("stored alerts changed by refused marks:\n got  %+v\n want %+v", got, want)
	}
}

// outboxRefusesNonsense: a mark without a time or with negative tries is
// refused and changes nothing.
func outboxRefusesNonsense(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	rec := alertRun("op-1", results.AlertFiring, 0, results.DeliveryPending)
	recordRun(t, s, rec)
	id := rec.Alerts[0].ID
	for name, err := range map[string]error{
		"delivered at zero": s.MarkAlertDelivered(ctx, id, time.Time{}),
		"retry at zero":     s.MarkAlertRetry(ctx, id, 1, time.Time{}, "x"),
		"negative tries":    s.MarkAlertRetry(ctx, id, -1, t0, "x"),
		"failed negative":   s.MarkAlertFailed(ctx, id, -1, "x"),
	} {
		if err == nil {
			t.Errorf("%s: got nil error", name)
		}
	}
	if got := dueIDs(t, s, t0, 10); !reflect.DeepEqual(got, []int64{id}) {
		t.Errorf("due after refused marks: got %v, want [%d]", got, id)
	}
	if got := storedAlerts(t, s); !reflect.DeepEqual(got, rec.Alerts) {
		t.Errorf("stored alerts after refused marks:\n got  %+v\n want %+v", got, rec.Alerts)
	}
}

// outboxDueOrderAndLimit records alerts out of order and checks that the
// oldest due ones come first, ties in recording order; that an alert never
// tried is due whatever the time, one with a next attempt only from then
// on; and that limit caps the batch.
func outboxDueOrderAndLimit(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	ids := map[string]int64{}
	// Runs start at t0+2m; created is counted from there.
	for _, c := range []struct {
		name    string
		created time.Duration
		next    time.Time // recorded with a next attempt; zero: none
	}{
		{"3m", 3 * time.Minute, time.Time{}},
		{"1m", time.Minute, time.Time{}},
		{"2m-a", 2 * time.Minute, t0.Add(3 * time.Minute)},
		{"10m", 10 * time.Minute, time.Time{}},
		{"2m-b", 2 * time.Minute, time.Time{}},
		{"retrying", 0, time.Time{}},
		{"deferred", 30 * time.Second, t0.Add(time.Hour + 2*time.Minute)},
	} {
		rec := alertRun("op-"+c.name, results.AlertFiring, c.created, results.DeliveryPending)
		rec.Alerts[0].NextAttemptAt = c.next
		recordRun(t, s, rec)
		ids[c.name] = rec.Alerts[0].ID
	}
	// The oldest alert failed its first delivery and is due again 5 minutes
	// after it was made.
	now := t0.Add(2*time.Minute + 5*time.Minute)
	if err := s.MarkAlertRetry(ctx, ids["retrying"], 1, now, "HTTP 503"); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		now   time.Time
		limit int
		want  []string
	}{
		{now, 10, []string{"retrying", "1m", "2m-a", "2m-b", "3m", "10m"}},
		{now.Add(-time.Millisecond), 10, []string{"1m", "2m-a", "2m-b", "3m", "10m"}},
		{now.Add(-time.Millisecond), 2, []string{"1m", "2m-a"}},
		{now.Add(-time.Millisecond), 1, []string{"1m"}},
		{now.Add(-time.Millisecond), 0, []string{}},
		{now.Add(-time.Millisecond), -1, []string{}},
		{now.Add(time.Hour), 100, []string{"retrying", "deferred", "1m", "2m-a", "2m-b", "3m", "10m"}},
		{t0, 100, []string{"1m", "2m-b", "3m", "10m"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.now.Sub(t0), tt.limit), func(t *testing.T) {
			want := []int64{}
			for _, name := range tt.want {
				want = append(want, ids[name])
			}
			if got := dueIDs(t, s, tt.now, tt.limit); !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v (%v)", got, want, tt.want)
			}
		})
	}
	// The earliest due is t0+3m: the creation of 1m, never tried, and the
	// next attempt of 2m-a; an alert with a next attempt is due then, not
	// at its creation.
	if at, ok := nextDue(t, s); !ok || !at.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("NextAlertDue: got %v %v, want %v true", at, ok, t0.Add(3*time.Minute))
	}
}

// outboxModes: an update alert keeps the mode it replaces and a resolved
// alert the modes of the failure, as the receiver renders them, and the
// alert state keeps the streak's modes: all of it survives a restart.
func outboxModes(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	timeout := results.Mode{Outcome: results.Unavailable, Code: results.CodeTimeout}
	contract := results.Mode{Outcome: results.ContractError, Code: results.CodeRuleError}

	up := alertRun("op-update", results.AlertUpdate, time.Minute, results.DeliveryPending)
	up.Alerts[0].Previous = contract
	up.AlertState = &results.AlertState{Probe: up.Result.Probe, ConsecutiveFailures: 2,
		FailingSince: up.Result.StartedAt.Add(-time.Minute), Firing: true, LastNotifiedAt: up.Result.StartedAt,
		Notified: timeout, Modes: []results.Mode{contract, timeout}, Announced: []results.Mode{contract, timeout}}
	recordRun(t, s, up)
	res := alertRun("op-resolved", results.AlertResolved, 2*time.Minute, results.DeliveryPending)
	res.Alerts[0].Modes = []results.Mode{contract, timeout}
	recordRun(t, s, res)

	due, err := s.DueAlerts(ctx, up.Result.StartedAt.Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 2 {
		t.Fatalf("DueAlerts: %d alerts, want the update and the resolved", len(due))
	}
	for _, a := range due {
		switch a.Kind {
		case results.AlertUpdate:
			if a.Previous != contract || a.Modes != nil {
				t.Errorf("update read back with previous %v and modes %v, want previous %v and no modes", a.Previous, a.Modes, contract)
			}
		case results.AlertResolved:
			if !reflect.DeepEqual(a.Modes, []results.Mode{contract, timeout}) || a.Previous != (results.Mode{}) {
				t.Errorf("resolved read back with modes %v and previous %v, want modes %v", a.Modes, a.Previous, []results.Mode{contract, timeout})
			}
		default:
			t.Errorf("unexpected %s alert", a.Kind)
		}
	}
	states, err := s.AlertStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := states[up.Result.Probe]; !reflect.DeepEqual(got.Modes, up.AlertState.Modes) ||
		!reflect.DeepEqual(got.Announced, up.AlertState.Announced) || got.Notified != timeout {
		t.Errorf("alert state read back as %+v, want the modes of %+v", got, *up.AlertState)
	}
}

// outboxLatest: the newest alert of each probe, whatever its state, as
// the status page shows it; a probe without alerts is absent.
func outboxLatest(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	first := alertRun("op-1", results.AlertFiring, time.Minute, results.DeliveryPending)
	recordRun(t, s, first)
	second := alertRun("op-2", results.AlertReminder, 2*time.Minute, results.DeliveryPending)
	recordRun(t, s, second)
	other := alertRun("op-3", results.AlertResolved, 3*time.Minute, results.DeliveryPending)
	other.Result.Probe, other.Alerts[0].Probe = "tracker", "tracker"
	recordRun(t, s, other)
	if err := s.MarkAlertFailed(ctx, second.Alerts[0].ID, 3, "HTTP 404 channel_not_found"); err != nil {
		t.Fatal(err)
	}
	got, err := s.LatestAlerts(ctx, []string{first.Result.Probe, other.Result.Probe, "never_alerted"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("LatestAlerts: %d probes, want the two that have alerts: %+v", len(got), got)
	}
	if a := got[first.Result.Probe]; a.ID != second.Alerts[0].ID || a.State != results.DeliveryFailed ||
		a.LastError != "HTTP 404 channel_not_found" || a.DeliveryTries != 3 {
		t.Errorf("latest alert of %s = %+v, want the failed reminder %d", first.Result.Probe, a, second.Alerts[0].ID)
	}
	if a := got[other.Result.Probe]; a.ID != other.Alerts[0].ID || a.Kind != results.AlertResolved {
		t.Errorf("latest alert of %s = %+v, want the resolved %d", other.Result.Probe, a, other.Alerts[0].ID)
	}
}

// outboxReceivers: an alert keeps the receiver it is for and the probe's
// labels, so that a restart delivers each to its own receiver with the
// labels the receiver shows; one run may carry an alert per receiver.
func outboxReceivers(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	rec := alertRun("op-routed", results.AlertFiring, 0, results.DeliveryPending)
	labels := map[string]string{"team": "search", "tier": "gold"}
	slack := rec.Alerts[0]
	slack.Receiver, slack.Labels = "routes[0]/slack", labels
	hook := slack
	hook.Receiver = "routes[0]/webhook"
	bare := rec.Alerts[0]
	bare.State = results.DeliverySkipped
	rec.Alerts = []results.Alert{slack, hook, bare}
	recordRun(t, s, rec)

	all, err := s.Alerts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Fatalf("Alerts: %d, want 3", len(all))
	}
	got := map[int64]results.Alert{}
	for _, a := range all {
		got[a.ID] = a
	}
	for i, want := range []struct {
		receiver string
		labels   map[string]string
	}{{"routes[0]/slack", labels}, {"routes[0]/webhook", labels}, {"", nil}} {
		a, ok := got[rec.Alerts[i].ID]
		if !ok {
			t.Fatalf("alert %d (id %d) not read back", i, rec.Alerts[i].ID)
		}
		if a.Receiver != want.receiver || !reflect.DeepEqual(a.Labels, want.labels) {
			t.Errorf("alert %d read back with receiver %q and labels %v, want %q and %v",
				i, a.Receiver, a.Labels, want.receiver, want.labels)
		}
	}
}

// outboxFiring: FiringAlerts gives, for each probe still firing, the
// newest alert of its failure that reached the receiver: not one that is
// pending or failed, not one for another receiver or of an earlier
// failure, and nothing for a probe that passes again.
func outboxFiring(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	const am, other = "routes[0]/alertmanager", "default/slack"
	t0 := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
	// run records one alert of kind for receiver at t0+at, in a failure
	// that started at t0+since, with the probe's state firing or not.
	run := func(id, probe string, at, since time.Duration, kind results.AlertKind, receiver string, firing bool) results.Alert {
		r := runAt(id, probe, t0.Add(at), results.Unavailable, results.CodeTimeout, 10, 1)
		a := results.NewAlert(kind, &r, r.StartedAt)
		a.FailingSince, a.Receiver, a.State = t0.Add(since), receiver, results.DeliveryPending
		st := &results.AlertState{Probe: probe, ConsecutiveFailures: 1, FailingSince: t0.Add(since), Firing: firing,
			LastNotifiedAt: r.StartedAt}
		if !firing {
			st = &results.AlertState{Probe: probe}
		}
		rec := &results.RunRecord{Result: r, AlertState: st, Alerts: []results.Alert{a}}
		recordRun(t, s, rec)
		return rec.Alerts[0]
	}
	deliver := func(a results.Alert) {
		if err := s.MarkAlertDelivered(ctx, a.ID, a.CreatedAt.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// search: an earlier failure, then this one's firing and update, both
	// delivered, and a reminder still pending.
	deliver(run("s1", "search", 0, 0, results.AlertFiring, am, true))
	deliver(run("s2", "search", 2*time.Hour, 2*time.Hour, results.AlertFiring, am, true))
	update := run("s3", "search", 3*time.Hour, 2*time.Hour, results.AlertUpdate, am, true)
	deliver(update)
	run("s4", "search", 4*time.Hour, 2*time.Hour, results.AlertReminder, am, true)
	// tracker: firing, told only to another receiver.
	deliver(run("t1", "tracker", time.Hour, time.Hour, results.AlertFiring, other, true))
	// weather: told, then passing again.
	deliver(run("w1", "weather", time.Hour, time.Hour, results.AlertFiring, am, true))
	run("w2", "weather", 2*time.Hour, 0, results.AlertResolved, am, false)
	// billing: firing, its only alert failed.
	failed := run("b1", "billing", time.Hour, time.Hour, results.AlertFiring, am, true)
	if err := s.MarkAlertFailed(ctx, failed.ID, 3, "HTTP 400"); err != nil {
		t.Fatal(err)
	}
	// refunds: firing, told.
	refunds := run("r1", "refunds", 5*time.Hour, 5*time.Hour, results.AlertFiring, am, true)
	deliver(refunds)

	got, err := s.FiringAlerts(ctx, am)
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, a := range got {
		summary = append(summary, fmt.Sprintf("%s %s %d %s", a.Probe, a.Kind, a.ID, a.Receiver))
	}
	want := []string{
		fmt.Sprintf("search update %d %s", update.ID, am),
		fmt.Sprintf("refunds firing %d %s", refunds.ID, am),
	}
	if fmt.Sprint(summary) != fmt.Sprint(want) {
		t.Errorf("FiringAlerts(%s):\n got  %v\n want %v", am, summary, want)
	}
	if got, err := s.FiringAlerts(ctx, "routes[9]/alertmanager"); err != nil || len(got) != 0 {
		t.Errorf("FiringAlerts of a receiver never told: %v, %v; want none", got, err)
	}
}

// outboxContext: what an alert tells on-call beyond the run's verdict
// (what was called, the start of the body, whether a drift came with the
// resolving run) is read back as the outbox will deliver it; an alert
// without them reads back without them.
func outboxContext(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	firing := alertRun("op-firing", results.AlertFiring, 0, results.DeliveryPending)
	firing.Alerts[0].Target = "POST https://search.example.com/v1/search"
	firing.Alerts[0].ResponseExcerpt = "index rebuilding, retry in 120s"
	recordRun(t, s, firing)

	rec := driftRun("op-drift")
	rec.AlertState = nil
	rec.Alerts = rec.Alerts[1:] // the shape_drift alone
	rec.Alerts[0].Resolving = true
	recordRun(t, s, rec)
	plain := alertRun("op-plain", results.AlertReminder, time.Minute, results.DeliveryPending)
	recordRun(t, s, plain)

	due, err := s.DueAlerts(ctx, firing.Result.StartedAt.Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	type context struct {
		Target, Excerpt string
		Resolving       bool
	}
	got := map[string]context{}
	for _, a := range due {
		got[a.OperationID] = context{a.Target, a.ResponseExcerpt, a.Resolving}
	}
	want := map[string]context{
		"op-firing": {"POST https://search.example.com/v1/search", "index rebuilding, retry in 120s", false},
		"op-drift":  {rec.Alerts[0].Target, rec.Alerts[0].ResponseExcerpt, true},
		"op-plain":  {"", "", false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
}
