// Package runner is the daemon: it schedules every probe (gocron), bounds
// the runs in flight, hands each run to the engine (runner/prober), records
// its result, judges drift against the probe's learned profile, applies
// the alert policy and delivers the alerts. It reaches the store, the
// receivers and the metrics only through the interfaces it declares.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner/prober"
)

// defaultGracePeriod is how long in-flight runs may finish on shutdown when
// Deps.GracePeriod is zero.
const defaultGracePeriod = 10 * time.Second

const (
	// drainTimeout is how long shutdown waits for cancelled runs to return
	// and be recorded; a run returns promptly once cancelled, so only a
	// stuck store can use it up.
	drainTimeout = recordTimeout + 5*time.Second
	// schedulerStopTimeout is gocron's own bound on stopping. Every task
	// has returned by the time the scheduler is shut down, so it is only a
	// backstop.
	schedulerStopTimeout = 5 * time.Second
)

// ErrDaemonStopped is returned by Reload once the daemon is shutting down
// or has stopped.
var ErrDaemonStopped = errors.New("runner: the daemon is stopped")

// Deps are what New builds a Daemon from. Store is required; every other
// field has a default.
type Deps struct {
	// Store is where runs are recorded and alerts wait to be delivered.
	Store Store
	// Silences are the silences that mute probes' alerts, read every
	// SilenceRefresh; nil: nothing is silenced.
	Silences Silences
	// Senders returns the alert receivers a config asks for, by receiver
	// key (checks.Route.Receivers); none means alerts are recorded, not
	// sent. New and Reload call it; nil: no config has a receiver. A
	// Sender that is also a Looper is run while the daemon runs, until a
	// reload replaces it.
	Senders func(*checks.Config) (Senders, error)
	// Observer is told of every finished run, drift event, delivery and
	// store failure, for metrics; nil: none.
	Observer Observer
	Logger   *slog.Logger // nil: discard
	// Clock drives the schedule, dates the alert policy's decisions and
	// the outbox's due times, and times the write queue's back-off. nil:
	// the real clock; tests pass a clockwork.FakeClock. Runs are real time
	// whatever it is: their stamps and durations measure, and their
	// timeouts and back-off bound, real network I/O; so is the grace
	// period.
	Clock clockwork.Clock
	// Rand returns a number in [0,1) that places each probe's first run in
	// its jitter window and jitters the write queue's back-off. nil:
	// math/rand/v2. Attempts and deliveries draw their own jitter.
	Rand func() float64
	// GracePeriod is how long in-flight runs may finish on shutdown before
	// their context is cancelled, and how long a run of a probe that a
	// reload removed or changed may go on. 0: defaultGracePeriod; negative:
	// cancel at once.
	GracePeriod time.Duration
	// WriteQueue is how many results may wait in memory to be written
	// while the store fails. 0 or less: defaultWriteQueue.
	WriteQueue int
	// Delivery tunes the outbox's deliverer; its Logger, Observer and Clock are
	// the Daemon's. The zero value: the defaults.
	Delivery delivererOptions
}

// daemonState is where a Daemon is in its life.
type daemonState int

const (
	stateIdle     daemonState = iota // built, Run not called yet
	stateRunning                     // scheduling runs
	stateStopping                    // no new runs; draining those in flight
	stateStopped                     // Run returned
)

func (s daemonState) String() string {
	return [...]string{"idle", "running", "stopping", "stopped"}[s]
}

