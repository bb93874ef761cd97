package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

const (
	fpRefund = "3333333333333333"
	fpOrder  = "4444444444444444"
)

// stepsRun is the order-31 drill of SPEC §11: the refund step answered a
// clean success, the verification found the order unrefunded after three
// polls, and the always clean-up ran and passed. Attempts name their step;
// the run's own shape is nil, each step's answer has one.
func stepsRun(id string) results.Result {
	at := t0.Add(5 * time.Minute)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	msg := `step verify: claim false after 3 polls: state: "pending"`
	return results.Result{
		OperationID: id,
		Probe:       "refund_order_31",
		Kind:        results.ProbeSteps,
		StartedAt:   at,
		Duration:    ms(2140),
		Outcome:     results.ContractError,
		Error:       &results.Error{Code: results.CodeClaimMismatch, Message: msg},
		Step:        "verify",
		Attempts: []results.Attempt{
			{Number: 1, StartedAt: at, Duration: ms(20), HTTPStatus: 201, Step: "refund"},
			{Number: 2, StartedAt: at.Add(ms(30)), Duration: ms(8), HTTPStatus: 200, Step: "verify"},
			{Number: 3, StartedAt: at.Add(ms(1040)), Duration: ms(9), HTTPStatus: 200, Step: "verify"},
			{Number: 4, StartedAt: at.Add(ms(2050)), Duration: ms(7), HTTPStatus: 200, Step: "verify",
				Code: results.CodeClaimMismatch, Message: msg},
			{Number: 5, StartedAt: at.Add(ms(2100)), Duration: ms(6), HTTPStatus: 204, Step: "cleanup"},
		},
		HTTPStatus: 200,
		Consumer:   consumer,
		Steps: []results.StepResult{
			{Name: "refund", Outcome: results.Pass, StartedAt: at, Duration: ms(20),
				Shape: &results.Shape{Fingerprint: fpRefund, Canonical: "shape refund"}},
			{Name: "verify", Outcome: results.ContractError, StartedAt: at.Add(ms(30)), Duration: ms(2027), Polls: 3,
				Error: &results.Error{Code: results.CodeClaimMismatch, Message: msg},
				Shape: &results.Shape{Fingerprint: fpOrder, Canonical: "shape order",
					Baseline: "5555555555555555", Drift: []string{"order: absent -> object"}}},
			{Name: "cleanup", Outcome: results.Pass, StartedAt: at.Add(ms(2100)), Duration: ms(6), Always: true},
			{Name: "notify", Outcome: results.Pass, StartedAt: at.Add(ms(2107)), Always: true, Skipped: true},
		},
	}
}

// recordStepsRun: a steps probe's run reads back whole, its deciding step,
// its attempts' steps and its steps included, from every read; each step's
// shape is counted under the step's key, not the probe's; a deciding step
// on a pass is refused.
func recordStepsRun(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	r := stepsRun("op-steps")
	single := passAfterRetry("op-single")
	record(t, s, r, single)
	got, err := s.Result(ctx, r.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("Result:\n got  %s\n want %s", dump(got), dump(r))
	}
	hist, err := s.History(ctx, results.HistoryQuery{})
	if err != nil || len(hist) != 2 {
		t.Fatalf("History: %d results, %v; want 2", len(hist), err)
	}
	if !reflect.DeepEqual(hist[0], r) {
		t.Errorf("History[0]:\n got  %s\n want %s", dump(hist[0]), dump(r))
	}
	if hist[1].Steps != nil || hist[1].Step != "" {
		t.Errorf("History of a single probe: steps %+v, step %q; want none", hist[1].Steps, hist[1].Step)
	}
	latest, err := s.Latest(ctx)
	if err != nil || len(latest) != 2 || !reflect.DeepEqual(latest[1], r) {
		t.Errorf("Latest: got %+v, %v; want the steps run whole", latest, err)
	}
	runs, err := s.RecordedRuns(ctx, r.Probe)
	if err != nil || len(runs) != 1 || !reflect.DeepEqual(runs[0], r) {
		t.Errorf("RecordedRuns: got %+v, %v; want the steps run whole", runs, err)
	}

	for key, want := range map[string]string{
		results.StepKey(r.Probe, "refund"): fpRefund,
		results.StepKey(r.Probe, "verify"): fpOrder,
	} {
		seen, err := s.RecentShapes(ctx, key, r.StartedAt.Add(-time.Hour), 10)
		if err != nil || len(seen) != 1 || seen[0].Fingerprint != want {
			t.Errorf("RecentShapes(%s): got %+v, %v; want %s once", key, seen, err, want)
		}
	}
	if seen, err := s.RecentShapes(ctx, r.Probe, r.StartedAt.Add(-time.Hour), 10); err != nil || len(seen) != 0 {
		t.Errorf("RecentShapes(%s): got %+v, %v; want none: the run's answers are its steps'", r.Probe, seen, err)
	}

	bad := stepsRun("op-bad")
	bad.Outcome, bad.Error = results.Pass, nil
	bad.Steps[1].Outcome, bad.Steps[1].Error = results.Pass, nil
	if err := s.RecordRun(ctx, &results.RunRecord{Result: bad}); err == nil || !permanent(err) {
		t.Errorf("a pass with a deciding step: got %v, want a permanent refusal", err)
	}
	if _, err := s.Result(ctx, "op-bad"); !errors.Is(err, impl.ErrNotFound) {
		t.Errorf("the refused run was stored: %v", err)
	}
}

