package storetest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// pruneOlder prunes at t0 a store holding runs on both sides of it, in
// small batches, and checks through every read what is left: the results
// started at or after the cutoff with their attempts, the alerts that are
// pending or recent, the drifts a pending alert announces (whole, with
// their shapes' text), and stats that count only what is left.
func pruneOlder(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	cutoff := t0
	h := func(hours float64) time.Time { return cutoff.Add(time.Duration(hours * float64(time.Hour))) }
	const fpW = "2222222222222222" // seen only by a pruned run, but the baseline of a kept drift
	shaped := func(r results.Result, fp string) results.Result {
		r.Shape = &results.Shape{Fingerprint: fp, Canonical: "shape " + fp}
		return r
	}
	withDrift := func(r results.Result, baseline string) *results.RunRecord {
		d := &results.Drift{Kind: results.DriftResponse, Probe: r.Probe, OperationID: r.OperationID, DetectedAt: r.StartedAt,
			Baseline: baseline, Current: r.Shape.Fingerprint, Diff: driftDiff}
		a := results.NewAlert(results.AlertDrift, &r, r.StartedAt)
		a.Drift, a.State = d, results.DeliveryPending
		return &results.RunRecord{Result: r, Drift: d, Alerts: []results.Alert{a}}
	}
	withAlerts := func(r results.Result, states ...results.DeliveryState) *results.RunRecord {
		rec := &results.RunRecord{Result: r}
		for _, st := range states {
			a := results.NewAlert(results.AlertFiring, &r, r.StartedAt)
			a.State = st
			rec.Alerts = append(rec.Alerts, a)
		}
		return rec
	}
	es := func(id string, at time.Time) results.Result {
		return runAt(id, "external_search", at, results.Pass, "", 10, 2)
	}
	fail := func(id string, at time.Time) results.Result {
		return runAt(id, "weather", at, results.ContractError, results.CodeInvalidJSON, 10, 1)
	}

	recs := map[string]*results.RunRecord{}
	for _, rec := range []*results.RunRecord{
		{Result: shaped(es("old-x", h(-30)), "1111111111111111")},
		{Result: shaped(es("old-w", h(-40)), fpW)},
		{Result: es("old-1ms", cutoff.Add(-time.Millisecond))},
		withDrift(fail("drift-delivered", h(-2)), fpList),
		withDrift(fail("drift-pending", h(-3)), fpW),
		withAlerts(fail("alerts", h(-4)), results.DeliverySkipped, results.DeliveryPending,
			results.DeliveryPending, results.DeliveryPending),
		{Result: es("at-cutoff", cutoff)},
		withDrift(fail("new", h(1)), fpList),
	} {
		recordRun(t, s, rec)
		recs[rec.Result.OperationID] = rec
		switch rec.Result.OperationID {
		case "drift-delivered", "new":
			if err := s.MarkAlertDelivered(ctx, rec.Alerts[0].ID, rec.Result.StartedAt); err != nil {
				t.Fatal(err)
			}
		case "alerts": // skipped, failed, delivered, pending
			if err := s.MarkAlertFailed(ctx, rec.Alerts[1].ID, 3, "gone"); err != nil {
				t.Fatal(err)
			}
			if err := s.MarkAlertDelivered(ctx, rec.Alerts[2].ID, cutoff); err != nil {
				t.Fatal(err)
			}
		}
	}

	deleted, err := s.Prune(ctx, cutoff, 2)
	if err != nil {
		t.Fatal(err)
	}
	if deleted != 6 {
		t.Errorf("Prune deleted %d results, want 6", deleted)
	}
	rs, err := s.History(ctx, results.HistoryQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(rs), []string{"new", "at-cutoff"}; !slices.Equal(got, want) {
		t.Errorf("History after Prune: got %v, want %v", got, want)
	}
	for _, id := range []string{"at-cutoff", "new"} {
		if got, err := s.Result(ctx, id); err != nil || !reflect.DeepEqual(got, recs[id].Result) {
			t.Errorf("Result(%s) after Prune:\n got  %s, %v\n want %s", id, dump(got), err, dump(recs[id].Result))
		}
	}
	if _, err := s.Result(ctx, "old-1ms"); !errors.Is(err, impl.ErrNotFound) {
		t.Errorf("Result of a pruned run: got %v, want ErrNotFound", err)
	}
	ds, err := s.Drifts(ctx, "", time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := driftOps(ds), []string{"new", "drift-pending"}; !slices.Equal(got, want) {
		t.Errorf("Drifts after Prune: got %v, want %v", got, want)
	}
	var kept []string
	for _, a := range storedAlerts(t, s) {
		kept = append(kept, a.OperationID+" "+string(a.Kind)+" "+string(a.State))
	}
	if want := []string{"drift-pending shape_drift pending", "alerts firing pending", "new shape_drift delivered"}; !slices.Equal(kept, want) {
		t.Errorf("Alerts after Prune:\n got  %q\n want %q", kept, want)
	}
	// The pending drift alert is still delivered whole.
	due, err := s.DueAlerts(ctx, h(2), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 2 || due[0].OperationID != "alerts" || !reflect.DeepEqual(due[1], recs["drift-pending"].Alerts[0]) {
		t.Errorf("due alerts after Prune: got %+v, want the pending firing alert, then the pending drift alert whole", due)
	}
	stats, err := s.Stats(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, p := range stats {
		runs[p.Probe] = p.Runs
	}
	if want := map[string]int{"external_search": 1, "weather": 1}; !reflect.DeepEqual(runs, want) {
		t.Errorf("Stats after Prune: runs %v, want %v", runs, want)
	}
	// Pruning again finds nothing.
	if n, err := s.Prune(ctx, cutoff, 2); err != nil || n != 0 {
		t.Errorf("second Prune: %d, %v, want 0, nil", n, err)
	}
}

func driftOps(ds []results.Drift) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.OperationID)
	}
	return out
}

func pruneZeroCutoff(t *testing.T, impl Impl) {
	s := impl.Open(t)
	record(t, s, passAfterRetry("op-1"))
	if n, err := s.Prune(context.Background(), time.Time{}, 0); err == nil || n != 0 {
		t.Errorf("Prune(zero time): got %d, %v, want an error", n, err)
	}
	if rs, err := s.History(context.Background(), results.HistoryQuery{}); err != nil || len(rs) != 1 {
		t.Errorf("History after a refused Prune: got %v, %v, want op-1", ids(rs), err)
	}
}
