package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// far is a "now" by which every alert the tests record is due.
var far = t0.Add(24 * time.Hour)

// recordAlerts records n runs of one pending alert each and returns the
// alerts' ids, oldest first.
func recordAlerts(t *testing.T, s *postgres.Store, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := range n {
		rec := failingRun(fmt.Sprintf("op-%d", i+1))
		rec.Alerts[0].CreatedAt = rec.Alerts[0].CreatedAt.Add(time.Duration(i) * time.Second)
		if err := s.RecordRun(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.Alerts[0].ID)
	}
	return ids
}

func alertIDs(alerts []results.Alert) []int64 {
	var ids []int64
	for _, a := range alerts {
		ids = append(ids, a.ID)
	}
	return ids
}

// TestFencedOutbox: the fenced outbox claims what it returns for its
// epoch and marks deliveries while that epoch holds the lease; once a
// newer epoch does, every claim and mark of the old one is refused, for
// good, changing nothing, and the new epoch's outbox takes over the
// pending alerts.
func TestFencedOutbox(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	ids := recordAlerts(t, s, 3)
	l, err := s.AcquireLease(ctx, results.DefaultLocation, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	old := s.FencedOutbox(results.Fence{Location: results.DefaultLocation, Epoch: l.Epoch})

	due, err := old.DueAlerts(ctx, far, 10)
	if err != nil || !slices.Equal(alertIDs(due), ids) {
		t.Fatalf("DueAlerts: %v, %v, want %v", alertIDs(due), err, ids)
	}
	if due[0].OperationID != "op-1" || due[0].Kind != results.AlertFiring || due[0].State != results.DeliveryPending {
		t.Errorf("claimed alert %+v, want op-1's pending firing alert, whole", due[0])
	}
	if n := count(t, dsn, `SELECT count(*) FROM alerts WHERE claimed_epoch = 1`); n != 3 {
		t.Errorf("%d alerts claimed by epoch 1, want 3", n)
	}
	if err := old.MarkAlertDelivered(ctx, ids[0], far); err != nil {
		t.Errorf("MarkAlertDelivered under the current epoch: %v", err)
	}
	if err := old.MarkAlertRetry(ctx, ids[1], 1, t0, "503"); err != nil {
		t.Errorf("MarkAlertRetry under the current epoch: %v", err)
	}
	if err := old.MarkAlertDelivered(ctx, ids[0], far); !errors.Is(err, postgres.ErrNotFound) {
		t.Errorf("marking a delivered alert again: %v, want ErrNotFound", err)
	}
	if next, ok, err := old.NextAlertDue(ctx); err != nil || !ok || next.IsZero() {
		t.Errorf("NextAlertDue: %v %v %v", next, ok, err)
	}

	current := takeOver(t, dsn, "b")
	before := contents(t, dsn)
	fencedCalls := map[string]func() error{
		"DueAlerts":          func() error { _, err := old.DueAlerts(ctx, far, 10); return err },
		"MarkAlertDelivered": func() error { return old.MarkAlertDelivered(ctx, ids[2], far) },
		"MarkAlertRetry":     func() error { return old.MarkAlertRetry(ctx, ids[2], 1, far, "503") },
		"MarkAlertFailed":    func() error { return old.MarkAlertFailed(ctx, ids[2], 1, "gave up") },
	}
	for name, call := range fencedCalls {
		if err := call(); !errors.Is(err, results.ErrFenced) || !postgres.Permanent(err) || !permanentToRunner(err) {
			t.Errorf("%s of a deposed epoch: %v, want ErrFenced, permanent", name, err)
		}
	}
	if after := contents(t, dsn); !slices.Equal(after, before) {
		t.Errorf("a deposed epoch's outbox changed the store:\n got  %q\n want %q", after, before)
	}
	if n := count(t, dsn, `SELECT count(*) FROM alerts WHERE claimed_epoch = 2`); n != 0 {
		t.Errorf("%d alerts claimed by epoch 2 before its outbox asked", n)
	}

	next := s.FencedOutbox(results.Fence{Location: results.DefaultLocation, Epoch: current})
	due, err = next.DueAlerts(ctx, far, 10)
	if err != nil || !slices.Equal(alertIDs(due), ids[1:]) {
		t.Fatalf("the new epoch's DueAlerts: %v, %v, want %v", alertIDs(due), err, ids[1:])
	}
	if n := count(t, dsn, `SELECT count(*) FROM alerts WHERE claimed_epoch = 2`); n != 2 {
		t.Errorf("%d alerts claimed by epoch 2, want 2", n)
	}
	if err := next.MarkAlertFailed(ctx, ids[2], 1, "gave up"); err != nil {
		t.Errorf("the new epoch's MarkAlertFailed: %v", err)
	}
	nowhere := s.FencedOutbox(results.Fence{Location: "nowhere", Epoch: 1})
	if _, err := nowhere.DueAlerts(ctx, far, 10); !errors.Is(err, results.ErrFenced) {
		t.Errorf("DueAlerts of a location without a lease: %v, want ErrFenced", err)
	}
}

// TestFencedOutboxClaimsSkipLocked: two claimers at once never get the
// same alert: the second skips the rows the first holds rather than wait
// for them or return them too.
func TestFencedOutboxClaimsSkipLocked(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	ids := recordAlerts(t, s, 4)
	l, err := s.AcquireLease(ctx, results.DefaultLocation, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	o := s.FencedOutbox(results.Fence{Location: results.DefaultLocation, Epoch: l.Epoch})

	var calls atomic.Int32
	holding, release := make(chan struct{}), make(chan struct{})
	postgres.OnClaimed(s, func() {
		if calls.Add(1) == 1 {
			close(holding)
			<-release
		}
	})
	type answer struct {
		ids []int64
		err error
	}
	first, second := make(chan answer, 1), make(chan answer, 1)
	go func() {
		due, err := o.DueAlerts(ctx, far, 2)
		first <- answer{alertIDs(due), err}
	}()
	select {
	case <-holding:
	case a := <-first:
		t.Fatalf("the first claimer returned %v, %v without holding its rows", a.ids, a.err)
	}
	go func() {
		due, err := o.DueAlerts(ctx, far, 10)
		second <- answer{alertIDs(due), err}
	}()
	var b answer
	select {
	case b = <-second:
	case <-time.After(3 * time.Second):
		t.Error("the second claimer waited for the rows the first holds")
		close(release)
		b = <-second
		release = nil
	}
	if release != nil {
		close(release)
	}
	a := <-first
	if a.err != nil || b.err != nil {
		t.Fatalf("claims: %v; %v", a.err, b.err)
	}
	if !slices.Equal(a.ids, ids[:2]) || !slices.Equal(b.ids, ids[2:]) {
		t.Errorf("the first claimer got %v and the second %v, want %v and %v", a.ids, b.ids, ids[:2], ids[2:])
	}
}

// TestHeartbeatAndFleet: heartbeats are dated by the database's clock and
// upsert their node; Fleet returns every lease and node as they stand,
// with that clock.
func TestHeartbeatAndFleet(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	started := t0
	if err := s.Heartbeat(ctx, results.FleetNode{Node: "a", Version: "1.0", Started: started}); err != nil {
		t.Fatal(err)
	}
	if err := s.Heartbeat(ctx, results.FleetNode{Node: "b", Location: "eu-west", Version: "1.0", Started: started}); err != nil {
		t.Fatal(err)
	}
	f1, err := s.Fleet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(f1.Nodes) != 2 || f1.Nodes[0].Node != "a" || f1.Nodes[0].Location != results.DefaultLocation ||
		f1.Nodes[1].Location != "eu-west" || !f1.Nodes[0].Started.Equal(started) || f1.Nodes[0].Version != "1.0" {
		t.Fatalf("nodes %+v", f1.Nodes)
	}
	if seen := f1.Nodes[0].LastSeen; seen.IsZero() || seen.After(f1.Now) || f1.Now.Sub(seen) > 10*time.Second {
		t.Errorf("a last seen %v, fleet's now %v: want a heartbeat just before now, by the database's clock", seen, f1.Now)
	}
	if len(f1.Leases) != 0 {
		t.Errorf("leases %+v before any was taken", f1.Leases)
	}

	time.Sleep(20 * time.Millisecond)
	if err := s.Heartbeat(ctx, results.FleetNode{Node: "a", Version: "1.1", Started: started.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, "eu-west", "b", time.Minute); err != nil {
		t.Fatal(err)
	}
	la, err := s.AcquireLease(ctx, results.DefaultLocation, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseLease(ctx, "eu-west", "b", 1); err != nil {
		t.Fatal(err)
	}
	f2, err := s.Fleet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := f2.Nodes[0]; n.Version != "1.1" || !n.Started.Equal(started.Add(time.Hour)) || !n.LastSeen.After(f1.Nodes[0].LastSeen) {
		t.Errorf("a after its second heartbeat: %+v, want version 1.1, the new start and a later heartbeat than %v", n, f1.Nodes[0].LastSeen)
	}
	if !f2.Nodes[1].LastSeen.Equal(f1.Nodes[1].LastSeen) {
		t.Errorf("b's heartbeat moved without one: %v -> %v", f1.Nodes[1].LastSeen, f2.Nodes[1].LastSeen)
	}
	want := []results.Lease{
		{Location: results.DefaultLocation, Holder: "a", Epoch: 1, Expires: la.Expires},
		{Location: "eu-west", Epoch: 1},
	}
	if !slices.Equal(f2.Leases, want) {
		t.Errorf("leases %+v, want %+v", f2.Leases, want)
	}
	if n := count(t, dsn, `SELECT count(*) FROM fleet_nodes WHERE heartbeat_at <= now()`); n != 2 {
		t.Errorf("%d fleet_nodes rows, want 2", n)
	}
	if err := s.Heartbeat(ctx, results.FleetNode{Started: started}); err == nil {
		t.Error("a heartbeat without a node name: got nil error")
	}
}
