package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
)

// Drift detection (SPEC §5) judges each answer against its probe's learned
// shape profile (shape.Profile: how it is learned, what drifts, what is
// novel). The profile lives in memory, read from the store once per probe,
// and is saved with the runs that change it.
const (
	// driftMinObservations is how many answers establish a probe's
	// profile before any answer can drift.
	driftMinObservations = shape.ProfileWarmup
	// profileFlush is how long a profile whose counts changed, but not
	// what it has learned, may go unsaved: a restart loses at most this
	// much of its counting.
	profileFlush = 10 * time.Minute
	// carriedShapes bounds the shapes a probe recorded before profiles
	// existed that its first profile is built from.
	carriedShapes = 64
	// maxCachedProfiles bounds the profile cache: probes removed by
	// reloads leave entries behind, and the cache only saves a read.
	maxCachedProfiles = 1 << 16
)

// profileEntry is one probe's profile as the Recorder keeps it.
type profileEntry struct {
	profile *shape.Profile
	resetAt time.Time // the reset it was learned after; zero: none
	savedAt time.Time // when it was last written; zero: never
}

// profileCache keeps each probe's profile and notices resets made by
// `toolpulse baseline reset`. Entries of one probe are only used under the
// Recorder's lock of that probe; the mutex guards the map.
type profileCache struct {
	mu           sync.Mutex
	entries      map[string]*profileEntry
	resetsReadAt time.Time // zero: never read
}

func (c *profileCache) get(probe string) *profileEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[probe]
}

func (c *profileCache) put(probe string, e *profileEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxCachedProfiles {
		c.entries = make(map[string]*profileEntry)
	}
	c.entries[probe] = e
}

// dropReset forgets the entries of probes reset after their profile was
// learned (and their last tool definition), at most every SilenceRefresh: a reset takes effect within that
// long, and reading the resets costs one query for every probe together.
func (rc *Recorder) dropReset(ctx context.Context, now time.Time) {
	c := &rc.baselines
	c.mu.Lock()
	due := c.resetsReadAt.IsZero() || now.Sub(c.resetsReadAt) >= SilenceRefresh || now.Before(c.resetsReadAt)
	if due {
		c.resetsReadAt = now
	}
	c.mu.Unlock()
	if !due {
		return
	}
	resets, err := rc.store.ProfileResets(ctx, time.Time{})
	if err != nil {
		rc.logger.Error("reading baseline resets failed; trying again in a few seconds", "error", err)
		rc.observer.StoreError("profile_resets")
		return
	}
	rc.definitions.dropReset(resets)
	c.mu.Lock()
	defer c.mu.Unlock()
	for probe, at := range resets {
		if e := c.entries[probe]; e != nil && !e.resetAt.Equal(at) {
			delete(c.entries, probe)
		}
	}
}

// driftOutcome is what drift detection decided about a run.
type driftOutcome struct {
	// drift is the event to record and alert: the first answer of a real
	// change. nil otherwise.
	drift *results.Drift
	// shape is the run's shape as it is to be recorded: with the drift
	// lines and the profile to save. nil: the run's own.
	shape *results.Shape
	// commit makes what was learned from the run the probe's profile in
	// memory; call it once the run is recorded. Never nil.
	commit func()
}

// detectDrift judges r's answer against its probe's profile (SPEC §5) and
// learns it. On every drifted answer it sets d.Baseline and d.Drift; it
// returns a drift event only for a novel drift (an answer showing what no
// answer showed before), which is what gets a row and an alert: a change
// is announced once, on its first answer, and its next answers drift
// without a new event until the profile has learned them.
//
// The common run, of a probe whose profile is in memory, costs no store
// read; the first run of a probe after a start reads its profile once.
// Learning goes into a copy, which commit installs: a run that fails to
// be recorded, and is recorded again later, is not learned twice (except
// the common run, in the shape of the latest fitting answer, whose
// learning only adds to counts).
//
// An error means the store could not answer; the run is recorded without
// drift detection and the next run tries again.
func (rc *Recorder) detectDrift(ctx context.Context, r *results.Result, now time.Time, d *Decision) (driftOutcome, error) {
	if r.Shape == nil || r.Shape.Fingerprint == "" {
		return driftOutcome{commit: func() {}}, nil
	}
	out, err := rc.judgeShape(ctx, r.Probe, "", r.OperationID, r.Shape, now)
	if out.shape != nil && len(out.shape.Drift) > 0 {
		d.Baseline, d.Drift = out.shape.Baseline, slices.Clone(out.shape.Drift)
	}
	return out, err
}

// stepDrifts is what drift detection decided about a steps probe's run.
type stepDrifts struct {
	// drifts are the events to record and alert, one per step whose
	// answer changed novelly, each naming its step.
	drifts []*results.Drift
	// steps are the run's steps as they are to be recorded, each judged
	// shape with its drift lines and profile; nil: the run's own.
	steps []results.StepResult
	// commit installs what was learned from every step; never nil.
	commit func()
}

