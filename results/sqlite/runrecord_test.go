package sqlite_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

var driftDiff = []string{
	"next_cursor: removed (null)",
	"results: list<object(3 keys)> -> object(1 keys)",
}

// driftRun is a contract_error of external_search whose shape drifted from
// the list layout to the map layout: it carries the drift, the probe's new
// alert state and two pending alerts, firing and shape_drift.
func driftRun(id string) *results.RunRecord {
	r := contractError(id)
	detected := r.StartedAt.Add(50 * time.Millisecond)
	d := &results.Drift{Kind: results.DriftResponse, Probe: r.Probe, OperationID: id, DetectedAt: detected,
		Baseline: fpList, Current: fpMap, Diff: driftDiff}
	firing := results.NewAlert(results.AlertFiring, &r, detected)
	firing.FailingSince = r.StartedAt
	drift := results.NewAlert(results.AlertDrift, &r, detected)
	drift.Drift = d
	return &results.RunRecord{
		Result: r,
		Drift:  d,
		AlertState: &results.AlertState{Probe: r.Probe, ConsecutiveFailures: 1,
			FailingSince: r.StartedAt, Firing: true, LastNotifiedAt: detected},
		Alerts: []results.Alert{firing, drift},
	}
}

// alertRun is a run of probe (a weather timeout) carrying one alert of
// kind, created at the run's start plus created, in state.
func alertRun(id string, kind results.AlertKind, created time.Duration, state results.DeliveryState) *results.RunRecord {
	r := unavailable(id)
	if kind == results.AlertResolved {
		r = passAfterRetry(id)
		r.Probe = "weather"
	}
	a := results.NewAlert(kind, &r, r.StartedAt.Add(created))
	a.State = state
	if kind != results.AlertDrift {
		a.FailingSince = r.StartedAt.Add(-time.Hour)
	}
	return &results.RunRecord{Result: r, Alerts: []results.Alert{a}}
}

func recordRun(t testing.TB, s *sqlite.Store, rec *results.RunRecord) {
	t.Helper()
	if err := s.RecordRun(context.Background(), rec); err != nil {
		t.Fatalf("RecordRun(%s): %v", rec.Result.OperationID, err)
	}
}

// tableCounts returns the number of rows of every table RecordRun writes.
func tableCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	op := operatorDB(t, path, "mode=ro")
	got := map[string]int{}
	for _, table := range []string{"results", "attempts", "shapes", "shape_counts", "drifts", "alert_state", "alerts"} {
		got[table] = count(t, op, "SELECT count(*) FROM "+table)
	}
	return got
}

var noRows = map[string]int{"results": 0, "attempts": 0, "shapes": 0, "shape_counts": 0,
	"drifts": 0, "alert_state": 0, "alerts": 0}

// TestRecordRunStoresDriftAndLinkedAlert checks the rows behind what the
// contract (internal/storetest) reads back: the drift's row, and the
// shape_drift alert linked to it by drift_id.
func TestRecordRunStoresDriftAndLinkedAlert(t *testing.T) {
	s, path := newStore(t)
	rec := driftRun("op-drift")
	recordRun(t, s, rec)

	if rec.Alerts[0].ID < 1 || rec.Alerts[1].ID <= rec.Alerts[0].ID {
		t.Fatalf("alert ids: got %d and %d, want increasing positive ids", rec.Alerts[0].ID, rec.Alerts[1].ID)
	}
	op := operatorDB(t, path, "mode=ro")
	drifts := queryMaps(t, op, "SELECT * FROM drifts")
	wantDrift := []map[string]any{{"id": drifts[0]["id"], "probe": "external_search", "operation_id": "op-drift",
		"detected_at": "2026-10-26T13:08:00.173Z", "baseline": fpList, "current": fpMap,
		"diff": "next_cursor: removed (null)\nresults: list<object(3 keys)> -> object(1 keys)",
		"kind": "response", "description_before": nil, "description_after": nil, "step": nil}}
	if !reflect.DeepEqual(drifts, wantDrift) {
		t.Errorf("drifts:\n got  %v\n want %v", drifts, wantDrift)
	}
	links := queryMaps(t, op, "SELECT id, kind, drift_id, failing_since, state FROM alerts ORDER BY id")
	wantLinks := []map[string]any{
		{"id": rec.Alerts[0].ID, "kind": "firing", "drift_id": nil, "failing_since": "2026-10-26T13:08:00.123Z", "state": "pending"},
		{"id": rec.Alerts[1].ID, "kind": "shape_drift", "drift_id": drifts[0]["id"], "failing_since": nil, "state": "pending"},
	}
	if !reflect.DeepEqual(links, wantLinks) {
		t.Errorf("alerts:\n got  %v\n want %v", links, wantLinks)
	}
}

