package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Validate checks a whole run record before a store writes any of it:
// what SPEC §1 and the stores' constraints require of a result, its steps,
// drifts and alerts. Both stores refuse, permanently, a record it rejects.
func (rec *RunRecord) Validate() error {
	r := &rec.Result
	if err := validate(r); err != nil {
		return fmt.Errorf("invalid result: %w", err)
	}
	if d := rec.Drift; d != nil {
		if err := validateDrift(d, r); err != nil {
			return fmt.Errorf("invalid drift: %w", err)
		}
		if d.KindOrResponse() != DriftResponse {
			return fmt.Errorf("invalid drift: kind %q, want %q (a definition drift is DefinitionDrift)", d.Kind, DriftResponse)
		}
		if d.Step != "" {
			return fmt.Errorf("invalid drift: step %q (a step's drift is one of StepDrifts)", d.Step)
		}
	}
	seen := map[string]bool{}
	for i, d := range rec.StepDrifts {
		if d == nil {
			return fmt.Errorf("invalid step drift %d: nil", i)
		}
		if err := validateDrift(d, r); err != nil {
			return fmt.Errorf("invalid step drift %d: %w", i, err)
		}
		switch {
		case d.KindOrResponse() != DriftResponse:
			return fmt.Errorf("invalid step drift %d: kind %q, want %q", i, d.Kind, DriftResponse)
		case d.Step == "":
			return fmt.Errorf("invalid step drift %d: no step", i)
		case seen[d.Step]:
			return fmt.Errorf("invalid step drift %d: a second drift of step %q", i, d.Step)
		}
		seen[d.Step] = true
	}
	if d := rec.DefinitionDrift; d != nil {
		if err := validateDrift(d, r); err != nil {
			return fmt.Errorf("invalid definition drift: %w", err)
		}
		if d.Kind != DriftDefinition || d.Step != "" {
			return fmt.Errorf("invalid definition drift: kind %q step %q, want kind %q and no step", d.Kind, d.Step, DriftDefinition)
		}
	}
	if st := rec.AlertState; st != nil {
		switch {
		case st.Probe != r.Probe:
			return fmt.Errorf("invalid alert state: probe %q, want the result's %q", st.Probe, r.Probe)
		case st.ConsecutiveFailures < 0:
			return fmt.Errorf("invalid alert state: %d consecutive failures", st.ConsecutiveFailures)
		case st.ConsecutivePasses < 0:
			return fmt.Errorf("invalid alert state: %d consecutive passes", st.ConsecutivePasses)
		case st.WindowRuns < 0 || st.WindowRuns > MaxWindowRuns:
			return fmt.Errorf("invalid alert state: a window of %d runs, want 0 to %d", st.WindowRuns, MaxWindowRuns)
		case len(st.VerdictChanges) > MaxFlapChanges+1:
			return fmt.Errorf("invalid alert state: %d verdict changes, want at most %d", len(st.VerdictChanges), MaxFlapChanges+1)
		}
	}
	for i := range rec.Alerts {
		if err := validateAlert(&rec.Alerts[i], rec); err != nil {
			return fmt.Errorf("invalid alert %d (%s): %w", i, rec.Alerts[i].Kind, err)
		}
	}
	return nil
}

func validateDrift(d *Drift, r *Result) error {
	switch {
	case d.Probe != r.Probe:
		return fmt.Errorf("probe %q, want the result's %q", d.Probe, r.Probe)
	case d.OperationID != r.OperationID:
		return fmt.Errorf("operation_id %q, want the result's %q", d.OperationID, r.OperationID)
	case d.DetectedAt.IsZero():
		return errors.New("zero detected_at")
	case d.Baseline == "" || d.Current == "":
		return errors.New("empty baseline or current fingerprint")
	case d.Baseline == d.Current:
		return fmt.Errorf("baseline and current are both %s", d.Current)
	}
	for _, line := range d.Diff {
		// Lines are stored joined by newlines; one inside a line would
		// come back as two. results/shape never writes one.
		if strings.Contains(line, "\n") {
			return fmt.Errorf("diff line %q contains a newline", line)
		}
	}
	return nil
}