// Daemon schedules every probe of a config with gocron and sends each run
// through the Executor and the Recorder: run, detect drift, apply the
// alert policy, record, wake the deliverer. Runs are bounded by the
// config's max_concurrency across all probes, and a probe never overlaps
// itself. Shutdown drains: runs in flight get a grace period, are then
// cancelled, and are recorded either way.
//
// A run the store cannot record (read-only file, full disk, a lock held
// too long) is not lost: it waits in the write queue (see writeQueue for
// its order and overflow rules) until the store takes it again. Pending
// tells how many results wait.
//
// A Daemon runs once: call Run, and Reload, State and Pending from any
// goroutine.
type Daemon struct {
	observer Observer
	logger   *slog.Logger
	clock    clockwork.Clock
	rand     func() float64
	exec     *prober.Executor
	rec      *Recorder
	deliv    *deliverer
	senders  func(*checks.Config) (Senders, error)
	sender   *receiverSet
	grace    time.Duration
	limit    *limiter
	// drainWait is how long shutdown waits for cancelled runs to return:
	// drainTimeout, shorter in tests.
	drainWait time.Duration

	// jobsMu serializes changes to the set of jobs (Run scheduling, Reload,
	// shutdown), so that a reload never interleaves with either end of Run.
	jobsMu sync.Mutex

	mu       sync.Mutex // guards what follows
	state    daemonState
	cfg      *checks.Config
	redactor *results.Redactor
	sched    gocron.Scheduler
	// probes are the scheduled probes by name. A probe a reload left
	// unchanged keeps the value its job was created with, the one its
	// running task holds.
	probes  map[string]*checks.Probe
	active  int           // tasks between begin and end
	drained chan struct{} // closed once active is 0 after shutdown began
	// stopCtx ends when shutdown begins: runs waiting for a slot give up.
	// hardCtx ends when the grace period is over: runs in flight are
	// cancelled.
	stopCtx    context.Context
	stopCancel context.CancelFunc
	hardCtx    context.Context
	hardCancel context.CancelFunc
}

// New returns a Daemon for cfg, with everything a run goes through: the
// Executor, the Recorder (drift, alerts, recording, the write queue) and
// the outbox's deliverer with cfg's receiver. It schedules nothing until
// Run.
func New(cfg *checks.Config, deps Deps) (*Daemon, error) {
	switch {
	case cfg == nil:
		return nil, errors.New("runner: New: nil config")
	case deps.Store == nil:
		return nil, errors.New("runner: New: a Store is required")
	}
	d := &Daemon{
		logger:   deps.Logger,
		clock:    deps.Clock,
		rand:     deps.Rand,
		senders:  deps.Senders,
		sender:   &receiverSet{},
		grace:    deps.GracePeriod,
		observer: observerOr(deps.Observer),
		limit:    newLimiter(cfg.MaxConcurrency),
		cfg:      cfg,
		redactor: cfg.Redactor(),
		probes:   make(map[string]*checks.Probe, len(cfg.Probes)),
	}
	d.drainWait = drainTimeout
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	if d.clock == nil {
		d.clock = clockwork.NewRealClock()
	}
	if d.rand == nil {
		d.rand = rand.Float64
	}
	if d.senders == nil {
		d.senders = func(*checks.Config) (Senders, error) { return nil, nil }
	}
	switch {
	case d.grace == 0:
		d.grace = defaultGracePeriod
	case d.grace < 0:
		d.grace = 0
	}
	senders, err := d.senders(cfg)
	if err != nil {
		return nil, fmt.Errorf("runner: New: %w", err)
	}
	d.sender.set(senders)
	for _, p := range cfg.Probes {
		d.probes[p.Name] = p
	}
	d.exec = prober.NewExecutor(prober.Options{Logger: d.logger, Redactor: d.redactor})
	delivery := deps.Delivery
	delivery.Logger, delivery.Observer, delivery.Clock = d.logger, d.observer, d.clock
	d.deliv = newDeliverer(deps.Store, d.sender, delivery)
	d.rec = NewRecorder(deps.Store, cfg.Notify, RecorderOptions{
		Logger: d.logger, Deliver: len(senders) > 0, Labels: ProbeLabels(cfg), Targets: probeTargets(cfg), Observer: d.observer, Wake: d.deliv.Wake,
		WriteQueue: deps.WriteQueue, Clock: d.clock, Rand: d.rand, Redact: d.redact,
		Silences: deps.Silences,
	})
	d.observer.SetProbes(probeNames(cfg))
	d.observer.SetReceivers(slices.Sorted(maps.Keys(senders)))
	return d, nil
}

// probeNames are the names of cfg's probes, in config order.
func probeNames(cfg *checks.Config) []string {
	names := make([]string, len(cfg.Probes))
	for i, p := range cfg.Probes {
		names[i] = p.Name
	}
	return names
}

