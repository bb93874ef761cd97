package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/refunddesk"
	"github.com/toolpulse/toolpulse/results"
)

const (
	refundBody     = `{"status":"success","data":{"refund_id":"rf_1"}}`
	orderBody      = `{"state":"refunded","refund_id":"rf_1"}`
	orderMovedBody = `{"order":{"state":"refunded","refund_id":"rf_1"}}`
	stepsProbe     = "refund_order_31"
)

// stepsRunOf is a passing run of the refund drill whose refund step
// answered refund and whose verify step answered order.
func stepsRunOf(t *testing.T, at time.Time, refund, order string) *results.Result {
	t.Helper()
	shapeOfBody := func(body string) *results.Shape {
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("test body %q: %v", body, err)
		}
		return shapeOf(v)
	}
	return &results.Result{
		OperationID: fmt.Sprintf("%s@%s", stepsProbe, at.Format(time.RFC3339Nano)),
		Probe:       stepsProbe,
		Kind:        results.ProbeSteps,
		StartedAt:   at,
		Duration:    30 * time.Millisecond,
		Outcome:     results.Pass,
		Attempts: []results.Attempt{
			{Number: 1, StartedAt: at, HTTPStatus: 201, Step: "refund"},
			{Number: 2, StartedAt: at, HTTPStatus: 200, Step: "verify"},
		},
		HTTPStatus: 200,
		Steps: []results.StepResult{
			{Name: "refund", Outcome: results.Pass, StartedAt: at, Shape: shapeOfBody(refund)},
			{Name: "verify", Outcome: results.Pass, StartedAt: at, Polls: 1, Shape: shapeOfBody(order)},
			{Name: "cleanup", Outcome: results.Pass, StartedAt: at, Always: true},
		},
	}
}

// TestStepDriftNamesTheStep: each step's answer has its own baseline. Once
// both are learned, a change of the verify step's answer raises one drift
// naming that step, and one alert that says so; the refund step's answer,
// unchanged, does not drift, and its baseline learned nothing of verify's.
// A reset of the probe resets its steps' baselines.
func TestStepDriftNamesTheStep(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	ctx := context.Background()
	run := func(refund, order string) (*results.Result, Decision) {
		t.Helper()
		f.clock.Advance(time.Minute)
		r := stepsRunOf(t, f.clock.Now(), refund, order)
		return r, mustWrite(t, f.p, r)
	}
	for i := range 6 {
		if _, d := run(refundBody, orderBody); len(d.Alerts) != 0 {
			t.Fatalf("baseline run %d alerted %v", i+1, alertKinds(d.Alerts))
		}
	}
	if ds := f.drifts(); len(ds) != 0 {
		t.Fatalf("baseline runs drifted: %+v", ds)
	}

	r, d := run(refundBody, orderMovedBody)
	ds := f.drifts()
	if len(ds) != 1 || ds[0].Step != "verify" || ds[0].Probe != stepsProbe || ds[0].OperationID != r.OperationID {
		t.Fatalf("drifts after verify's answer moved: %+v; want one of step verify of %s", ds, stepsProbe)
	}
	if kinds := alertKinds(d.Alerts); len(kinds) != 1 || kinds[0] != results.AlertDrift || d.Alerts[0].Drift.Step != "verify" {
		t.Fatalf("alerts: %v; want one shape_drift naming verify", kinds)
	}
	if !strings.Contains(strings.Join(ds[0].Diff, "\n"), "order") {
		t.Errorf("verify's drift lines %q do not name the moved path", ds[0].Diff)
	}
	stored, err := f.store.Result(ctx, r.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	if got := stored.Steps[0].Shape; got == nil || len(got.Drift) != 0 {
		t.Errorf("refund step's stored shape %+v; want it undrifted", got)
	}
	if got := stored.Steps[1].Shape; got == nil || len(got.Drift) == 0 || got.Baseline == "" {
		t.Errorf("verify step's stored shape %+v; want its drift lines and baseline", got)
	}
	if r.Steps[1].Shape.Drift != nil {
		t.Errorf("the caller's run was changed: %+v", r.Steps[1].Shape)
	}

	for _, key := range []string{results.StepKey(stepsProbe, "refund"), results.StepKey(stepsProbe, "verify")} {
		if _, found, err := f.store.ShapeProfile(ctx, key); err != nil || !found {
			t.Errorf("ShapeProfile(%s): found %v, %v; want the step's own profile", key, found, err)
		}
	}
	if _, found, _ := f.store.ShapeProfile(ctx, stepsProbe); found {
		t.Errorf("the probe itself has a profile; want only its steps to")
	}
	refund, _, _ := f.store.ShapeProfile(ctx, results.StepKey(stepsProbe, "refund"))
	if strings.Contains(refund.Data, "refunded") || strings.Contains(refund.Data, `"order`) {
		t.Errorf("refund's profile learned verify's answer: %s", refund.Data)
	}

	// The change goes on: no second event, as for a single probe.
	if _, d := run(refundBody, orderMovedBody); len(d.Alerts) != 0 {
		t.Errorf("the second moved answer alerted %v; want the change announced once", alertKinds(d.Alerts))
	}

	// A reset of the probe resets its steps: verify learns afresh, so an
	// answer unlike any before is the first of a new baseline, not a
	// drift from the old one.
	if _, err := f.store.ResetProfile(ctx, stepsProbe, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(SilenceRefresh)
	before := len(f.drifts())
	run(refundBody, `{"refund":{"done":true}}`)
	if n := len(f.drifts()); n != before {
		t.Errorf("after a reset, a new answer drifted from the old baseline (%+v); want the reset to have emptied the step's baseline", f.drifts()[0])
	}
}

// TestStepsRunRecordedWhole: a run the engine makes of the lying refund
// desk is recorded and read back whole: its deciding step, each attempt's
// step and every step with the shape of its answer, counted under the
// step's key.
func TestStepsRunRecordedWhole(t *testing.T) {
	d := refunddesk.New()
	d.Lie = true
	p := refunddesk.Probe(t, refunddesk.Serve(t, d), nil)
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	res := runSteps(t, p)
	mustWrite(t, f.p, &res)
	got, err := f.store.Result(context.Background(), res.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != results.ProbeSteps || got.Step != "verify" || got.Code() != results.CodeClaimMismatch {
		t.Errorf("stored run: kind %s, step %q, code %s; want steps, verify, claim_mismatch", got.Kind, got.Step, got.Code())
	}
	if len(got.Attempts) != len(res.Attempts) || refunddesk.StepsOf(got) != refunddesk.StepsOf(res) {
		t.Errorf("stored attempts by step %s, want %s", refunddesk.StepsOf(got), refunddesk.StepsOf(res))
	}
	if refunddesk.StepVerdicts(got) != refunddesk.StepVerdicts(res) {
		t.Errorf("stored steps %s, want %s", refunddesk.StepVerdicts(got), refunddesk.StepVerdicts(res))
	}
	for i, st := range res.Steps {
		if (st.Shape == nil) != (got.Steps[i].Shape == nil) ||
			st.Shape != nil && st.Shape.Fingerprint != got.Steps[i].Shape.Fingerprint {
			t.Errorf("step %s: stored shape %+v, want %+v", st.Name, got.Steps[i].Shape, st.Shape)
		}
		if st.Shape == nil {
			continue
		}
		key := results.StepKey(res.Probe, st.Name)
		if seen, err := f.store.RecentShapes(context.Background(), key, res.StartedAt.Add(-time.Hour), 5); err != nil || len(seen) != 1 {
			t.Errorf("RecentShapes(%s): %+v, %v; want the step's one shape", key, seen, err)
		}
	}
}