func validateAlert(a *Alert, rec *RunRecord) error {
	switch a.Kind {
	case AlertFiring, AlertReminder, AlertUpdate, AlertResolved, AlertDrift, AlertFlapping, AlertLocationSilent, AlertLocationBack:
	default:
		return fmt.Errorf("unknown kind %q", a.Kind)
	}
	switch {
	case a.ID != 0:
		return fmt.Errorf("already stored as alert %d", a.ID)
	case a.Probe != rec.Result.Probe:
		return fmt.Errorf("probe %q, want the result's %q", a.Probe, rec.Result.Probe)
	case a.OperationID == "":
		return errors.New("empty operation_id")
	case a.CreatedAt.IsZero():
		return errors.New("zero created_at")
	case !a.Outcome.Valid():
		return fmt.Errorf("unknown outcome %q", a.Outcome)
	case (a.Outcome == Pass) != (a.Code == ""):
		return fmt.Errorf("outcome %s with code %q (a pass has none, a failure needs one)", a.Outcome, a.Code)
	case a.Attempts < 0 || a.Duration < 0 || a.DeliveryTries < 0:
		return errors.New("negative attempts, duration or delivery tries")
	case a.State != DeliveryPending && a.State != DeliverySkipped:
		return fmt.Errorf("state %q, want pending or skipped", a.State)
	case !a.DeliveredAt.IsZero():
		return errors.New("delivered_at set on an alert not yet delivered")
	case a.State == DeliverySkipped && !a.NextAttemptAt.IsZero():
		return errors.New("next attempt set on a skipped alert")
	case a.Kind == AlertDrift && len(rec.Drifts()) == 0:
		return errors.New("shape_drift alert without a drift in the run record")
	case a.Kind != AlertDrift && a.Drift != nil:
		return errors.New("drift set on an alert that is not shape_drift")
	case a.Drift != nil && !slices.ContainsFunc(rec.Drifts(), func(d *Drift) bool { return sameDrift(a.Drift, d) }):
		return errors.New("its drift is none of the run record's drifts")
	}
	return nil
}

func sameDrift(a, b *Drift) bool {
	if b == nil {
		return false
	}
	return a.KindOrResponse() == b.KindOrResponse() && a.Step == b.Step && a.Before == b.Before && a.After == b.After && a.Probe == b.Probe && a.OperationID == b.OperationID && a.DetectedAt.Equal(b.DetectedAt) &&
		a.Baseline == b.Baseline && a.Current == b.Current && slices.Equal(a.Diff, b.Diff)
}