// Run schedules every probe and runs until ctx ends. It then stops
// scheduling, gives the runs in flight the grace period, cancels those
// still running, records every one of them, tries once more for another
// grace period to write the results still queued (those it cannot write
// are logged as lost), stops the deliverer and the scheduler, and returns
// nil. It returns an error only when it could not
// start (called twice, the store's alert state unreadable, or a probe
// gocron refuses).
func (d *Daemon) Run(ctx context.Context) error {
	d.jobsMu.Lock()
	d.mu.Lock()
	if d.state != stateIdle {
		d.mu.Unlock()
		d.jobsMu.Unlock()
		return errors.New("runner: Daemon.Run called more than once")
	}
	// The alert state a previous process left: a restart neither alerts
	// again on a failure it announced nor forgets to resolve it.
	if err := d.rec.Load(ctx); err != nil {
		d.mu.Unlock()
		d.jobsMu.Unlock()
		return err
	}
	s, err := gocron.NewScheduler(
		gocron.WithClock(d.clock),
		gocron.WithLogger(schedulerLogger{d.logger}),
		gocron.WithStopTimeout(schedulerStopTimeout),
		gocron.WithLocation(time.UTC),
	)
	if err != nil {
		d.mu.Unlock()
		d.jobsMu.Unlock()
		return fmt.Errorf("runner: new scheduler: %w", err)
	}
	// The run contexts keep ctx's values but not its end: ctx ending
	// starts the drain, it does not cut runs short.
	d.hardCtx, d.hardCancel = context.WithCancel(context.WithoutCancel(ctx))
	d.stopCtx, d.stopCancel = context.WithCancel(d.hardCtx)
	d.sched, d.state = s, stateRunning
	probes := d.scheduledInOrder()
	d.mu.Unlock()

	// The queue's writer outlives the drain: the runs in flight may queue
	// results up to its end. Then one last attempt, see closeQueue.
	qctx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	written := make(chan struct{})
	go func() {
		defer close(written)
		d.rec.Run(qctx)
	}()
	closeQueue := func() {
		stopWriter()
		<-written
		d.rec.Drain(qctx, d.grace)
	}

	s.Start()
	var errs []error
	for _, p := range probes {
		if err := d.scheduleProbe(s, p, false); err != nil {
			errs = append(errs, fmt.Errorf("probe %s: %w", p.Name, err))
		}
	}
	d.jobsMu.Unlock()
	if err := errors.Join(errs...); err != nil {
		d.shutdown()
		closeQueue()
		d.setState(stateStopped)
		return fmt.Errorf("runner: schedule: %w", err)
	}
	d.logger.Info("scheduler started", "probes", len(probes), "max_concurrency", d.maxConcurrency())

	// The deliverer outlives the drain, so that alerts of the last runs
	// still go out; what it cannot send stays in the outbox.
	dctx, stopDeliverer := context.WithCancel(context.WithoutCancel(ctx))
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		d.deliv.Run(dctx)
	}()
	d.sender.start(ctx)

	<-ctx.Done()
	d.shutdown()
	closeQueue()
	stopDeliverer()
	<-delivered
	d.sender.stop()
	d.exec.CloseIdleConnections()
	d.setState(stateStopped)
	d.logger.Info("scheduler stopped")
	return nil
}

// scheduledInOrder returns the scheduled probes in config order. d.mu must
// be held.
func (d *Daemon) scheduledInOrder() []*checks.Probe {
	out := make([]*checks.Probe, 0, len(d.probes))
	for _, p := range d.cfg.Probes {
		if q, ok := d.probes[p.Name]; ok {
			out = append(out, q)
		}
	}
	return out
}

