package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// calls is one call of every method of Store but Close, for the fault
// behaviours: each must fail with a Go error, never report success.
func calls(s Store) map[string]func(ctx context.Context) error {
	return map[string]func(ctx context.Context) error{
		"RecordRun":    func(ctx context.Context) error { return s.RecordRun(ctx, driftRun("op-fault")) },
		"Record":       func(ctx context.Context) error { return s.Record(ctx, passAfterRetry("op-fault-2")) },
		"AlertStates":  func(ctx context.Context) error { _, err := s.AlertStates(ctx); return err },
		"DueAlerts":    func(ctx context.Context) error { _, err := s.DueAlerts(ctx, t0.Add(time.Hour), 10); return err },
		"NextAlertDue": func(ctx context.Context) error { _, _, err := s.NextAlertDue(ctx); return err },
		"MarkAlertDelivered": func(ctx context.Context) error {
			return s.MarkAlertDelivered(ctx, 1, t0.Add(time.Hour))
		},
		"MarkAlertRetry": func(ctx context.Context) error {
			return s.MarkAlertRetry(ctx, 1, 1, t0.Add(time.Hour), "x")
		},
		"MarkAlertFailed": func(ctx context.Context) error { return s.MarkAlertFailed(ctx, 1, 1, "x") },
		"PendingGroup": func(ctx context.Context) error {
			_, err := s.PendingGroup(ctx, `default/slack{provider="search"}`)
			return err
		},
		"Result":  func(ctx context.Context) error { _, err := s.Result(ctx, "op-1"); return err },
		"History": func(ctx context.Context) error { _, err := s.History(ctx, results.HistoryQuery{}); return err },
		"Latest":  func(ctx context.Context) error { _, err := s.Latest(ctx); return err },
		"Drifts": func(ctx context.Context) error {
			_, err := s.Drifts(ctx, "", time.Time{}, 0)
			return err
		},
		"RecentRuns": func(ctx context.Context) error {
			_, err := s.RecentRuns(ctx, []string{"external_search"}, 5)
			return err
		},
		"LastDrifts": func(ctx context.Context) error {
			_, err := s.LastDrifts(ctx, []string{"external_search"})
			return err
		},
		"LatestPassSamples": func(ctx context.Context) error { _, err := s.LatestPassSamples(ctx, nil); return err },
		"Stats":             func(ctx context.Context) error { _, err := s.Stats(ctx, time.Time{}, time.Time{}); return err },
		"Prune":             func(ctx context.Context) error { _, err := s.Prune(ctx, t0.Add(time.Hour), 0); return err },
		"Alerts":            func(ctx context.Context) error { _, err := s.Alerts(ctx); return err },
		"RecordedRuns":      func(ctx context.Context) error { _, err := s.RecordedRuns(ctx, ""); return err },
		"Ping":              func(ctx context.Context) error { return s.Ping(ctx) },
	}
}

// seedForFaults records a run with pending alerts, so that every call
// has something to find, and returns the first alert's ID.
func seedForFaults(t *testing.T, s Store) int64 {
	t.Helper()
	rec := driftRun("op-1")
	recordRun(t, s, rec)
	return rec.Alerts[0].ID
}

// faultCancelled: with a cancelled context every call fails with an error
// wrapping context.Canceled, and nothing is written: a run recorded so is
// not stored, an alert marked so stays pending.
func faultCancelled(t *testing.T, impl Impl) {
	s := impl.Open(t)
	id := seedForFaults(t, s)
	before := storedAlerts(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range calls(s) {
		if err := call(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: got %v, want context.Canceled", name, err)
		}
	}
	bg := context.Background()
	for _, call := range []func() error{
		func() error { return s.MarkAlertDelivered(ctx, id, t0.Add(time.Hour)) },
		func() error { return s.MarkAlertFailed(ctx, id, 1, "x") },
	} {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("mark of alert %d with a cancelled context: got %v, want context.Canceled", id, err)
		}
	}
	if got := storedAlerts(t, s); !reflect.DeepEqual(got, before) {
		t.Errorf("alerts after cancelled calls:\n got  %+v\n want %+v", got, before)
	}
	rs, err := s.RecordedRuns(bg, "")
	if err != nil || len(rs) != 1 {
		t.Errorf("runs after cancelled calls: got %v, %v, want op-1 alone", ids(rs), err)
	}
}

// faultClosed: once closed, every call fails with an error, and closing
// again does nothing.
func faultClosed(t *testing.T, impl Impl) {
	s := impl.Open(t)
	seedForFaults(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	for name, call := range calls(s) {
		if err := call(ctx); err == nil {
			t.Errorf("%s on a closed store: got nil error", name)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