// TestRecordRunAllOrNothing makes the last statement of RecordRun fail,
// the insert of its second alert, and checks that nothing of the run
// remains: the result, attempts, shape, shape count, drift, alert state
// and first alert were all written in the same transaction.
func TestRecordRunAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	// A trigger is the database refusing a row, as a full disk or a
	// constraint would, after every earlier statement has run.
	dba := operatorDB(t, path, "_busy_timeout=5000")
	if _, err := dba.Exec(`CREATE TRIGGER refuse_drift_alert BEFORE INSERT ON alerts
		WHEN NEW.kind = 'shape_drift' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}

	rec := driftRun("op-1")
	err := s.RecordRun(ctx, rec)
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("RecordRun with a refused alert: got %v, want the trigger's error", err)
	}
	if got := tableCounts(t, path); !reflect.DeepEqual(got, noRows) {
		t.Errorf("rows after a failed RecordRun: got %v, want none", got)
	}
	for i, a := range rec.Alerts {
		if a.ID != 0 {
			t.Errorf("alert %d: ID %d set by a failed RecordRun", i, a.ID)
		}
	}
	if _, err := s.Result(ctx, "op-1"); !errors.Is(err, sqlite.ErrNotFound) {
		t.Errorf("Result after a failed RecordRun: got %v, want ErrNotFound", err)
	}

	// The writer is usable again: the failed transaction was rolled back.
	if _, err := dba.Exec(`DROP TRIGGER refuse_drift_alert`); err != nil {
		t.Fatal(err)
	}
	recordRun(t, s, driftRun("op-1"))
	want := map[string]int{"results": 1, "attempts": 1, "shapes": 1, "shape_counts": 1,
		"drifts": 1, "alert_state": 1, "alerts": 2}
	if got := tableCounts(t, path); !reflect.DeepEqual(got, want) {
		t.Errorf("rows after RecordRun: got %v, want %v", got, want)
	}
}

func TestRecordRunDuplicateKeepsEverything(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	recordRun(t, s, driftRun("op-1"))
	before := tableCounts(t, path)
	if err := s.RecordRun(ctx, driftRun("op-1")); !errors.Is(err, sqlite.ErrDuplicate) {
		t.Fatalf("second RecordRun: got %v, want ErrDuplicate", err)
	}
	if got := tableCounts(t, path); !reflect.DeepEqual(got, before) {
		t.Errorf("rows after a duplicate: got %v, want %v", got, before)
	}
}

func TestRecordRunRefusesInvalidRecords(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*results.RunRecord)
		want   string
	}{
		{"invalid result", func(rec *results.RunRecord) { rec.Result.Error = nil }, "invalid result: outcome contract_error without an error"},
		{"drift of another probe", func(rec *results.RunRecord) { rec.Drift.Probe = "weather" }, `invalid drift: probe "weather"`},
		{"drift of another run", func(rec *results.RunRecord) { rec.Drift.OperationID = "op-other" }, `invalid drift: operation_id "op-other"`},
		{"drift to the same shape", func(rec *results.RunRecord) { rec.Drift.Baseline = fpMap }, "baseline and current are both"},
		{"drift without a time", func(rec *results.RunRecord) { rec.Drift.DetectedAt = time.Time{} }, "zero detected_at"},
		{"diff line with a newline", func(rec *results.RunRecord) { rec.Drift.Diff = []string{"a\nb"} }, "contains a newline"},
		{"state of another probe", func(rec *results.RunRecord) { rec.AlertState.Probe = "weather" }, `invalid alert state: probe "weather"`},
		{"negative failures", func(rec *results.RunRecord) { rec.AlertState.ConsecutiveFailures = -1 }, "-1 consecutive failures"},
		{"unknown kind", func(rec *results.RunRecord) { rec.Alerts[1].Kind = "page" }, `invalid alert 1 (page): unknown kind "page"`},
		{"alert of another probe", func(rec *results.RunRecord) { rec.Alerts[1].Probe = "weather" }, `probe "weather", want the result's "external_search"`},
		{"alert already stored", func(rec *results.RunRecord) { rec.Alerts[1].ID = 7 }, "already stored as alert 7"},
		{"alert without a time", func(rec *results.RunRecord) { rec.Alerts[1].CreatedAt = time.Time{} }, "zero created_at"},
		{"alert without an operation", func(rec *results.RunRecord) { rec.Alerts[1].OperationID = "" }, "empty operation_id"},
		{"alert pass with a code", func(rec *results.RunRecord) { rec.Alerts[1].Outcome = results.Pass }, "outcome pass with code"},
		{"alert failure without a code", func(rec *results.RunRecord) { rec.Alerts[1].Code = "" }, `outcome contract_error with code ""`},
		{"alert delivered", func(rec *results.RunRecord) { rec.Alerts[1].State = results.DeliveryDelivered }, `state "delivered", want pending or skipped`},
		{"alert without a state", func(rec *results.RunRecord) { rec.Alerts[1].State = "" }, `state "", want pending or skipped`},
		{"alert with delivered_at", func(rec *results.RunRecord) { rec.Alerts[1].DeliveredAt = t0 }, "delivered_at set"},
		{"skipped alert with a next attempt", func(rec *results.RunRecord) {
			rec.Alerts[1].State, rec.Alerts[1].NextAttemptAt = results.DeliverySkipped, t0
		}, "next attempt set on a skipped alert"},
		{"negative duration", func(rec *results.RunRecord) { rec.Alerts[1].Duration = -time.Second }, "negative attempts, duration"},
		{"drift alert without a drift", func(rec *results.RunRecord) { rec.Drift = nil }, "shape_drift alert without a drift"},
		{"drift on a firing alert", func(rec *results.RunRecord) { rec.Alerts[0].Drift = rec.Drift }, "drift set on an alert that is not shape_drift"},
		{"another drift on the alert", func(rec *results.RunRecord) {
			d := *rec.Drift
			d.Diff = []string{"x: added (string)"}
			rec.Alerts[1].Drift = &d
		}, "none of the run record's drifts"},
	}
	ctx := context.Background()
	s, path := newStore(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := driftRun("op-invalid")
			tt.mutate(rec)
			err := s.RecordRun(ctx, rec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("RecordRun: got %v, want an error containing %q", err, tt.want)
			}
			if got := tableCounts(t, path); !reflect.DeepEqual(got, noRows) {
				t.Errorf("rows after a refused RecordRun: got %v, want none", got)
			}
		})
	}
	if err := s.RecordRun(ctx, nil); err == nil {
		t.Error("RecordRun(nil): got nil error")
	}
}

func TestAlertStateRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)

	if got, err := s.AlertStates(ctx); err != nil || len(got) != 0 {
		t.Fatalf("AlertStates of a new store: got %v, %v, want an empty map", got, err)
	}

	failing := driftRun("op-1") // firing, with every time set, in two modes
	timeout := results.Mode{Outcome: results.Unavailable, Code: results.CodeTimeout}
	contract := results.Mode{Outcome: results.ContractError, Code: results.Code("unsupported_results_container")}
	failing.AlertState.Notified = contract
	failing.AlertState.Modes = []results.Mode{timeout, contract}
	failing.AlertState.Announced = []results.Mode{contract}
	failing.AlertState.Receivers = []string{"default/slack", "routes[0]/alertmanager"}
	failing.AlertState.SilencedAt = failing.AlertState.LastNotifiedAt.Add(-time.Second)
	recordRun(t, s, failing)
	passing := unavailable("op-2") // weather, passing: zero times
	passing.Outcome, passing.Error = results.Pass, nil
	weather := results.AlertState{Probe: "weather"}
	recordRun(t, s, &results.RunRecord{Result: passing, AlertState: &weather})

	want := map[string]results.AlertState{"external_search": *failing.AlertState, "weather": weather}
	got, err := s.AlertStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("AlertStates:\n got  %+v\n want %+v", got, want)
	}
	op := operatorDB(t, path, "mode=ro")
	rows := queryMaps(t, op, "SELECT * FROM alert_state ORDER BY probe")
	wantRows := []map[string]any{
		{"probe": "external_search", "consecutive_failures": int64(1), "failing_since": "2026-10-26T13:08:00.123Z",
			"firing": int64(1), "last_notified_at": "2026-10-26T13:08:00.173Z", "updated_at": "2026-10-26T13:08:00.123Z",
			"notified":  `{"outcome":"contract_error","code":"unsupported_results_container"}`,
			"modes":     `[{"outcome":"unavailable","code":"timeout"},{"outcome":"contract_error","code":"unsupported_results_container"}]`,
			"announced": `[{"outcome":"contract_error","code":"unsupported_results_container"}]`,
			"receivers": `["default/slack","routes[0]/alertmanager"]`, "silenced_at": "2026-10-26T13:07:59.173Z",
			"failing": int64(0), "consecutive_passes": int64(0), "window_bits": int64(0), "window_runs": int64(0),
			"flapping": int64(0), "flapping_since": nil, "verdict_changes": nil, "silent_locations": nil},
		{"probe": "weather", "consecutive_failures": int64(0), "failing_since": nil,
			"firing": int64(0), "last_notified_at": nil, "updated_at": "2026-10-26T13:09:00.123Z",
			"notified": nil, "modes": nil, "announced": nil, "receivers": nil, "silenced_at": nil,
			"failing": int64(0), "consecutive_passes": int64(0), "window_bits": int64(0), "window_runs": int64(0),
			"flapping": int64(0), "flapping_since": nil, "verdict_changes": nil, "silent_locations": nil},
	}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("alert_state rows:\n got  %v\n want %v", rows, wantRows)
	}

	// A run without a state leaves it alone; a run with one replaces it.
	next := contractError("op-3")
	next.StartedAt = next.StartedAt.Add(time.Minute)
	recordRun(t, s, &results.RunRecord{Result: next})
	if got, _ := s.AlertStates(ctx); !reflect.DeepEqual(got, want) {
		t.Errorf("AlertStates after a run without a state:\n got  %+v\n want %+v", got, want)
	}
	resolved := results.AlertState{Probe: "external_search", LastNotifiedAt: t0.Add(time.Hour)}
	next.OperationID = "op-4"
	recordRun(t, s, &results.RunRecord{Result: next, AlertState: &resolved})
	want["external_search"] = resolved
	if got, _ := s.AlertStates(ctx); !reflect.DeepEqual(got, want) {
		t.Errorf("AlertStates after an update:\n got  %+v\n want %+v", got, want)
	}
	if n := count(t, op, "SELECT count(*) FROM alert_state WHERE probe = 'external_search' AND failing_since IS NULL AND firing = 0"); n != 1 {
		t.Errorf("updated alert_state row keeps its old failure")
	}
}