// validate checks what the schema relies on, so that a bug upstream reads
// as a sentence rather than as a CHECK constraint failure.
func validate(r *Result) error {
	switch {
	case r.OperationID == "":
		return errors.New("empty operation_id")
	case r.Probe == "":
		return errors.New("empty probe")
	case !r.Outcome.Valid():
		return fmt.Errorf("unknown outcome %q", r.Outcome)
	case r.StartedAt.IsZero():
		return errors.New("zero started_at")
	case r.Duration < 0:
		return fmt.Errorf("negative duration %s", r.Duration)
	case r.Outcome == Pass && r.Error != nil:
		return fmt.Errorf("outcome pass with error %q", r.Error.Code)
	case r.Outcome != Pass && r.Error == nil:
		return fmt.Errorf("outcome %s without an error", r.Outcome)
	case r.Error != nil && r.Error.Code == "":
		return fmt.Errorf("outcome %s with an empty code", r.Outcome)
	case r.Kind != "" && !r.Kind.Valid():
		return fmt.Errorf("unknown probe kind %q", r.Kind)
	case (r.EffectiveKind() == ProbeMCP) != (r.MCP != nil):
		return fmt.Errorf("probe kind %s with MCP target %v: an MCP target comes exactly with kind mcp", r.EffectiveKind(), r.MCP)
	case r.MCP != nil && (r.MCP.Tool == "" || r.MCP.Server == ""):
		return errors.New("MCP target without a tool or server")
	case r.Shape != nil && (r.Shape.Fingerprint == "" || r.Shape.Canonical == ""):
		return errors.New("shape without fingerprint or canonical text")
	case r.Shape != nil && r.Shape.Profile != nil && r.Shape.Profile.Data == "":
		return errors.New("shape profile update without data")
	case r.Tool != nil && r.Tool.Fingerprint == "":
		return errors.New("tool definition without a fingerprint")
	case r.Tool != nil && r.Tool.Canonical != "" && !json.Valid([]byte(r.Tool.Canonical)):
		return errors.New("tool definition whose canonical text is not JSON")
	case r.Shape != nil && len(r.Shape.Sample) > ShapeSampleBytes:
		return fmt.Errorf("shape sample of %d bytes, over results.ShapeSampleBytes (%d)", len(r.Shape.Sample), ShapeSampleBytes)
	case r.Step != "" && (r.EffectiveKind() != ProbeSteps || r.Outcome == Pass):
		return fmt.Errorf("deciding step %q on a %s run of kind %s: only a steps probe's failed run has one", r.Step, r.Outcome, r.EffectiveKind())
	case len(r.Steps) > 0 && r.EffectiveKind() != ProbeSteps:
		return fmt.Errorf("%d steps on a run of kind %s", len(r.Steps), r.EffectiveKind())
	}
	for i := range r.Steps {
		if err := validateStep(&r.Steps[i]); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, r.Steps[i].Name, err)
		}
	}
	for i, a := range r.Attempts {
		switch {
		case a.Number < 1:
			return fmt.Errorf("attempt %d: number %d, want 1 or more", i, a.Number)
		case a.StartedAt.IsZero():
			return fmt.Errorf("attempt %d: zero started_at", a.Number)
		case a.Duration < 0 || a.Wait < 0:
			return fmt.Errorf("attempt %d: negative duration or wait", a.Number)
		case a.Try < 0:
			return fmt.Errorf("attempt %d: try %d, want 0 (the number) or more", a.Number, a.Try)
		case a.Poll < 0:
			return fmt.Errorf("attempt %d: poll %d, want 0 (no poll) or more", a.Number, a.Poll)
		}
	}
	return nil
}

// validateStep checks one step of a steps probe's run as validate checks
// the run.
func validateStep(st *StepResult) error {
	switch {
	case st.Name == "":
		return errors.New("empty name")
	case !st.Outcome.Valid():
		return fmt.Errorf("unknown outcome %q", st.Outcome)
	case st.StartedAt.IsZero():
		return errors.New("zero started_at")
	case st.Duration < 0 || st.Polls < 0:
		return errors.New("negative duration or polls")
	case (st.Outcome == Pass) != (st.Error == nil):
		return fmt.Errorf("outcome %s with error %v (a pass has none, a failure needs one)", st.Outcome, st.Error)
	case st.Error != nil && st.Error.Code == "":
		return fmt.Errorf("outcome %s with an empty code", st.Outcome)
	case st.Skipped && st.Outcome != Pass:
		return fmt.Errorf("skipped with outcome %s", st.Outcome)
	case st.Shape != nil && (st.Shape.Fingerprint == "" || st.Shape.Canonical == ""):
		return errors.New("shape without fingerprint or canonical text")
	case st.Shape != nil && st.Shape.Profile != nil && st.Shape.Profile.Data == "":
		return errors.New("shape profile update without data")
	case st.Shape != nil && len(st.Shape.Sample) > ShapeSampleBytes:
		return fmt.Errorf("shape sample of %d bytes, over results.ShapeSampleBytes (%d)", len(st.Shape.Sample), ShapeSampleBytes)
	}
	return nil
}
