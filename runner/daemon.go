// Package runner is the daemon: it schedules every probe (gocron), bounds
// the runs in flight, hands each run to the engine (runner/prober), and
// passes each result through the Recorder (drift, the alert policy, the
// store) to the deliverer. It reaches the store, the receivers and the
// metrics only through the interfaces it declares.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner/prober"
)

// defaultGracePeriod is how long in-flight runs may finish on shutdown when
// Deps.GracePeriod is zero.
const defaultGracePeriod = 10 * time.Second

// drainTimeout is how long shutdown waits for cancelled runs to return
// and be written; only a stuck store can use it up.
const drainTimeout = writeTimeout + 5*time.Second

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
	// its jitter window and jitters the write queue's back-off.
	Rand func() float64
	// GracePeriod is how long runs in flight may go on at shutdown, or
	// after a reload removed or changed their probe. 0:
	// defaultGracePeriod; negative: cancel at once.
	GracePeriod time.Duration
	// WriteQueue: see RecorderOptions.WriteQueue.
	WriteQueue int
	// Delivery tunes the deliverer; its Logger, Observer and Clock are the
	// Daemon's.
	Delivery delivererOptions
	// Fleet, when set, makes the Daemon one instance of a fleet: it runs
	// probes and delivers alerts only while it leads its location. nil: a
	// single instance, which leads alone (SQLite).
	Fleet *Fleet
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

// Daemon schedules every probe of a config and sends each run through the
// Executor and the Recorder. Runs are bounded by max_concurrency, and a
// probe never overlaps itself. Shutdown drains: runs in flight get a grace
// period, are then cancelled, and are recorded either way; a run the store
// cannot take waits in the write queue.
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
	delivery delivererOptions // the deliverers' options, the decider's too
	senders  func(*checks.Config) (Senders, error)
	sender   *receiverSet
	grace    time.Duration
	limit    *limiter
	// node is the config's fleet.node at New, recorded with every run: an
	// instance's name is fixed for its life (a reload does not change it).
	node      string
	drainWait time.Duration // drainTimeout, shorter in tests

	// A fleet's instance (nil fleet: a single one). roleMu guards wanted
	// and have; only the leadership loop changes have, and only it
	// touches stopDelivering. See lead.go.
	fleet          *Fleet
	location       string
	ttl            time.Duration
	started        time.Time       // when Run began, for the heartbeats
	runCtx         context.Context // Run's values without its end
	roleWake       chan struct{}
	roleMu         sync.Mutex
	wanted, have   role
	stopDelivering func() // nil: the deliverer is not running

	// jobsMu serializes changes to the set of jobs (Run scheduling, Reload,
	// shutdown), so that a reload never interleaves with either end of Run.
	jobsMu sync.Mutex
	// tick is the grid first runs fall on (startTick of the probes the
	// instance schedules); groups are the jobs, scheduled the probes in
	// them (see jobGroup). Guarded by jobsMu.
	tick      time.Duration
	groups    map[jobKey]*jobGroup
	scheduled map[string]*scheduledProbe

	mu       sync.Mutex // guards what follows
	state    daemonState
	cfg      *checks.Config
	redactor *results.Redactor
	sched    gocron.Scheduler
	// probes are the scheduled probes by name; one a reload left unchanged
	// keeps the value its scheduledProbe holds.
	probes map[string]*checks.Probe
	// scheduling: the probes have jobs. Always, once Run has scheduled
	// them, for a single instance; while leading or lapsed in a fleet.
	scheduling bool
	active     int           // tasks between begin and end
	drained    chan struct{} // closed once active is 0 after shutdown began
	// stopCtx ends when shutdown begins: runs waiting for a slot give up.
	// hardCtx ends when the grace period is over: runs in flight are
	// cancelled.
	stopCtx    context.Context
	stopCancel context.CancelFunc
	hardCtx    context.Context
	hardCancel context.CancelFunc
}