// shutdown drains: no new runs, the grace period for those in flight, then
// cancellation, then the scheduler. gocron's own Shutdown cancels every
// job context at once and busy-waits for tasks, so it comes last, when no
// task is left.
func (d *Daemon) shutdown() {
	d.jobsMu.Lock() // lets a reload in progress finish first
	d.mu.Lock()
	d.state = stateStopping
	d.drained = make(chan struct{})
	if d.active == 0 {
		close(d.drained)
	}
	inFlight, _, _ := d.limit.counts()
	drained := d.drained
	d.mu.Unlock()
	d.jobsMu.Unlock()

	d.stopCancel()
	if inFlight > 0 {
		d.logger.Info("draining runs in flight", "runs", inFlight, "grace", d.grace)
	}
	grace := time.NewTimer(d.grace)
	defer grace.Stop()
	select {
	case <-drained:
	case <-grace.C:
		n, _, _ := d.limit.counts()
		d.logger.Warn("grace period over; cancelling runs in flight", "runs", n)
		d.hardCancel()
		stuck := time.NewTimer(d.drainWait)
		defer stuck.Stop()
		select {
		case <-drained:
		case <-stuck.C:
			n, _, _ := d.limit.counts()
			d.logger.Error("runs did not return after cancellation; stopping without them", "runs", n)
		}
	}
	d.hardCancel()
	if err := d.sched.Shutdown(); err != nil {
		d.logger.Error("stopping the scheduler", "error", err)
	}
}

// Reload applies a new config: probes removed from it stop, added ones
// start after a fresh jitter, changed ones (any field) are rescheduled with
// their new definition, and unchanged ones keep their job and schedule. It
// is everything a SIGHUP needs: it also switches alerts to the new
// config's receiver, hands its secrets to the redactors, resizes the
// concurrency limit, updates the Recorder's alerting and tells the
// Observer the new set of probes; history and alert state stay in the
// store and the Recorder.
//
// Runs in flight are not interrupted by a reload that shrinks the limit; a
// run of a removed or changed probe may finish (within the grace period)
// and is recorded. Reload may be called before Run; it returns
// ErrDaemonStopped once shutdown has begun. A receiver the new config
// cannot build fails the reload before anything changes. On an error
// from the schedule, the probes named in it are not scheduled; the rest of
// the reload is applied.
func (d *Daemon) Reload(cfg *checks.Config) error {
	if cfg == nil {
		return errors.New("runner: Reload: nil config")
	}
	d.jobsMu.Lock()
	defer d.jobsMu.Unlock()
	d.mu.Lock()
	state, s, old := d.state, d.sched, d.probes
	d.mu.Unlock()
	if state >= stateStopping {
		return ErrDaemonStopped
	}
	senders, err := d.senders(cfg)
	if err != nil {
		return fmt.Errorf("runner: Reload: %w", err)
	}

	d.observer.SetReceivers(slices.Sorted(maps.Keys(senders)))
	d.sender.set(senders)
	d.exec.SetRedactor(cfg.Redactor())
	d.limit.resize(cfg.MaxConcurrency)
	d.rec.SetConfig(cfg, len(senders) > 0)
	// Before the schedule changes, so that the first runs of added probes
	// count.
	d.observer.SetProbes(probeNames(cfg))

	next := make(map[string]*checks.Probe, len(cfg.Probes))
	var added, changed, removed []string
	var errs []error
	for _, p := range cfg.Probes {
		prev, ok := old[p.Name]
		if ok && prev.Same(p) {
			next[p.Name] = prev
			continue
		}
		if ok {
			changed = append(changed, p.Name)
		} else {
			added = append(added, p.Name)
		}
		if state == stateRunning {
			// Update replaces the job under the same identifier and
			// cancels its context: a run in flight gets the grace period.
			if err := d.scheduleProbe(s, p, ok); err != nil {
				errs = append(errs, fmt.Errorf("probe %s: %w", p.Name, err))
				continue
			}
		}
		next[p.Name] = p
	}
	for name := range old {
		if _, ok := next[name]; ok || slices.Contains(changed, name) {
			continue
		}
		removed = append(removed, name)
		if state == stateRunning {
			if err := s.RemoveJob(jobID(name)); err != nil && !errors.Is(err, gocron.ErrJobNotFound) {
				errs = append(errs, fmt.Errorf("probe %s: %w", name, err))
			}
		}
	}
	sort.Strings(removed)

	d.mu.Lock()
	d.cfg, d.redactor, d.probes = cfg, cfg.Redactor(), next
	d.mu.Unlock()

	if state == stateRunning && len(changed)+len(removed) > 0 {
		// Clients are cached per probe value; those of replaced values
		// would otherwise keep their idle connections for good.
		d.exec.CloseIdleConnections()
	}
	d.logger.Info("schedule reloaded", "added", added, "changed", changed, "removed", removed,
		"unchanged", len(next)-len(added)-len(changed), "max_concurrency", d.maxConcurrency())
	return errors.Join(errs...)
}

