package sqlite_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

func nextDue(t *testing.T, s *sqlite.Store) (time.Time, bool) {
	t.Helper()
	at, ok, err := s.NextAlertDue(context.Background())
	if err != nil {
		t.Fatalf("NextAlertDue: %v", err)
	}
	return at, ok
}

// TestPendingAlertsSurviveRestart closes the store with alerts pending,
// one of them mid-retry, and checks that a reopened store delivers both.
func TestPendingAlertsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	// firing and shape_drift, made at 13:08:00.173; resolved, at 13:08:00.123.
	drift := driftRun("op-1")
	resolved := alertRun("op-2", results.AlertResolved, time.Minute, results.DeliveryPending)
	recordRun(t, s, drift)
	recordRun(t, s, resolved)
	retryAt := t0.Add(time.Hour)
	if err := s.MarkAlertRetry(ctx, drift.Alerts[0].ID, 2, retryAt, "slack: timeout"); err != nil {
		t.Fatal(err)
	}
	retried := drift.Alerts[0]
	retried.DeliveryTries, retried.NextAttemptAt, retried.LastError = 2, retryAt, "slack: timeout"
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, path)
	got, err := s.DueAlerts(ctx, retryAt, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []results.Alert{resolved.Alerts[0], retried, drift.Alerts[1]}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DueAlerts after reopening:\n got  %+v\n want %+v", got, want)
	}
	if at, ok := nextDue(t, s); !ok || !at.Equal(resolved.Alerts[0].CreatedAt) {
		t.Errorf("NextAlertDue after reopening: got %v %v, want %v", at, ok, resolved.Alerts[0].CreatedAt)
	}
}
