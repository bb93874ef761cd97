package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// RecorderOptions are a Recorder's dependencies. Every field is optional.
type RecorderOptions struct {
	Logger *slog.Logger // nil: discard
	// Deliver false: alerts are recorded skipped, as are those of a probe
	// whose route has no receiver, so the alerts table tells what would
	// have been sent.
	Deliver bool
	// Labels are each probe's labels by name: they choose its route and
	// travel with its alerts.
	Labels map[string]map[string]string
	// Targets are what each probe calls, by name, as its alerts name it.
	Targets  map[string]probeTarget
	Observer Observer
	Wake     func() // the deliverer's, when a run enqueued alerts
	// WriteQueue is how many runs may wait while the store fails; 0 or
	// less: defaultWriteQueue.
	WriteQueue int
	// Clock dates the alert policy's decisions and times the write
	// queue's back-off; Rand, in [0,1), jitters it.
	Clock clockwork.Clock
	Rand  func() float64
	// Redact scrubs secrets from a panic's text and from alert targets.
	Redact func(string) string
	// Silences are read at most every SilenceRefresh; nil: none.
	Silences Silences
	// Maintenance are the config's recurring windows: while one covering
	// a probe is on, its alerts are muted as by a silence.
	Maintenance []results.MaintenanceWindow
	// Fenced is told, without blocking, that the store refused a write
	// claiming f (results.ErrFenced): a newer leader holds the lease. The
	// run was written again as a handover. nil: nobody is told.
	Fenced func(f results.Fence)
	// FleetWide are the probes that run from more than one location, by
	// name: no location decides their alerts (see locations.go).
	FleetWide map[string]bool
}

// Recorder owns what happens to a finished run. A run is recorded once
// the store has it: Record gets it recorded now (write: the stages, then
// commit, which stores the one results.RunRecord they built) or, while the
// store fails, later from the write queue. A recording is a run between
// write's stages. Each probe's alert state stays in memory between runs.
// The Recorder never talks to a receiver: alerts go to the store's outbox,
// which the deliverer drains.
//
// Run writes the queue and Drain empties it at shutdown. A Recorder is
// safe for concurrent use by runs of different probes.
//
// In a fleet the Recorder writes for a term (see lead and standBy): the
// leadership its writes claim. A write is stamped with the term current
// when it is written, not when its run began, so a run that waited in the
// write queue is written under the term that writes it.
type Recorder struct {
	observer    Observer
	store       Store
	logger      *slog.Logger
	now         func() time.Time
	wake        func()
	baselines   profileCache    // each answer's learned shape profile
	definitions definitionCache // each MCP probe's last tool definition
	queue       *writeQueue
	redact      func(string) string

	mu     sync.RWMutex // guards notify, labels, targets, deliver, windows and states
	notify checks.Notify
	groups map[string]checks.Grouping // groupings(notify)
	// receivers: notify.AllReceivers(), read by every run, built once
	// per config.
	receivers map[string]bool
	labels    map[string]map[string]string // by probe: routes and silences match them
	targets   map[string]probeTarget       // by probe: what its alerts say it called
	deliver   bool
	windows   []results.MaintenanceWindow // the config's maintenance windows
	// fleetWide: the probes whose alerts no location decides.
	fleetWide map[string]bool
	states    alertStates

	locksMu sync.Mutex
	locks   map[string]*sync.Mutex // one per probe, see lockProbe

	silences *silenceCache // nil: nothing is silenced
	fenced   func(results.Fence)

	// termMu is held for reading by every write, for its whole length, and
	// for writing by a change of term: a term begins once the writes of
	// the one before have ended.
	termMu sync.RWMutex
	term   recorderTerm
	// loadMu serializes the load of a term's alert states (see loadTerm);
	// it guards loaded while termMu is held for reading. loaded: the
	// alert states in memory are the store's as of this term, read by
	// its first write.
	loadMu sync.Mutex
	loaded bool
}

// recorderTerm is the leadership a Recorder writes under.
type recorderTerm struct {
	// fence is what the writes claim; the zero Fence (a single
	// instance) claims none.
	fence results.Fence
	// handover: the instance does not lead; runs are written as history
	// only (results.RunRecord.Handover).
	handover bool
}

// Decision is what the Recorder decided about a run it wrote.
type Decision struct {
	// Drift is how the probe's own answer drifted from its learned
	// profile, on every drifted run and not only on the one that is an
	// event; the zero Drift when it fitted. Steps' drifts are events only.
	results.Drift
	// Alerts are the alerts recorded with the run, with their IDs.
	Alerts []results.Alert
	// Handover: the run was written as a handover (the instance does not
	// lead), history only; nothing was decided about it.
	Handover bool
}