// State says where the daemon is in its life: idle, running, stopping or
// stopped.
func (d *Daemon) State() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state.String()
}

func (d *Daemon) setState(s daemonState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state = s
}

func (d *Daemon) maxConcurrency() int {
	_, _, n := d.limit.counts()
	return n
}

// begin registers a task of probe, unless shutdown has begun.
func (d *Daemon) begin(probe string) (stop, hard context.Context, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != stateRunning {
		return nil, nil, false
	}
	d.active++
	return d.stopCtx, d.hardCtx, true
}

// end unregisters a task begin registered.
func (d *Daemon) end(probe string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.active--
	if d.state == stateStopping && d.active == 0 {
		close(d.drained)
	}
}

// task is one scheduled run of p. gocron passes the job's context, which
// ends when a reload removes or replaces the job and on scheduler shutdown.
func (d *Daemon) task(jobCtx context.Context, p *checks.Probe) {
	stopCtx, hardCtx, ok := d.begin(p.Name)
	if !ok {
		return
	}
	defer d.end(p.Name)

	// Waiting for a slot is part of the run: gocron's singleton mode then
	// keeps the probe from queueing behind itself too. The wait ends with
	// the job, and at the start of shutdown: a run that has not started is
	// not one to drain.
	waitCtx, cancelWait := context.WithCancel(jobCtx)
	stopWait := context.AfterFunc(stopCtx, cancelWait)
	err := d.limit.acquire(waitCtx)
	stopWait()
	cancelWait()
	if err != nil {
		d.logger.Debug("run dropped while waiting for a concurrency slot", "probe", p.Name)
		return
	}
	defer d.limit.release()

	ctx, done := d.runContext(hardCtx, jobCtx)
	defer done()
	d.runOnce(ctx, p)
}