// New returns a Daemon for cfg with the Executor, the Recorder and the
// deliverer. It schedules nothing until Run.
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
		node:     cfg.Fleet.Node,
		cfg:      cfg,
		redactor: cfg.Redactor(),
		probes:   make(map[string]*checks.Probe, len(cfg.Probes)),
	}
	d.drainWait = drainTimeout
	d.location = results.LocationOrDefault(cfg.Fleet.Location)
	if f := deps.Fleet; f != nil {
		if f.Store == nil {
			return nil, errors.New("runner: New: a fleet needs its FleetStore")
		}
		d.fleet, d.ttl, d.roleWake = f, f.TTL, make(chan struct{}, 1)
		if f.Location != "" {
			d.location = f.Location
		}
		if d.ttl <= 0 {
			d.ttl = checks.DefaultLease
		}
	}
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
	d.sender.setGroups(cfg.Notify)
	for _, p := range localProbes(cfg, d.location) {
		d.probes[p.Name] = p
	}
	d.exec = prober.NewExecutor(prober.Options{Logger: d.logger, Redactor: d.redactor})
	delivery := deps.Delivery
	delivery.Logger, delivery.Observer, delivery.Clock = d.logger, d.observer, d.clock
	d.deliv = newDeliverer(deps.Store, d.sender, delivery)
	d.delivery = delivery
	d.deliv.grouping = d.sender.grouping
	d.rec = NewRecorder(deps.Store, cfg.Notify, RecorderOptions{
		Logger: d.logger, Deliver: len(senders) > 0, Labels: ProbeLabels(cfg), Targets: probeTargets(cfg), Observer: d.observer, Wake: d.deliv.Wake,
		WriteQueue: deps.WriteQueue, Clock: d.clock, Rand: d.rand, Redact: d.redact,
		Silences: deps.Silences, Maintenance: cfg.Maintenance, Fenced: d.refused, FleetWide: fleetWide(cfg),
	})
	if d.fleet != nil {
		// Until elected, an instance of a fleet decides nothing.
		d.rec.standBy()
	}
	d.observer.SetProbes(d.probeNames(cfg))
	d.observer.SetReceivers(slices.Sorted(maps.Keys(senders)))
	return d, nil
}

// probeNames are the names of cfg's probes that run from d's location,
// in config order.
func (d *Daemon) probeNames(cfg *checks.Config) []string {
	local := localProbes(cfg, d.location)
	names := make([]string, len(local))
	for i, p := range local {
		names[i] = p.Name
	}
	return names
}