// recordStepDrift: each step's drift is stored with its step, its alert
// linked to it and not to another step's; a reset of the probe resets its
// steps' profiles and leaves other probes' alone.
func recordStepDrift(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	r := stepsRun("op-step-drift")
	r.Steps[0].Shape.Profile = &results.ProfileUpdate{Data: `{"answers":9}`, Answers: 9}
	r.Steps[1].Shape.Profile = &results.ProfileUpdate{Data: `{"answers":8}`, Answers: 8}
	detected := r.StartedAt.Add(3 * time.Second)
	drift := func(step, baseline, current string) *results.Drift {
		return &results.Drift{Kind: results.DriftResponse, Probe: r.Probe, OperationID: r.OperationID,
			DetectedAt: detected, Baseline: baseline, Current: current, Diff: driftDiff, Step: step}
	}
	verify, refund := drift("verify", "5555555555555555", fpOrder), drift("refund", "6666666666666666", fpRefund)
	var alerts []results.Alert
	for _, d := range []*results.Drift{verify, refund} {
		a := results.NewAlert(results.AlertDrift, &r, detected)
		a.Drift = d
		alerts = append(alerts, a)
	}
	rec := &results.RunRecord{Result: r, StepDrifts: []*results.Drift{verify, refund}, Alerts: alerts}
	recordRun(t, s, rec)

	ds, err := s.Drifts(ctx, r.Probe, time.Time{}, 0)
	if want := []results.Drift{*refund, *verify}; err != nil || !reflect.DeepEqual(ds, want) {
		t.Errorf("Drifts:\n got  %+v, %v\n want %+v", ds, err, want)
	}
	if all := storedAlerts(t, s); !reflect.DeepEqual(all, rec.Alerts) {
		t.Errorf("Alerts:\n got  %+v\n want %+v", all, rec.Alerts)
	}

	other := shapedRun("op-other", "refund_order_3", fpList, r.StartedAt)
	other.Shape.Profile = &results.ProfileUpdate{Data: `{"answers":7}`, Answers: 7}
	record(t, s, other)
	verifyKey := results.StepKey(r.Probe, "verify")
	if p, found, err := s.ShapeProfile(ctx, verifyKey); err != nil || !found || p.Answers != 8 {
		t.Fatalf("ShapeProfile(%s): %+v, found %v, %v; want the step's own", verifyKey, p, found, err)
	}
	resetAt := r.StartedAt.Add(time.Hour)
	if had, err := s.ResetProfile(ctx, r.Probe, resetAt); err != nil || !had {
		t.Fatalf("ResetProfile: had %v, %v", had, err)
	}
	for _, key := range []string{verifyKey, results.StepKey(r.Probe, "refund")} {
		p, found, err := s.ShapeProfile(ctx, key)
		if err != nil || !found || p.Data != "" || p.Answers != 0 || !p.ResetAt.Equal(resetAt) {
			t.Errorf("ShapeProfile(%s) after a reset of %s: %+v, found %v, %v; want it reset", key, r.Probe, p, found, err)
		}
	}
	if p, _, err := s.ShapeProfile(ctx, "refund_order_3"); err != nil || p.Answers != 7 || !p.ResetAt.IsZero() {
		t.Errorf("ShapeProfile of another probe after the reset: %+v, %v; want it untouched", p, err)
	}
	resets, err := s.ProfileResets(ctx, time.Time{})
	if err != nil || !resets[verifyKey].Equal(resetAt) {
		t.Errorf("ProfileResets: got %v, %v; want %s listed", resets, err, verifyKey)
	}

	bad := stepsRun("op-bad")
	bad.Steps[1].Shape = nil
	d := drift("", "5555555555555555", fpOrder)
	d.OperationID = "op-bad"
	if err := s.RecordRun(ctx, &results.RunRecord{Result: bad, StepDrifts: []*results.Drift{d}}); err == nil || !permanent(err) {
		t.Errorf("a step drift without a step: got %v, want a permanent refusal", err)
	}
}

// pruneSteps: retention deletes a steps run's steps with it, and then the
// shapes only its steps referred to.
func pruneSteps(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	r := stepsRun("op-old-steps")
	record(t, s, r)
	n, err := s.Prune(ctx, r.StartedAt.Add(30*time.Hour), 100)
	if err != nil || n != 1 {
		t.Fatalf("Prune: %d, %v; want 1", n, err)
	}
	if _, err := s.Result(ctx, r.OperationID); !errors.Is(err, impl.ErrNotFound) {
		t.Errorf("Result after prune: %v, want not found", err)
	}
	// The same operation id can be recorded again: nothing of it is left.
	record(t, s, stepsRun(r.OperationID))
	got, err := s.Result(ctx, r.OperationID)
	if err != nil || len(got.Steps) != len(r.Steps) {
		t.Errorf("Result of the run recorded again: %d steps, %v; want %d", len(got.Steps), err, len(r.Steps))
	}
}
