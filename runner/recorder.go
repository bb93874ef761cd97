package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// RecorderOptions are a Recorder's dependencies. Every field is optional.
type RecorderOptions struct {
	Logger *slog.Logger // nil: discard
	// Deliver says whether alerts go to their receivers at all. false
	// (nothing to send with): alerts are still recorded, in the skipped
	// state, so that the alerts table tells what would have been sent. A
	// probe whose route has no receiver (the default route without Slack)
	// has its alerts skipped either way.
	Deliver bool
	// Labels are each probe's labels, by probe name: they choose its route
	// and travel with its alerts. nil: no probe has labels.
	Labels map[string]map[string]string
	// Targets are what each probe calls, by probe name: its alerts name
	// it (see probeTargets). nil: an MCP probe's alerts name the tool and
	// server its run reports, others none.
	Targets map[string]probeTarget
	// Observer is told of every recorded run, drift event, store failure
	// and dropped run; nil: none.
	Observer Observer
	// Wake is called when a recorded run enqueued alerts to deliver (the
	// deliverer's Wake); nil: none.
	Wake func()
	// WriteQueue is how many runs may wait in memory to be written while
	// the store fails. 0 or less: defaultWriteQueue.
	WriteQueue int
	// Clock dates the alert policy's decisions (repeat intervals, drift
	// windows) and times the write queue's back-off; nil: the real clock.
	Clock clockwork.Clock
	// Rand returns a number in [0,1) that jitters the write queue's
	// back-off; nil: math/rand/v2.
	Rand func() float64
	// Redact scrubs secrets from a panic's text before it is logged; nil:
	// nothing to scrub.
	Redact func(string) string
	// Silences are read, at most every SilenceRefresh on Clock, to decide
	// whether a probe's alerts are muted; nil: nothing is ever silenced.
	Silences Silences
}

// SilenceRefresh is how long the Recorder uses the silences it read
// before reading them again: a silence added or expired takes effect
// within this long.
const SilenceRefresh = 5 * time.Second

// recordTimeout bounds the recording of one run. A run is over when it is
// recorded, and a shutdown that drains the runs in flight must not lose
// them, so recording ignores the run's cancellation (see Record); it needs
// a bound of its own.
const recordTimeout = 15 * time.Second

// Recorder owns what happens to a finished run: drift detection, the
// alert policy and recording, in that order, in one store transaction,
// with the probe's alert state kept in memory between runs and persisted
// with each of them; and, when the store cannot take a run, the write
// queue (see writeQueue), which keeps the runs in order and writes them
// once it can. It never talks to the alert receiver: alerts go to the
// store's outbox, which a deliverer drains, so a slow or dead Slack never
// holds up a run.
//
// Record is the one entry point. Run writes the queue and must be running
// for queued runs to be written; Drain empties it at shutdown. A Recorder
// is safe for concurrent use by runs of different probes.
type Recorder struct {
	observer  Observer
	store     Store
	logger    *slog.Logger
	now       func() time.Time
	wake      func()
	baselines profileCache // each probe's learned shape profile
	// definitions is each MCP probe's last tool definition
	definitions definitionCache
	queue       *writeQueue

	mu      sync.RWMutex // guards notify, labels, targets, deliver and states
	notify  checks.Notify
	labels  map[string]map[string]string // by probe: routes and silences match them
	targets map[string]probeTarget       // by probe: what its alerts say it called
	deliver bool
	states  map[string]results.AlertState
	redact  func(string) string

	locksMu sync.Mutex
	locks   map[string]*sync.Mutex // one per probe, see lockProbe

	silences *silenceCache // nil: nothing is silenced
}

// Decision is what the Recorder decided about a recorded run.
type Decision struct {
	// Baseline is the fingerprint of the shape the run drifted from, and
	// Drift its diff lines (SPEC §5 wording), on every drifted run and not
	// only on the one that is alerted; both are empty when it did not
	// drift.
	Baseline string
	Drift    []string
	// Alerts are the alerts recorded with the run, with their IDs.
	Alerts []results.Alert
}

