package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
)

// judgedAnswer is one answer of a run as drift detection judged it
// against its learned profile (SPEC §5).
type judgedAnswer struct {
	step  string         // the step that answered; "" for the probe's own answer
	index int            // the step's index in Result.Steps; -1 for the probe's own
	shape *results.Shape // the shape to record, drift aside; nil: the run's own
	// drift is how the answer drifted, nil when it fitted. It is an event
	// (recorded as a drift, alerted) only when novel: a change is
	// announced once, on its first answer.
	drift *results.Drift
	novel bool
	// learn installs what was learned from the answer; never nil.
	learn func()
}

// judgeDrift is the drift stage. It judges each answer of the run, the
// probe's own and each step's (SPEC §11: each against its own profile, a
// step's kept under results.StepKey), and the tool definition an MCP run
// listed (SPEC §10). An answer the store could not judge is recorded
// without a drift event, logged; the next run tries again.
func (rc *Recorder) judgeDrift(ctx context.Context, run *recording) {
	r := run.r
	var stepErrs []error
	var stepDrifts []*results.Drift
	var buf [1]answer
	for _, a := range answersOf(r, buf[:0]) {
		j, err := rc.judgeAnswer(ctx, run, a)
		switch {
		case err != nil && a.step == "":
			rc.logger.Error("drift detection failed; recording the run without a drift event",
				"probe", r.Probe, "operation_id", r.OperationID, "error", err)
			rc.observer.StoreError("drift_lookup")
			continue
		case err != nil:
			stepErrs = append(stepErrs, fmt.Errorf("step %s: %w", a.step, err))
			continue
		}
		run.answers = append(run.answers, j)
		switch {
		case !j.novel:
		case a.step == "":
			run.drifts = append(run.drifts, j.drift)
		default:
			stepDrifts = append(stepDrifts, j.drift)
		}
	}
	if err := errors.Join(stepErrs...); err != nil {
		rc.logger.Error("step drift detection failed; recording those steps without a drift event",
			"probe", r.Probe, "operation_id", r.OperationID, "error", err)
		rc.observer.StoreError("drift_lookup")
	}
	defined, learn, err := rc.judgeDefinition(ctx, r, run.now)
	if err != nil {
		rc.logger.Error("definition drift detection failed; recording the run without its tool definition's text",
			"probe", r.Probe, "operation_id", r.OperationID, "error", err)
		rc.observer.StoreError("definition_lookup")
		run.keepTool = r.Tool != nil
	}
	if defined != nil {
		run.drifts = append(run.drifts, defined)
	}
	run.drifts = append(run.drifts, stepDrifts...)
	run.learnDefinition = learn
}

// answer is one answer of a run that has a shape to judge.
type answer struct {
	step  string
	index int // in Result.Steps; -1 for the probe's own answer
	shape *results.Shape
}

// answersOf appends to out r's answers to judge: the probe's own first,
// then its steps' in order; a single probe's run is the one-answer case.
func answersOf(r *results.Result, out []answer) []answer {
	if r.Shape != nil && r.Shape.Fingerprint != "" {
		out = append(out, answer{index: -1, shape: r.Shape})
	}
	for i, st := range r.Steps {
		if st.Shape != nil && st.Shape.Fingerprint != "" {
			out = append(out, answer{step: st.Name, index: i, shape: st.Shape})
		}
	}
	return out
}

// judgeAnswer judges a against its profile and learns it into a copy,
// which learn installs: a run whose commit fails, and is written again
// later, is not learned twice (except in the common run, below, whose
// learning only adds to counts). The common run, of a probe whose profile
// is in memory, costs no store read. An error means the store could not
// give the profile.
func (rc *Recorder) judgeAnswer(ctx context.Context, run *recording, a answer) (judgedAnswer, error) {
	out := judgedAnswer{step: a.step, index: a.index, learn: func() {}}
	key := run.probe
	if a.step != "" {
		key = results.StepKey(run.probe, a.step)
	}
	now := run.now
	rc.dropReset(ctx, now)
	e := rc.baselines.get(key)
	if e == nil {
		var err error
		if e, err = rc.loadProfile(ctx, key, now); err != nil {
			return out, err
		}
		rc.baselines.put(key, e)
	}
	cur, ok := a.shape.Structure.(shape.Shape)
	if !ok {
		// A result built outside the executor: its text is all there is.
		var err error
		if cur, err = shape.Parse(a.shape.Canonical); err != nil {
			rc.logger.Warn("run's shape does not parse; drift not judged", "probe", key,
				"fingerprint", a.shape.Fingerprint, "error", err)
			return out, nil
		}
	}

	sh := *a.shape
	sh.Structure = nil
	out.shape = &sh
	// Objects whose keys the profile learned are data are recorded as
	// the maps they are, so that their fingerprint does not change with
	// every answer.
	if c := e.profile.Canonical(cur); c.Fingerprint() != cur.Fingerprint() {
		cur = c
		sh.Fingerprint, sh.Canonical = c.Fingerprint(), c.String()
	}
	base := e.profile.Base()
	var (
		next    *shape.Profile
		report  shape.Report
		changed bool
	)
	if e.profile.Established() && base == sh.Fingerprint && now.Sub(e.profile.Last()) < shape.ProfileWindow {
		// The common run: the latest fitting shape fits again.
		next = e.profile
		changed = next.LearnFit(cur, now)
	} else {
		next = e.profile.Clone()
		report, changed = next.Observe(cur, now)
	}
	if report.Lines != nil {
		baseline := base
		if baseline == "" || baseline == sh.Fingerprint {
			baseline = e.profile.Learned().Fingerprint()
		}
		out.drift = &results.Drift{
			Kind:        results.DriftResponse,
			Probe:       run.probe,
			Step:        a.step,
			OperationID: run.r.OperationID,
			DetectedAt:  now,
			Baseline:    baseline,
			Current:     sh.Fingerprint,
			Diff:        slices.Clone(report.Lines),
		}
		out.novel = report.Novel && baseline != sh.Fingerprint
	}
	save := changed || e.savedAt.IsZero() || now.Sub(e.savedAt) >= profileFlush || now.Before(e.savedAt)
	if save {
		data, err := json.Marshal(next)
		if err != nil {
			return judgedAnswer{step: a.step, index: a.index, learn: func() {}}, fmt.Errorf("profile of %s: %w", key, err)
		}
		sh.Profile = &results.ProfileUpdate{Data: string(data), Answers: next.Answers(), ResetAt: e.resetAt}
	}
	out.learn = func() {
		e.profile = next
		if save {
			e.savedAt = now
		}
	}
	return out, nil
}
