package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// PipelineOptions are a Pipeline's dependencies. Every field is optional.
type PipelineOptions struct {
	Logger *slog.Logger     // nil: discard
	Now    func() time.Time // nil: time.Now
	// Deliver says whether alerts go to a receiver. false (no Slack
	// configured): alerts are still recorded, in the skipped state, so
	// that the alerts table tells what would have been sent.
	Deliver bool
	// Observer is told of drift events and store failures; nil: none.
	Observer Observer
}

// processTimeout bounds the store work of one Process call. It replaces the
// caller's cancellation, see Process.
const processTimeout = 15 * time.Second

// Pipeline is what happens to a finished run: drift detection, the alert
// policy and recording, in that order, with the probe's alert state kept in
// memory between runs and persisted with each of them. It never talks to
// the alert receiver; alerts go to the store's outbox, which a Deliverer
// drains, so a slow or dead Slack never holds up a run.
//
// A Pipeline is safe for concurrent use by runs of different probes.
type Pipeline struct {
	observer  Observer
	store     Store
	logger    *slog.Logger
	now       func() time.Time
	shapes    shapeCache
	baselines baselineCache

	mu      sync.RWMutex // guards notify, deliver and states
	notify  checks.Notify
	deliver bool
	states  map[string]results.AlertState

	locksMu sync.Mutex
	locks   map[string]*sync.Mutex // one per probe, see lockProbe
}

// NewPipeline returns a Pipeline that records into store and alerts as
// notify says. Call Load before the first Process.
func NewPipeline(store Store, notify checks.Notify, opts PipelineOptions) *Pipeline {
	p := &Pipeline{
		store:    store,
		logger:   opts.Logger,
		now:      opts.Now,
		notify:   notify,
		deliver:  opts.Deliver,
		observer: observerOr(opts.Observer),
		states:   map[string]results.AlertState{},
		locks:    map[string]*sync.Mutex{},
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p
}

// Load reads the persisted alert state of every probe, so that a restart
// neither alerts again on a failure it already announced nor forgets to
// resolve it. Call it once, before the first Process; a probe that Process
// has already seen keeps its in-memory state, which is newer.
func (p *Pipeline) Load(ctx context.Context) error {
	states, err := p.store.AlertStates(ctx)
	if err != nil {
		return fmt.Errorf("runner: load alert states: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for probe, st := range states {
		if _, ok := p.states[probe]; !ok {
			p.states[probe] = st
		}
	}
	return nil
}

// SetNotify replaces the alerting configuration after a config reload;
// deliver is false when no receiver is configured. Runs already being
// processed finish with the configuration they started with. Alert states
// are kept: a failure announced before the reload is not announced again.
func (p *Pipeline) SetNotify(n checks.Notify, deliver bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify, p.deliver = n, deliver
}

// Process detects drift in r, applies the alert policy and records r with
// its drift event, the probe's new alert state and its alerts in one store
// transaction. When the run drifted it sets r.Shape.Baseline and
// r.Shape.Drift, on every drifted run and not only on the one that is
// alerted, because the run's envelope shows them. It returns the alerts it
// recorded, with their IDs: pending ones for the Deliverer (call its Wake),
// or skipped ones when delivery is off.
//
// The store work ignores ctx's cancellation, within a bound of its own:
// the run is over, and a shutdown that drains in-flight runs must not lose
// their results. ctx's values still reach the store.
//
// A store failure during drift detection is logged and the run recorded
// without a drift event; the next drifted run tries again. If recording
// fails, Process returns the error and the probe's alert state does not
// advance, so that the next run decides again instead of believing an
// alert went out. Calls for the same probe are serialized.
func (p *Pipeline) Process(ctx context.Context, r *results.Result) ([]results.Alert, error) {
	if r == nil {
		return nil, errors.New("runner: process: nil result")
	}
	defer p.lockProbe(r.Probe)()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), processTimeout)
	defer cancel()

	p.mu.RLock()
	notify, deliver := p.notify, p.deliver
	st, known := p.states[r.Probe]
	p.mu.RUnlock()
	now := p.now()

	var rec results.RunRecord
	drift, err := p.detectDrift(ctx, r, now)
	if err != nil {
		p.logger.Error("drift detection failed; recording the run without a drift event",
			"probe", r.Probe, "operation_id", r.OperationID, "error", err)
		p.observer.StoreError("drift_lookup")
	}
	if drift != nil {
		rec.Drift = drift
		if notifies(notify, notifyShapeDrift) {
			a := results.NewAlert(results.AlertDrift, r, now)
			a.Drift = drift
			rec.Alerts = append(rec.Alerts, a)
		}
	}
	next, alerts := decide(notify, st, r, now)
	rec.Alerts = append(rec.Alerts, alerts...)
	for i := range rec.Alerts {
		a := &rec.Alerts[i]
		if deliver {
			a.State, a.NextAttemptAt = results.DeliveryPending, now
		} else {
			a.State = results.DeliverySkipped
		}
	}
	if !known || !sameState(next, st) {
		rec.AlertState = &next
	}
	rec.Result = *r

	if err := p.store.RecordRun(ctx, &rec); err != nil {
		p.observer.StoreError("record_run")
		return nil, fmt.Errorf("runner: record %s of %s: %w", r.OperationID, r.Probe, err)
	}
	p.mu.Lock()
	p.states[r.Probe] = next
	p.mu.Unlock()
	if rec.Drift != nil {
		p.observer.DriftDetected(rec.Drift)
	}

	for _, a := range rec.Alerts {
		attrs := []any{"probe", a.Probe, "kind", a.Kind, "alert_id", a.ID, "state", a.State,
			"operation_id", a.OperationID, "outcome", a.Outcome}
		if a.Code != "" {
			attrs = append(attrs, "code", a.Code)
		}
		if a.Drift != nil {
			attrs = append(attrs, "baseline", a.Drift.Baseline, "current", a.Drift.Current)
		}
		p.logger.Info("alert enqueued", attrs...)
	}
	return rec.Alerts, nil
}

// lockProbe locks probe's mutex and returns its unlock. The scheduler never
// overlaps runs of one probe, but the alert state is read at the start of
// Process and written at its end, so an overlap would lose an update; the
// lock makes that impossible rather than merely unlikely.
func (p *Pipeline) lockProbe(probe string) (unlock func()) {
	p.locksMu.Lock()
	m, ok := p.locks[probe]
	if !ok {
		m = new(sync.Mutex)
		p.locks[probe] = m
	}
	p.locksMu.Unlock()
	m.Lock()
	return m.Unlock
}