// NewRecorder returns a Recorder that records into store and alerts as
// notify says: each probe by the policy of its route (see
// checks.Notify.Route), one alert for each receiver of the route. Call Load
// before the first Record.
func NewRecorder(store Store, notify checks.Notify, opts RecorderOptions) *Recorder {
	rc := &Recorder{
		store:    store,
		logger:   opts.Logger,
		wake:     opts.Wake,
		notify:   notify,
		labels:   opts.Labels,
		targets:  opts.Targets,
		deliver:  opts.Deliver,
		observer: observerOr(opts.Observer),
		states:   map[string]results.AlertState{},
		locks:    map[string]*sync.Mutex{},
	}
	if rc.logger == nil {
		rc.logger = slog.New(slog.DiscardHandler)
	}
	if rc.wake == nil {
		rc.wake = func() {}
	}
	clock, random, redact := opts.Clock, opts.Rand, opts.Redact
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	rc.now = clock.Now
	if opts.Silences != nil {
		rc.silences = &silenceCache{src: opts.Silences}
	}
	if random == nil {
		random = rand.Float64
	}
	if redact == nil {
		redact = func(s string) string { return s }
	}
	rc.redact = redact
	rc.queue = newWriteQueue(opts.WriteQueue, rc.recordNow, rc.recorded, rc.logger, rc.observer, clock, random, redact)
	return rc
}

