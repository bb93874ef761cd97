package runner

import (
	"slices"

	"github.com/toolpulse/toolpulse/results"
)

// observe is the observe stage, once the run is committed: each drift
// event is counted and each alert logged.
func (rc *Recorder) observe(run *recording) {
	for _, d := range run.drifts {
		rc.observer.DriftDetected(d)
	}
	rc.logEnqueued(run.alerts)
}

// finished counts a written run and wakes the deliverer when it enqueued
// alerts to deliver. Record calls it for a run written at once, the write
// queue for a run written late.
func finished(o Observer, wake func(), r *results.Result, d Decision) {
	o.RunFinished(r)
	if slices.ContainsFunc(d.Alerts, func(a results.Alert) bool { return a.State == results.DeliveryPending }) {
		wake()
	}
}

// logEnqueued logs each alert a run recorded, with why it was skipped
// when it was.
func (rc *Recorder) logEnqueued(alerts []results.Alert) {
	for _, a := range alerts {
		attrs := []any{"probe", a.Probe, "kind", a.Kind, "alert_id", a.ID, "state", a.State,
			"operation_id", a.OperationID, "outcome", a.Outcome}
		if a.Receiver != "" {
			attrs = append(attrs, "receiver", a.Receiver)
		}
		if a.LastError != "" {
			attrs = append(attrs, "reason", a.LastError) // why it was skipped
		}
		if a.Code != "" {
			attrs = append(attrs, "code", a.Code)
		}
		if a.Drift != nil {
			attrs = append(attrs, "drift_kind", a.Drift.KindOrResponse(), "baseline", a.Drift.Baseline, "current", a.Drift.Current)
			if a.Drift.Step != "" {
				attrs = append(attrs, "step", a.Drift.Step)
			}
		}
		rc.logger.Info("alert enqueued", attrs...)
	}
}
