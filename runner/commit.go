package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/toolpulse/toolpulse/results"
)

// commit is the record-and-commit stage: the run as the stages judged it,
// its drift events, the probe's new alert state and its alerts go to the
// store in one transaction (results.RunRecord). What the stages learned
// (profiles, the tool definition, the alert state) takes effect only once
// the store has taken it, so that a failed commit leaves the next run to
// decide again instead of believing an alert went out. A record the store
// refuses for its fence (results.ErrFenced) is written again as a
// handover, and nothing the stages decided takes effect.
func (rc *Recorder) commit(ctx context.Context, run *recording) error {
	r := run.r
	rec := results.RunRecord{Result: *r, Alerts: run.alerts, Fence: run.fence}
	for _, d := range run.drifts {
		switch {
		case d.Kind == results.DriftDefinition:
			rec.DefinitionDrift = d
		case d.Step != "":
			rec.StepDrifts = append(rec.StepDrifts, d)
		default:
			rec.Drift = d
		}
	}
	cloned := false
	for _, a := range run.answers {
		if a.shape == nil {
			continue
		}
		if a.drift != nil {
			// The stored form of the answer's drift, which every run that
			// drifted keeps, event or not.
			a.shape.Baseline, a.shape.Drift = a.drift.Baseline, slices.Clone(a.drift.Diff)
		}
		if a.index < 0 {
			rec.Result.Shape = a.shape
			continue
		}
		if !cloned {
			rec.Result.Steps, cloned = slices.Clone(r.Steps), true
		}
		rec.Result.Steps[a.index].Shape = a.shape
	}
	if run.keepTool {
		rec.Result.Tool = &results.ToolDefinition{Fingerprint: r.Tool.Fingerprint}
	}
	if !run.known || !sameState(run.next, run.state) {
		next := run.next // copied only when it is written
		rec.AlertState = &next
	}

	if err := rc.store.RecordRun(ctx, &rec); errors.Is(err, results.ErrFenced) {
		// Deposed: a newer leader decides about this run's probe. The run
		// is history, and the daemon steps down.
		rc.logger.Warn("the store refused the run: a newer leader holds the lease; writing it as a handover",
			"probe", r.Probe, "operation_id", r.OperationID, "epoch", run.fence.Epoch)
		rc.fenced(run.fence)
		if err := rc.writeHandover(ctx, r); err != nil {
			return err
		}
		run.handedOver = true
		return nil
	} else if err != nil {
		rc.observer.StoreError("record_run")
		return fmt.Errorf("runner: record %s of %s: %w", r.OperationID, r.Probe, err)
	}
	for _, a := range run.answers {
		a.learn()
	}
	run.learnDefinition()
	rc.mu.Lock()
	rc.states.put(run.probe, run.next)
	rc.mu.Unlock()
	run.alerts = rec.Alerts
	return nil
}