// Load reads the persisted alert state of every probe, so that a restart
// neither alerts again on a failure it already announced nor forgets to
// resolve it. Call it once, before the first Record; a probe that Record
// has already seen keeps its in-memory state, which is newer.
func (rc *Recorder) Load(ctx context.Context) error {
	states, err := rc.store.AlertStates(ctx)
	if err != nil {
		return fmt.Errorf("runner: load alert states: %w", err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for probe, st := range states {
		if _, ok := rc.states[probe]; !ok {
			rc.states[probe] = st
		}
	}
	return nil
}

// SetConfig replaces the alerting configuration after a config reload:
// cfg's notify section, and the labels and calls of its probes, so that a
// reload that changes a probe's labels moves its next alerts to the route
// they now match. deliver is false when no receiver is configured. Runs
// already being recorded finish with the configuration they started with.
// Alert states are kept: a failure announced before the reload is not
// announced again.
func (rc *Recorder) SetConfig(cfg *checks.Config, deliver bool) {
	labels, targets := ProbeLabels(cfg), probeTargets(cfg)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.notify, rc.labels, rc.targets, rc.deliver = cfg.Notify, labels, targets, deliver
}

// ProbeLabels returns the labels of cfg's probes by probe name, as
// RecorderOptions.Labels takes them.
func ProbeLabels(cfg *checks.Config) map[string]map[string]string {
	out := make(map[string]map[string]string, len(cfg.Probes))
	for _, p := range cfg.Probes {
		if len(p.Labels) > 0 {
			out[p.Name] = p.Labels
		}
	}
	return out
}

// Record takes a finished run and records it with what it calls for: its
// drift event, the probe's new alert state and its alerts, in one store
// transaction. It returns what it decided; the caller's r is left as it
// is. A recorded run is counted (Observer.RunFinished) and wakes the
// deliverer when it enqueued alerts.
//
// Record ignores ctx's cancellation, within recordTimeout: the run is
// over, and a shutdown that drains in-flight runs must not lose their
// results. ctx's values still reach the store.
//
// err is nil when r was recorded. Otherwise it says why not: r then waits
// in the write queue and is recorded (and counted) later, unless err wraps
// errQueueClosed, which says it finished after the queue closed at
// shutdown and is lost. While runs wait in the queue, r joins them without
// a write, so that each probe's runs reach the alert policy in order.
func (rc *Recorder) Record(ctx context.Context, r *results.Result) (Decision, error) {
	if r == nil {
		return Decision{}, errors.New("runner: record: nil result")
	}
	d, err := rc.queue.record(ctx, r)
	if err == nil {
		rc.recorded(r, d)
	}
	return d, err
}

// Run writes the runs that wait in the write queue until ctx ends.
func (rc *Recorder) Run(ctx context.Context) { rc.queue.run(ctx) }

// Drain tries once more, for at most grace, to write the queued runs, and
// logs and counts the rest as lost; Run must have returned. Record then
// writes a run at once or not at all.
func (rc *Recorder) Drain(ctx context.Context, grace time.Duration) { rc.queue.drain(ctx, grace) }

// Pending returns how many runs wait in the write queue because the store
// failed. Anything above 0 means the store is not keeping up.
func (rc *Recorder) Pending() int { return rc.queue.pending() }

// recorded counts a recorded run and wakes the deliverer for its alerts.
func (rc *Recorder) recorded(r *results.Result, d Decision) {
	rc.observer.RunFinished(r)
	if slices.ContainsFunc(d.Alerts, func(a results.Alert) bool { return a.State == results.DeliveryPending }) {
		rc.wake()
	}
}

// recordNow detects drift in r, applies the alert policy and records r in
// one store transaction; the write queue calls it, under a context whose
// cancellation it has already detached.
//
// A store failure during drift detection is logged and the run recorded
// without a drift event; the next drifted run tries again. If recording
// fails, recordNow returns the error and the probe's alert state does not
// advance, so that the next run decides again instead of believing an
// alert went out. Calls for the same probe are serialized.
//
// The run's alerts are recorded, and so delivered, in this order. A run
// that fails and drifts sends its drift events first and the failure's
// alert (firing, update, reminder) after: the change is the cause, the
// failure its impact. A run that passes, drifts and resolves the failure
// sends the resolved alert first, since the incident on-call is working
// is over, then its drift events, marked Resolving so that they say they
// came with the run that resolved it rather than read as a new problem.
// Each alert names what the run called (probeTarget), scrubbed of known
// secrets.
func (rc *Recorder) recordNow(ctx context.Context, r *results.Result) (Decision, error) {
	defer rc.lockProbe(r.Probe)()

	rc.mu.RLock()
	route := rc.notify.Route(rc.labels[r.Probe])
	labels, deliver, all := rc.labels[r.Probe], rc.deliver, rc.notify
	target := rc.targets[r.Probe]
	st, known := rc.states[r.Probe]
	rc.mu.RUnlock()
	now := rc.now()
	notify := route.Notify
	silenced := rc.silenced(ctx, r.Probe, labels, now)

	var rec results.RunRecord
	var d Decision
	judged, err := rc.detectDrift(ctx, r, now, &d)
	if err != nil {
		rc.logger.Error("drift detection failed; recording the run without a drift event",
			"probe", r.Probe, "operation_id", r.OperationID, "error", err)
		rc.observer.StoreError("drift_lookup")
	}
	stepped, stepErr := rc.detectStepDrifts(ctx, r, now)
	if stepErr != nil {
		rc.logger.Error("step drift detection failed; recording those steps without a drift event",
			"probe", r.Probe, "operation_id", r.OperationID, "error", stepErr)
		rc.observer.StoreError("drift_lookup")
	}
	defined, defErr := rc.detectDefinitionDrift(ctx, r, now)
	if defErr != nil {
		rc.logger.Error("definition drift detection failed; recording the run without its tool definition's text",
			"probe", r.Probe, "operation_id", r.OperationID, "error", defErr)
		rc.observer.StoreError("definition_lookup")
	}
	rec.Drift, rec.StepDrifts, rec.DefinitionDrift = judged.drift, stepped.drifts, defined.drift
	drifted := driftAlerts(notify, r, rec.Drifts(), now, silenced)
	next, alerts := decide(notify, st, r, now, silenced)
	to := addressing{told: st.Receivers}
	if deliver {
		to.current = route.Receivers()
		to.configured = all.AllReceivers()
	}
	if st.Firing && to.told == nil {
		// A state kept by a release that did not remember receivers: the
		// probe's route stands for those told.
		to.told = to.current
	}
	if moved := movedFiring(notify, st, next, alerts, to, r, now, silenced); moved != nil {
		alerts = append(alerts, *moved)
	}
	rec.Alerts = withDrifts(alerts, drifted)
	for i := range rec.Alerts {
		if t := target.of(r, rec.Alerts[i].Drift); t != "" {
			rec.Alerts[i].Target = rc.redact(t)
		}
	}
	rec.Alerts, next.Receivers = address(rec.Alerts, to, labels, now)
	if !next.Firing {
		next.Receivers = nil
	}
	if !known || !sameState(next, st) {
		rec.AlertState = &next
	}
	rec.Result = *r
	if judged.shape != nil {
		rec.Result.Shape = judged.shape
	}
	if stepped.steps != nil {
		rec.Result.Steps = stepped.steps
	}
	if defErr != nil && r.Tool != nil {
		// Keep the stored definition the previous one: see
		// detectDefinitionDrift.
		rec.Result.Tool = &results.ToolDefinition{Fingerprint: r.Tool.Fingerprint}
	}

	if err := rc.store.RecordRun(ctx, &rec); err != nil {
		rc.observer.StoreError("record_run")
		return Decision{}, fmt.Errorf("runner: record %s of %s: %w", r.OperationID, r.Probe, err)
	}
	judged.commit()
	stepped.commit()
	defined.commit()
	rc.mu.Lock()
	rc.states[r.Probe] = next
	rc.mu.Unlock()
	for _, d := range rec.Drifts() {
		rc.observer.DriftDetected(d)
	}

	rc.logEnqueued(rec.Alerts)
	d.Alerts = rec.Alerts
	return d, nil
}

// driftAlerts returns a shape_drift alert for each drift of run r, in
// order, when notify is on shape_drift; recorded as skipped when the
// probe is silenced.
func driftAlerts(notify checks.Notify, r *results.Result, drifts []*results.Drift, now time.Time, silenced bool) []results.Alert {
	if !notifies(notify, notifyShapeDrift) {
		return nil
	}
	var out []results.Alert
	for _, drift := range drifts {
		a := results.NewAlert(results.AlertDrift, r, now)
		a.Drift = drift
		if silenced {
			a.State, a.LastError = results.DeliverySkipped, silencedError
		}
		out = append(out, a)
	}
	return out
}

// withDrifts orders a run's drift alerts with its failure's: a drift
// explains a failure, so it goes first; on a run that resolves the
// failure, the resolved message goes first and each drift says that its
// run resolved it.
func withDrifts(alerts, drifted []results.Alert) []results.Alert {
	if !slices.ContainsFunc(alerts, func(a results.Alert) bool { return a.Kind == results.AlertResolved }) {
		return append(drifted, alerts...)
	}
	for i := range drifted {
		drifted[i].Resolving = true
	}
	return append(alerts, drifted...)
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

// lockProbe locks probe's mutex and returns its unlock. The scheduler never
// overlaps runs of one probe, but recordNow reads the probe's alert state
// at its start and writes it at its end, so an overlap would lose an
// update; the lock makes that impossible rather than merely unlikely.
func (rc *Recorder) lockProbe(probe string) (unlock func()) {
	rc.locksMu.Lock()
	m, ok := rc.locks[probe]
	if !ok {
		m = new(sync.Mutex)
		rc.locks[probe] = m
	}
	rc.locksMu.Unlock()
	m.Lock()
	return m.Unlock
}

// silenced reports whether an active silence covers probe at now. When the
// silences cannot be read, the last ones read stand (none before the first
// read): a store that fails is logged and counted, and alerting goes on.
func (rc *Recorder) silenced(ctx context.Context, probe string, labels map[string]string, now time.Time) bool {
	if rc.silences == nil {
		return false
	}
	list, err := rc.silences.get(ctx, now)
	if err != nil {
		rc.logger.Error("reading silences failed; using the last ones read", "error", err)
		rc.observer.StoreError("silences")
	}
	return results.Silenced(list, now, probe, labels)
}

// silenceCache holds the silences last read, for SilenceRefresh.
type silenceCache struct {
	src Silences

	mu     sync.Mutex
	list   []results.Silence
	readAt time.Time // zero: never read
}

// get returns the silences active at now, reading them again when the
// last read is SilenceRefresh old (or in the future: the clock went back).
// On a failed read it returns the last list with the error, and tries
// again on the next call.
func (c *silenceCache) get(ctx context.Context, now time.Time) ([]results.Silence, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readAt.IsZero() && now.Sub(c.readAt) < SilenceRefresh && !now.Before(c.readAt) {
		return c.list, nil
	}
	list, err := c.src.Silences(ctx, now, false)
	if err != nil {
		return c.list, err
	}
	c.list, c.readAt = list, now
	return list, nil
}
