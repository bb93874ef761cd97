package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/results"
)

// TestFencedOutboxDeliversItsLocation: each location's leader drains the
// one outbox, and its fenced outbox claims, and waits for, only the
// alerts of runs from its own location; the unfenced outbox sees them all.
func TestFencedOutboxDeliversItsLocation(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	byLocation := map[string]int64{}
	for i, loc := range []string{"eu-west", "us-east", ""} {
		rec := failingRun("op-" + loc)
		rec.Result.Location = loc
		rec.Alerts[0].CreatedAt = rec.Alerts[0].CreatedAt.Add(time.Duration(i) * time.Second)
		if err := s.RecordRun(ctx, rec); err != nil {
			t.Fatal(err)
		}
		byLocation[loc] = rec.Alerts[0].ID
	}
	for _, tt := range []struct {
		location string
		want     []int64
	}{
		{"eu-west", []int64{byLocation["eu-west"]}},
		{"us-east", []int64{byLocation["us-east"]}},
		{results.DefaultLocation, []int64{byLocation[""]}},
		{"ap-south", nil},
	} {
		l, err := s.AcquireLease(ctx, tt.location, "node-"+tt.location, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		o := s.FencedOutbox(results.Fence{Location: tt.location, Epoch: l.Epoch})
		due, err := o.DueAlerts(ctx, far, 10)
		if err != nil || !slices.Equal(alertIDs(due), tt.want) {
			t.Errorf("%s: DueAlerts %v, %v; want %v", tt.location, alertIDs(due), err, tt.want)
		}
		next, ok, err := o.NextAlertDue(ctx)
		if err != nil || ok != (len(tt.want) > 0) {
			t.Errorf("%s: NextAlertDue %v, %v, %v; want one only when it has an alert", tt.location, next, ok, err)
		}
	}
	all, err := s.FencedOutbox(results.Fence{}).DueAlerts(ctx, far, 10)
	if err != nil || len(all) != 3 {
		t.Errorf("the unfenced outbox: %v, %v; want all three alerts", alertIDs(all), err)
	}
	// An alert whose run is gone goes with the default location.
	pgtest.Exec(t, dsn, `DELETE FROM attempts WHERE operation_id = 'op-us-east'; DELETE FROM results WHERE operation_id = 'op-us-east'`)
	for loc, want := range map[string][]int64{"us-east": nil, results.DefaultLocation: {byLocation["us-east"], byLocation[""]}} {
		l, err := s.AcquireLease(ctx, loc, "node-"+loc, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		due, err := s.FencedOutbox(results.Fence{Location: loc, Epoch: l.Epoch}).DueAlerts(ctx, far, 10)
		if err != nil || !slices.Equal(alertIDs(due), want) {
			t.Errorf("%s, the run deleted: DueAlerts %v, %v; want %v", loc, alertIDs(due), err, want)
		}
	}
}