// Run schedules every probe and runs until ctx ends, then drains (see
// shutdown), tries once more for a grace period to write the queued runs,
// stops the deliverer and returns nil. It returns an error only when it
// could not start (called twice, alert states unreadable, a probe gocron
// refuses).
//
// An instance of a fleet (Deps.Fleet) runs its elector instead: it
// schedules the probes and delivers alerts only while it leads (see
// lead.go); its alert states are read at each election, not at the start.
// When ctx ends it gives up the lease first, so that a standby takes over
// at once, and writes what is left as handovers.
func (d *Daemon) Run(ctx context.Context) error {
	d.jobsMu.Lock()
	d.mu.Lock()
	if d.state != stateIdle {
		d.mu.Unlock()
		d.jobsMu.Unlock()
		return errors.New("runner: Daemon.Run called more than once")
	}
	if d.fleet == nil {
		if err := d.rec.Load(ctx); err != nil {
			d.mu.Unlock()
			d.jobsMu.Unlock()
			return err
		}
	}
	s, err := newScheduler(d.clock, d.logger)
	if err != nil {
		d.mu.Unlock()
		d.jobsMu.Unlock()
		return fmt.Errorf("runner: new scheduler: %w", err)
	}
	// The run contexts keep ctx's values but not its end: ctx ending
	// starts the drain, it does not cut runs short.
	d.runCtx = context.WithoutCancel(ctx)
	d.hardCtx, d.hardCancel = context.WithCancel(d.runCtx)
	d.stopCtx, d.stopCancel = context.WithCancel(d.hardCtx)
	d.sched, d.state = s, stateRunning
	d.scheduling = d.fleet == nil
	d.started = d.clock.Now()
	probes := d.scheduledInOrder()
	d.mu.Unlock()
	d.sayWhere(d.cfg, len(probes))

	// The queue's writer outlives the drain: the runs in flight may queue
	// results up to its end. Then one last attempt, see closeQueue.
	qctx, stopWriter := context.WithCancel(d.runCtx)
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
	if d.fleet != nil {
		d.jobsMu.Unlock()
		return d.runFleet(ctx, closeQueue)
	}
	var errs []error
	d.tick = startTick(probes, d.maxConcurrency())
	for _, p := range probes {
		if err := d.scheduleProbe(s, p); err != nil {
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
	d.observer.SetLeader(true)

	// The deliverer outlives the drain, so that alerts of the last runs
	// still go out; what it cannot send stays in the outbox.
	dctx, stopDeliverer := context.WithCancel(d.runCtx)
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

// runFleet is Run for an instance of a fleet, once the scheduler and the
// write queue run: the elector and the leadership loop until ctx ends;
// then the lease is released, the instance stands by, and the runs in
// flight and queued are drained as handovers.
func (d *Daemon) runFleet(ctx context.Context, closeQueue func()) error {
	ectx, stopElector := context.WithCancel(d.runCtx)
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		d.runElector(ectx)
	}()
	lctx, stopLeading := context.WithCancel(d.runCtx)
	led := make(chan struct{})
	go func() {
		defer close(led)
		d.leadLoop(lctx)
	}()
	decided := make(chan struct{})
	dctx, stopDecider := context.WithCancel(d.runCtx)
	go func() {
		defer close(decided)
		if ds, ok := d.fleet.Store.(DecisionStore); ok {
			d.runDecider(dctx, ds)
		}
	}()
	d.logger.Info("fleet: standing by until elected", "node", d.node, "location", d.location, "lease", d.ttl)

	<-ctx.Done()
	stopDecider()
	<-decided
	stopElector()
	<-elected
	stopLeading()
	<-led
	d.shutdown()
	closeQueue()
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

// State is idle, running, stopping or stopped.
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

// Pending returns how many runs wait to be written: above 0, the store is
// not keeping up.
func (d *Daemon) Pending() int { return d.rec.Pending() }

// Role is what an instance is in its fleet (SPEC §12) at one moment.
type Role struct {
	Node     string // fleet.node
	Location string // the location whose lease it claims
	Leading  bool   // it schedules probes and delivers alerts
	// Lapsed: it led, and stopped trusting its lease before it could
	// renew it (the store is unreachable): it runs probes on into the
	// write queue, and delivers nothing. Not Leading.
	Lapsed bool
	Epoch  int64 // the lease's epoch while Leading or Lapsed; 0 for a single instance
	// Idle: no probe of the config runs from its Location, so it runs
	// nothing, leading or not (SPEC §13).
	Idle bool
}

// Role returns what the instance is now. A daemon without a fleet leads
// alone, from its start.
func (d *Daemon) Role() Role {
	d.mu.Lock()
	idle := d.idleLocked()
	d.mu.Unlock()
	if d.fleet == nil {
		return Role{Node: d.node, Location: d.location, Leading: true, Idle: idle}
	}
	d.roleMu.Lock()
	h := d.have
	d.roleMu.Unlock()
	return Role{Node: d.node, Location: d.location, Leading: h.kind == leading, Lapsed: h.kind == lapsed, Epoch: h.epoch, Idle: idle}
}

// redact scrubs the config's secrets from s: a panic value may quote a
// request or a header.
func (d *Daemon) redact(s string) string {
	d.mu.Lock()
	r := d.redactor
	d.mu.Unlock()
	return r.Redact(s)
}