// runContext returns the context of one run: it ends when hard does (the
// shutdown grace period is over), or the grace period after the job's
// context ends (a reload removed or replaced the probe), so that a run in
// flight may finish but not linger. done releases it.
func (d *Daemon) runContext(hard, job context.Context) (ctx context.Context, done func()) {
	ctx, cancel := context.WithCancel(hard)
	var mu sync.Mutex
	var timer *time.Timer
	finished := false
	stop := context.AfterFunc(job, func() {
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			timer = time.AfterFunc(d.grace, cancel)
		}
	})
	return ctx, func() {
		stop()
		mu.Lock()
		finished = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// runOnce runs p, records the result and reports it. A panic in any of it
// (the Executor never panics, but the recorder and the store are other
// code) becomes a recorded internal_error rather than a lost run.
func (d *Daemon) runOnce(ctx context.Context, p *checks.Probe) {
	var r results.Result
	recorded := false
	defer func() {
		if v := recover(); v != nil {
			if recorded {
				d.logger.Error("panic after the run was recorded", "probe", p.Name,
					"operation_id", r.OperationID, "panic", d.redact(fmt.Sprint(v)), "stack", string(debug.Stack()))
				return
			}
			d.recordPanic(ctx, p, &r, v)
		}
	}()
	r = d.exec.Run(ctx, p)
	// A run cut short by shutdown is still recorded, as canceled: Record
	// ignores ctx's end.
	dec, err := d.rec.Record(ctx, &r)
	// Written or queued: either way a panic from here on must not record
	// the run a second time.
	recorded = true
	d.report(&r, dec, err)
}

// recordPanic records an internal_error for the run of p that panicked
// with v, under the run's operation id when it had one. r is what the run
// produced before the panic. The shape is dropped: drift detection may be
// what panicked.
func (d *Daemon) recordPanic(ctx context.Context, p *checks.Probe, r *results.Result, v any) {
	msg := d.redact(fmt.Sprintf("toolpulse panicked while handling the run: %v", v))
	d.logger.Error("panic in probe run", "probe", p.Name, "operation_id", r.OperationID,
		"panic", msg, "stack", string(debug.Stack()))
	ir := results.Result{
		OperationID: r.OperationID,
		Probe:       p.Name,
		Kind:        p.Kind(),
		MCP:         p.MCPTarget(),
		StartedAt:   r.StartedAt,
		Duration:    r.Duration,
		Attempts:    r.Attempts,
		HTTPStatus:  r.HTTPStatus,
		Consumer:    r.Consumer,
	}
	if ir.OperationID == "" {
		ir.OperationID = uuid.NewString()
	}
	if ir.StartedAt.IsZero() {
		ir.StartedAt = time.Now()
	}
	if ir.Consumer == (results.ConsumerRef{}) && p.Consumer() != nil {
		ir.Consumer = p.Consumer().Ref()
	}
	ir.Fail(results.NewError(results.CodeInternalError, "%s", msg))

	defer func() {
		if v := recover(); v != nil {
			d.logger.Error("panic again while recording an internal error; the run is lost", "probe", p.Name,
				"operation_id", ir.OperationID, "panic", d.redact(fmt.Sprint(v)))
		}
	}()
	dec, err := d.rec.Record(ctx, &ir)
	d.report(&ir, dec, err)
}

// report logs a finished run as Record left it. err is nil when the run
// was recorded. Otherwise the run waits in the write queue, err says why,
// and the line says recorded=false: whoever reads the log alone must not
// take it as stored. The queue reports it again once it is written. A run
// that finished after the queue closed at shutdown, and could not be
// written at once, is lost: logged and counted as such.
func (d *Daemon) report(r *results.Result, dec Decision, err error) {
	attrs := runAttrs(r, dec)
	if errors.Is(err, errQueueClosed) {
		d.logger.Info("probe run", append(attrs, "recorded", false, "queued", false)...)
		d.logger.Error("the run finished after the daemon stopped writing; it is lost", "probe", r.Probe,
			"operation_id", r.OperationID, "error", err)
		d.observer.ResultsDropped(1)
		return
	}
	if err != nil {
		d.logger.Info("probe run", append(attrs, "recorded", false, "queued", true)...)
		d.logger.Error("recording the run failed", "probe", r.Probe, "operation_id", r.OperationID,
			"error", err, "pending", d.Pending())
		return
	}
	d.logger.Info("probe run", attrs...)
}

// runAttrs are the log attributes of a finished run and what the Recorder
// decided about it.
func runAttrs(r *results.Result, dec Decision) []any {
	attrs := []any{"probe", r.Probe, "outcome", r.Outcome, "code", r.Code(), "attempts", r.AttemptCount(),
		"duration_ms", r.Duration.Milliseconds(), "operation_id", r.OperationID}
	if len(dec.Drift) > 0 {
		attrs = append(attrs, "drift", true)
	}
	return attrs
}

// Pending returns how many results are waiting to be written because the
// store failed. Anything above 0 means the store is not keeping up: the
// caller may report itself unhealthy.
func (d *Daemon) Pending() int { return d.rec.Pending() }

// escapedPanic is gocron's last resort, for a panic that got past runOnce's
// own recovery (the logger panicking while reporting one, say). It must not
// panic itself: gocron calls it from a deferred recover, where a second
// panic would end the process.
func (d *Daemon) escapedPanic(_ uuid.UUID, name string, v any) {
	defer func() { _ = recover() }()
	d.logger.Error("panic escaped a probe run; the schedule goes on", "probe", name, "panic", d.redact(fmt.Sprint(v)))
}

// redact scrubs the config's secrets from s: a panic value may quote a
// request or a header.
func (d *Daemon) redact(s string) string {
	d.mu.Lock()
	r := d.redactor
	d.mu.Unlock()
	return r.Redact(s)
}

// schedulerLogger hands gocron's chatter (scheduler created, started,
// stopped) to the debug level: toolpulse logs its own lifecycle at info,
// and an operator's info log should be one line per run.
type schedulerLogger struct{ l *slog.Logger }

func (s schedulerLogger) Debug(msg string, args ...any) { s.l.Debug(msg, args...) }
func (s schedulerLogger) Info(msg string, args ...any)  { s.l.Debug(msg, args...) }
func (s schedulerLogger) Warn(msg string, args ...any)  { s.l.Warn(msg, args...) }
func (s schedulerLogger) Error(msg string, args ...any) { s.l.Error(msg, args...) }