// NewRecorder returns a Recorder over store that alerts each probe by the
// policy of its notify route. Call Load before the first Record.
func NewRecorder(store Store, notify checks.Notify, opts RecorderOptions) *Recorder {
	rc := &Recorder{
		store:     store,
		logger:    opts.Logger,
		wake:      opts.Wake,
		notify:    notify,
		groups:    groupings(notify),
		receivers: notify.AllReceivers(),
		labels:    opts.Labels,
		targets:   opts.Targets,
		deliver:   opts.Deliver,
		windows:   opts.Maintenance,
		observer:  observerOr(opts.Observer),
		states:    alertStates{},
		locks:     map[string]*sync.Mutex{},
		fenced:    opts.Fenced,
		loaded:    true,

		fleetWide: opts.FleetWide,
	}
	if rc.fenced == nil {
		rc.fenced = func(results.Fence) {}
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
	rc.queue = newWriteQueue(opts.WriteQueue, rc.write, rc.logger, rc.observer, rc.wake, clock, random, redact)
	return rc
}

// Load reads every probe's persisted alert state, so that a restart
// neither announces a failure again nor forgets to resolve it. Call it
// once, before the first Record; a state already in memory is newer.
func (rc *Recorder) Load(ctx context.Context) error {
	states, err := rc.store.AlertStates(ctx)
	if err != nil {
		return fmt.Errorf("runner: load alert states: %w", err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for probe, st := range states {
		if _, ok := rc.states[probe]; !ok {
			rc.states.put(probe, st)
		}
	}
	return nil
}

// lead starts a term of leadership under f. It waits for the writes of
// the term before to end, then forgets what the previous leader may have
// changed since this instance last led: the alert states, the learned
// shape profiles and tool definitions. The term's first write reads the
// alert states again (loadTerm); profiles and definitions are read again
// on each probe's next run.
func (rc *Recorder) lead(f results.Fence) {
	rc.termMu.Lock()
	defer rc.termMu.Unlock()
	rc.term, rc.loaded = recorderTerm{fence: f}, false
	rc.mu.Lock()
	rc.states = alertStates{}
	rc.mu.Unlock()
	rc.baselines.mu.Lock()
	rc.baselines.entries, rc.baselines.resetsReadAt = nil, time.Time{}
	rc.baselines.mu.Unlock()
	rc.definitions.mu.Lock()
	rc.definitions.entries = nil
	rc.definitions.mu.Unlock()
}

// standBy ends the term: from now on runs are written as handovers, the
// queued ones included, once the writes in flight have ended.
func (rc *Recorder) standBy() {
	rc.termMu.Lock()
	defer rc.termMu.Unlock()
	rc.term = recorderTerm{handover: true}
}

// loadTerm reads every probe's alert state from the store once per term,
// before the term's first decision: another leader may have changed them
// since this instance last read them. A failed read fails the write, which
// then waits in the write queue. rc.termMu must be held for reading.
func (rc *Recorder) loadTerm(ctx context.Context) error {
	rc.loadMu.Lock()
	defer rc.loadMu.Unlock()
	if rc.loaded {
		return nil
	}
	states, err := rc.store.AlertStates(ctx)
	if err != nil {
		rc.observer.StoreError("alert_states")
		return fmt.Errorf("runner: load alert states for epoch %d: %w", rc.term.fence.Epoch, err)
	}
	rc.mu.Lock()
	rc.states = make(alertStates, len(states))
	for probe, st := range states {
		rc.states.put(probe, st)
	}
	rc.mu.Unlock()
	rc.loaded = true
	return nil
}

// writeHandover writes r as a handover: history only, once.
func (rc *Recorder) writeHandover(ctx context.Context, r *results.Result) error {
	rec := results.RunRecord{Result: *r, Handover: true}
	if err := rc.store.RecordRun(ctx, &rec); err != nil {
		rc.observer.StoreError("record_run")
		return fmt.Errorf("runner: record %s of %s as a handover: %w", r.OperationID, r.Probe, err)
	}
	return nil
}

// SetConfig applies a reload: cfg's notify section, labels, calls and
// maintenance windows. deliver is false when no receiver is configured.
// Alert states are kept.
func (rc *Recorder) SetConfig(cfg *checks.Config, deliver bool) {
	labels, targets, wide := ProbeLabels(cfg), probeTargets(cfg), fleetWide(cfg)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.notify, rc.labels, rc.targets, rc.deliver = cfg.Notify, labels, targets, deliver
	rc.windows = cfg.Maintenance
	rc.groups = groupings(cfg.Notify)
	rc.receivers = cfg.Notify.AllReceivers()
	rc.fleetWide = wide
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

// Record takes a finished run and writes it (see write), ignoring ctx's
// cancellation within writeTimeout; r is left as it is. err is nil when r
// was written. Otherwise r waits in the write queue and is written later,
// unless err wraps errQueueClosed: it came after shutdown and is lost.
func (rc *Recorder) Record(ctx context.Context, r *results.Result) (Decision, error) {
	if r == nil {
		return Decision{}, errors.New("runner: record: nil result")
	}
	d, err := rc.queue.submit(ctx, r)
	if err == nil {
		finished(rc.observer, rc.wake, r, d)
	}
	return d, err
}

// Run writes the runs that wait in the write queue until ctx ends.
func (rc *Recorder) Run(ctx context.Context) { rc.queue.run(ctx) }

// Drain tries once more, for at most grace, to write the queued runs; the
// rest are logged and counted as lost. Run must have returned.
func (rc *Recorder) Drain(ctx context.Context, grace time.Duration) { rc.queue.drain(ctx, grace) }

// Pending returns how many runs wait in the write queue.
func (rc *Recorder) Pending() int { return rc.queue.pending() }

// write passes r through the recorder's stages and commits what they
// decided; the write queue calls it, with ctx's cancellation detached.
// Calls for one probe are serialized. If the commit fails, nothing the
// stages decided takes effect: the next run decides again.
func (rc *Recorder) write(ctx context.Context, r *results.Result) (Decision, error) {
	rc.termMu.RLock()
	defer rc.termMu.RUnlock()
	term := rc.term
	if term.handover {
		if err := rc.writeHandover(ctx, r); err != nil {
			return Decision{}, err
		}
		return Decision{Handover: true}, nil
	}
	if err := rc.loadTerm(ctx); err != nil {
		return Decision{}, err
	}
	defer rc.lockProbe(r.Probe)()
	var run recording
	rc.begin(&run, r, term.fence)
	rc.checkSilence(ctx, &run) // silence.go: is the probe silenced, or in maintenance?
	rc.judgeDrift(ctx, &run)   // drift.go: how its answers and tool definition drifted
	if run.fleetWide {
		keepForDecider(&run) // locations.go: no location decides its alerts
	} else {
		decideAlerts(&run)      // alerting.go: its next alert state and the run's alerts
		creditMaintenance(&run) // silence.go: which skips a maintenance window made
	}
	rc.addressAlerts(&run)                       // addressing.go: who each alert goes to
	if err := rc.commit(ctx, &run); err != nil { // commit.go: one store transaction
		return Decision{}, err
	}
	if run.handedOver {
		return Decision{Handover: true}, nil
	}
	rc.observe(&run) // observe.go: drift events counted, alerts logged
	return run.decision(), nil
}

// recording is one run on its way through write's stages: the config and
// alert state they read, and what they decide.
type recording struct {
	r      *results.Result // as the caller left it
	fence  results.Fence   // the term it is written under
	probe  string
	now    time.Time
	route  checks.Route
	labels map[string]string
	target probeTarget
	to     addressing
	state  results.AlertState // the probe's alert state before the run
	known  bool               // state was kept, in memory or in the store
	// fleetWide: the probe runs from several locations, and its alerts
	// are decided fleet-wide, not here (locations.go).
	fleetWide bool

	silenced bool
	// windows are the maintenance windows of the config; maintenance: one
	// covering the probe is on (and silenced is set), and no silence is.
	windows     []results.MaintenanceWindow
	maintenance bool
	// answers are the run's judged answers, the probe's own first; drifts
	// its drift events.
	answers []judgedAnswer
	drifts  []*results.Drift
	// learnDefinition installs the run's tool definition (see
	// judgeDefinition), as each answer's learn installs what it taught.
	learnDefinition func()
	// keepTool: the definition was not judged; see judgeDefinition.
	keepTool bool

	next   results.AlertState
	alerts []results.Alert
	// handedOver: the store refused the fence, and the run was written
	// as a handover instead; nothing the stages decided took effect.
	handedOver bool
}

// begin starts run, a recording of r, with its probe's config and alert
// state.
func (rc *Recorder) begin(run *recording, r *results.Result, fence results.Fence) {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	*run = recording{r: r, probe: r.Probe, now: rc.now(), labels: rc.labels[r.Probe], target: rc.targets[r.Probe], fence: fence,
		windows: rc.windows}
	run.route = rc.notify.Route(run.labels)
	run.state, run.known = rc.states.get(r.Probe)
	run.fleetWide = rc.fleetWide[r.Probe]
	run.to = addressing{told: run.state.Receivers}
	if rc.deliver {
		run.to.current = run.route.Receivers()
		run.to.configured = rc.receivers
		run.to.groups = rc.groups
	}
	if run.state.Firing && run.to.told == nil {
		// A state kept by a release that did not remember receivers: the
		// probe's route stands for those told.
		run.to.told = run.to.current
	}
}

// decision is what the stages decided about the run, as Record returns it.
func (run *recording) decision() Decision {
	d := Decision{Alerts: run.alerts}
	if a := run.answers; len(a) > 0 && a[0].index < 0 && a[0].drift != nil && len(a[0].drift.Diff) > 0 {
		d.Drift = *run.answers[0].drift
	}
	return d
}

// lockProbe locks probe's mutex and returns its unlock: write reads the
// alert state at its start and writes it at its end, and the scheduler's
// promise that runs of a probe never overlap is not relied on.
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