// detectStepDrifts judges the answer of each of r's steps that has a
// shape against that step's own profile, kept under results.StepKey
// (SPEC §11: each step's answer has its own baseline), exactly as
// detectDrift judges a single probe's answer. A step whose profile the
// store could not give is recorded unjudged; the others are judged all the
// same, and the errors come back joined.
func (rc *Recorder) detectStepDrifts(ctx context.Context, r *results.Result, now time.Time) (stepDrifts, error) {
	out := stepDrifts{commit: func() {}}
	var (
		commits []func()
		errs    []error
	)
	for i, st := range r.Steps {
		if st.Shape == nil || st.Shape.Fingerprint == "" {
			continue
		}
		judged, err := rc.judgeShape(ctx, r.Probe, st.Name, r.OperationID, st.Shape, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("step %s: %w", st.Name, err))
			continue
		}
		if judged.shape != nil {
			if out.steps == nil {
				out.steps = slices.Clone(r.Steps)
			}
			out.steps[i].Shape = judged.shape
		}
		if judged.drift != nil {
			out.drifts = append(out.drifts, judged.drift)
		}
		commits = append(commits, judged.commit)
	}
	out.commit = func() {
		for _, c := range commits {
			c()
		}
	}
	return out, errors.Join(errs...)
}

// judgeShape judges answer, the shape of the answer of probe's run
// operationID, or of its step step ("" for a single probe), against the
// profile of the probe, or of the step (kept under results.StepKey), and
// learns it. See detectDrift.
func (rc *Recorder) judgeShape(ctx context.Context, probe, step, operationID string, answer *results.Shape, now time.Time) (driftOutcome, error) {
	out := driftOutcome{commit: func() {}}
	key := probe
	if step != "" {
		key = results.StepKey(probe, step)
	}
	rc.dropReset(ctx, now)
	e := rc.baselines.get(key)
	if e == nil {
		var err error
		if e, err = rc.loadProfile(ctx, key, now); err != nil {
			return out, err
		}
		rc.baselines.put(key, e)
	}
	cur, ok := answer.Structure.(shape.Shape)
	if !ok {
		// A result built outside the executor: its text is all there is.
		var err error
		if cur, err = shape.Parse(answer.Canonical); err != nil {
			rc.logger.Warn("run's shape does not parse; drift not judged", "probe", key,
				"fingerprint", answer.Fingerprint, "error", err)
			return out, nil
		}
	}

	sh := *answer
	sh.Structure = nil
	out.shape = &sh
	// Objects whose keys the profile learned are data are recorded as
	// the maps they are, so that their fingerprint, and the shapes table,
	// do not change with every answer.
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
		// The common run: the shape of the latest answer that fitted. It
		// fits again, and learning it only counts (a run that fails to be
		// recorded and comes back counts twice, which changes nothing
		// that matters), so it is learned in place.
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
		sh.Baseline, sh.Drift = baseline, slices.Clone(report.Lines)
		if report.Novel && baseline != sh.Fingerprint {
			out.drift = &results.Drift{
				Kind:        results.DriftResponse,
				Probe:       probe,
				Step:        step,
				OperationID: operationID,
				DetectedAt:  now,
				Baseline:    baseline,
				Current:     sh.Fingerprint,
				Diff:        slices.Clone(report.Lines),
			}
		}
	}
	save := changed || e.savedAt.IsZero() || now.Sub(e.savedAt) >= profileFlush || now.Before(e.savedAt)
	if save {
		data, err := json.Marshal(next)
		if err != nil {
			return driftOutcome{commit: func() {}}, fmt.Errorf("profile of %s: %w", key, err)
		}
		sh.Profile = &results.ProfileUpdate{Data: string(data), Answers: next.Answers(), ResetAt: e.resetAt}
	}
	out.commit = func() {
		e.profile = next
		if save {
			e.savedAt = now
		}
	}
	return out, nil
}

// loadProfile reads probe's profile from the store. A probe with no
// profile row but with runs recorded before profiles existed starts from
// the shapes of its last ProfileWindow of runs, each learned as often as
// it was seen (up to the warm-up), so an upgrade neither warms up again
// nor alerts on what the probe already answered. A stored profile that
// cannot be read is logged and started afresh.
func (rc *Recorder) loadProfile(ctx context.Context, probe string, now time.Time) (*profileEntry, error) {
	sp, found, err := rc.store.ShapeProfile(ctx, probe)
	if err != nil {
		return nil, fmt.Errorf("shape profile of %s: %w", probe, err)
	}
	e := &profileEntry{profile: &shape.Profile{}, resetAt: sp.ResetAt}
	if found {
		if sp.Data != "" {
			if err := json.Unmarshal([]byte(sp.Data), e.profile); err != nil {
				rc.logger.Warn("stored shape profile does not read; learning a new one", "probe", probe, "error", err)
				e.profile = &shape.Profile{}
			} else {
				e.savedAt = now
			}
		}
		return e, nil
	}
	seen, err := rc.store.RecentShapes(ctx, probe, now.Add(-shape.ProfileWindow), carriedShapes)
	if err != nil {
		return nil, fmt.Errorf("recent shapes of %s: %w", probe, err)
	}
	slices.SortStableFunc(seen, func(a, b results.ShapeSeen) int { return a.LastSeen.Compare(b.LastSeen) })
	for _, s := range seen {
		parsed, err := shape.Parse(s.Canonical)
		if err != nil {
			rc.logger.Warn("stored shape does not parse; left out of the first profile", "probe", probe,
				"fingerprint", s.Fingerprint, "error", err)
			continue
		}
		parsed = shape.Collapse(parsed)
		for range min(s.Runs, shape.ProfileWarmup) {
			e.profile.Learn(parsed, s.LastSeen)
		}
	}
	return e, nil
}
