package sqlite_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// TestFleetRecordsRefused: a fenced or handover run record, which only an
// instance of a fleet writes, is refused for good and stores nothing,
// rather than being stored as if it claimed no lease.
func TestFleetRecordsRefused(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	fenced := driftRun("op-fenced")
	fenced.Fence = results.Fence{Location: "default", Epoch: 3}
	handover := driftRun("op-handover")
	handover.Handover = true
	for _, rec := range []*results.RunRecord{fenced, handover} {
		err := s.RecordRun(ctx, rec)
		if !errors.Is(err, sqlite.ErrFleetRecord) || !sqlite.Permanent(err) {
			t.Errorf("RecordRun(%s): %v, want ErrFleetRecord, permanent", rec.Result.OperationID, err)
		}
		if rec.Alerts[0].ID != 0 {
			t.Errorf("RecordRun(%s): alert ID set to %d", rec.Result.OperationID, rec.Alerts[0].ID)
		}
	}
	db := operatorDB(t, path, "mode=ro")
	for _, table := range []string{"results", "alerts", "drifts", "alert_state"} {
		if n := count(t, db, "SELECT count(*) FROM "+table); n != 0 {
			t.Errorf("%s: %d rows after refused records, want none", table, n)
		}
	}
	// The zero Fence is a single instance's: stored as ever.
	recordRun(t, s, driftRun("op-single"))
}
