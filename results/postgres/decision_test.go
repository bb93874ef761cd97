package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// TestFencedRecordDecision: the decider's decision is written under its
// own lease's epoch and refused, writing nothing, once another node holds
// that lease; its alerts go to the decider's outbox, not to the outbox of
// the location whose run they speak of.
func TestFencedRecordDecision(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	run := failingRun("op-eu")
	run.Result.Location = "eu-west"
	run.AlertState, run.Alerts = nil, nil
	if err := s.RecordRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, "eu-west", "eu-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, results.DeciderLease, "a", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	decision := func(epoch int64) *results.DecisionRecord {
		a := results.NewAlert(results.AlertFiring, &run.Result, t0)
		a.Decider, a.Receiver, a.NextAttemptAt = results.DeciderLease, "default/slack", t0
		a.Locations = []results.LocationView{{Location: "eu-west", Failing: true, Outcome: a.Outcome, Code: a.Code, LastRun: t0}}
		st := results.AlertState{Probe: run.Result.Probe, Failing: true, Firing: true, FailingSince: t0}
		return &results.DecisionRecord{Probe: run.Result.Probe, At: t0, AlertState: &st, Alerts: []results.Alert{a},
			Fence: results.Fence{Location: results.DeciderLease, Epoch: epoch}}
	}
	if err := s.RecordDecision(ctx, decision(l.Epoch)); err != nil {
		t.Fatalf("decision under the decider's epoch: %v", err)
	}
	if got := pgtest.Exec(t, dsn, `SELECT a.epoch || ' ' || st.epoch || ' ' || a.decider FROM alerts a, alert_state st`); got != "1 1 _decider" {
		t.Errorf("epochs of alert and state, decider: %q, want 1 1 _decider", got)
	}

	eu, err := s.FencedOutbox(results.Fence{Location: "eu-west", Epoch: 1}).DueAlerts(ctx, t0.Add(time.Hour), 10)
	if err != nil || len(eu) != 0 {
		t.Errorf("eu-west's outbox: %d alerts, %v; want none (the decider's)", len(eu), err)
	}
	mine, err := s.FencedOutbox(results.Fence{Location: results.DeciderLease, Epoch: l.Epoch}).DueAlerts(ctx, t0.Add(time.Hour), 10)
	if err != nil || len(mine) != 1 || len(mine[0].Locations) != 1 {
		t.Errorf("the decider's outbox: %+v, %v; want its alert with its location", mine, err)
	}

	time.Sleep(300 * time.Millisecond)
	if l2, err := s.AcquireLease(ctx, results.DeciderLease, "b", time.Minute); err != nil || l2.Epoch != l.Epoch+1 {
		t.Fatalf("b's takeover of the decider: %+v, %v", l2, err)
	}
	before := pgtest.Exec(t, dsn, `SELECT count(*) FROM alerts`)
	stale := decision(l.Epoch)
	err = s.RecordDecision(ctx, stale)
	if !errors.Is(err, results.ErrFenced) || !postgres.Permanent(err) {
		t.Errorf("a deposed decider's decision: %v, want ErrFenced, permanent", err)
	}
	if stale.Alerts[0].ID != 0 {
		t.Error("a refused decision's alert got an ID")
	}
	if after := pgtest.Exec(t, dsn, `SELECT count(*) FROM alerts`); after != before {
		t.Errorf("alerts after a refused decision: %s, want %s", after, before)
	}
}
