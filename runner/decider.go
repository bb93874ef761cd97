package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// The fleet-wide decider (SPEC §13, docs/locations.md). Any instance of a
// fleet may become it, through the lease results.DeciderLease, elected and
// fenced as each location's runner is. While it leads it decides, about
// every DecideEvery, the alerts of the probes that run from several
// locations (see fleetverdict.go for the rule), and its own outbox,
// fenced by its lease, delivers them. It keeps nothing of its own: each
// location's verdict is replayed from that location's recorded runs, and
// the announcement (firing, reminders, receivers told) is the probe's one
// alert_state row, which only the decider writes for these probes. A new
// decider, after a failover or a restart, reads both again and goes on
// where the last one committed.

// DecideEvery is how often the decider decides; a location's run is
// decided on within DecideEvery of being recorded.
const DecideEvery = time.Second

// DecisionStore is what the decider needs of a fleet's store
// (results/postgres) beyond Store: each location's runs, a decision's
// fenced commit, and the store's clock, by which locations turn silent.
type DecisionStore interface {
	// NewestRuns returns, for each of want in its order, the newest runs
	// of its probe from its location, newest first: the decider asks once
	// a round for every probe and location it decides about.
	NewestRuns(ctx context.Context, want []results.RunsFrom) ([][]results.Result, error)
	// RecordDecision commits the probe's alert state and alerts, refused
	// with results.ErrFenced once rec.Fence's epoch no longer holds the
	// decider's lease.
	RecordDecision(ctx context.Context, rec *results.DecisionRecord) error
	// Fleet returns the fleet as the store knows it, with its clock.
	Fleet(ctx context.Context) (results.Fleet, error)
}

// decider decides the fleet-wide alerts for one term of the decider's
// lease (see decide); a Daemon makes one per term.
type decider struct {
	store  DecisionStore
	states func(ctx context.Context) (map[string]results.AlertState, error)
	rc     *Recorder // the alert policy's config, silences and addressing
	config func() *checks.Config
	fence  results.Fence
	logger *slog.Logger
	wake   func() // the decider's deliverer's
	// fenced is told that the store refused the term's fence: a newer
	// decider holds the lease.
	fenced func()

	// states are the probes' alert states as this term committed them,
	// read from the store at the term's first round.
	alerts map[string]results.AlertState
}

// run decides every DecideEvery until ctx ends or the store refuses the
// term's fence.
func (dc *decider) run(ctx context.Context, clock clockwork.Clock) {
	failing := 0 // rounds failed in a row, for the log
	for {
		err := dc.round(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, results.ErrFenced):
			dc.logger.Warn("decider: the store refused a decision: a newer decider holds the lease", "epoch", dc.fence.Epoch)
			dc.fenced()
			return
		case err != nil:
			if failing++; failing == 1 {
				dc.logger.Error("decider: deciding failed; trying again", "error", err)
			}
		case failing > 0:
			dc.logger.Info("decider: deciding again", "failed_rounds", failing)
			failing = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-clock.After(DecideEvery):
		}
	}
}

// round decides about every probe of the config that runs from several
// locations, in config order. A probe whose decision fails is decided
// again next round; a refused fence ends the round.
func (dc *decider) round(ctx context.Context) error {
	if dc.alerts == nil {
		states, err := dc.states(ctx)
		if err != nil {
			return fmt.Errorf("load alert states: %w", err)
		}
		dc.alerts = states
	}
	f, err := dc.store.Fleet(ctx)
	if err != nil {
		return fmt.Errorf("read the store's clock: %w", err)
	}
	var (
		probes []*checks.Probe
		want   []results.RunsFrom
	)
	for _, p := range dc.config().Probes {
		if len(p.Locations) < 2 {
			continue
		}
		limit := replayRuns(dc.policy(p), p.Interval)
		for _, loc := range p.Locations {
			want = append(want, results.RunsFrom{Probe: p.Name, Location: loc, Limit: limit})
		}
		probes = append(probes, p)
	}
	if len(probes) == 0 {
		return nil
	}
	// Every location's runs of every probe, in one read of the store.
	runs, err := dc.store.NewestRuns(ctx, want)
	if err != nil {
		return fmt.Errorf("read the locations' runs: %w", err)
	}
	var errs []error
	for _, p := range probes {
		mine := runs[:len(p.Locations)]
		runs = runs[len(p.Locations):]
		if err := dc.decide(ctx, p, mine, f.Now); errors.Is(err, results.ErrFenced) {
			return err
		} else if err != nil {
			errs = append(errs, fmt.Errorf("probe %s: %w", p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// policy is the alert policy of p's route.
func (dc *decider) policy(p *checks.Probe) checks.Notify {
	rc := dc.rc
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.notify.Route(rc.labels[p.Name]).Notify
}

// decide makes and commits the fleet-wide decision about p, its
// locations' runs (runs[i]: from p.Locations[i], newest first) judged
// against storeNow.
func (dc *decider) decide(ctx context.Context, p *checks.Probe, runs [][]results.Result, storeNow time.Time) error {
	rc := dc.rc
	n := dc.policy(p)
	locs := make([]judged, 0, len(p.Locations))
	for i, loc := range p.Locations {
		locs = append(locs, judgeLocation(n, locationRuns{Location: loc, Runs: runs[i]}, storeNow, silentAfter(p)))
	}
	prev, known := dc.alerts[p.Name]
	vs := views(locs)
	failing := kOfN(p.AlertLocations(), vs, prev.IsFailing())
	r := spokesman(failing, locs)
	if r == nil {
		return nil // no location has said anything yet
	}

	var run recording
	rc.begin(&run, r, dc.fence)
	run.state, run.known = prev, known
	run.to.told = prev.Receivers
	if prev.Firing && run.to.told == nil {
		run.to.told = run.to.current
	}
	rc.checkSilence(ctx, &run)
	decideFleet(&run, n, failing, locs, vs)
	// A location's silence is announced on its own, never as the probe's
	// failure: the K-of-N decision above keeps firing and resolving.
	var silent, back []judged
	run.next.SilentLocations, silent, back = silentChanges(prev.SilentLocations, locs, run.now)
	run.alerts = append(run.alerts, silentAlerts(silent, back, run.now, run.silenced)...)
	creditMaintenance(&run)
	rc.addressAlerts(&run)
	groupSilentLocations(run.alerts)
	if known && sameState(run.next, prev) && len(run.alerts) == 0 {
		return nil
	}
	rec := results.DecisionRecord{Probe: p.Name, At: run.now, Alerts: run.alerts, Fence: dc.fence}
	if !known || !sameState(run.next, prev) {
		rec.AlertState = &run.next
	}
	if err := dc.store.RecordDecision(ctx, &rec); err != nil {
		return err
	}
	dc.alerts[p.Name] = run.next
	for _, a := range rec.Alerts {
		attrs := []any{"probe", a.Probe, "kind", a.Kind, "receiver", a.Receiver, "state", a.State}
		for _, v := range vs {
			attrs = append(attrs, v.Location, viewWord(v))
		}
		dc.logger.Info("decider: alert", attrs...)
	}
	if slices.ContainsFunc(rec.Alerts, func(a results.Alert) bool { return a.State == results.DeliveryPending }) {
		dc.wake()
	}
	return nil
}

// groupSilentLocations gives each pending location_silent and
// location_back alert the group of its receiver and location
// (results.LocationGroupKey), whatever its route's group_by: the probes of
// a dead location, each decided on its own, are one message per receiver
// (see silentGrouping for when it goes out).
func groupSilentLocations(alerts []results.Alert) {
	for i, a := range alerts {
		if (a.Kind != results.AlertLocationSilent && a.Kind != results.AlertLocationBack) ||
			a.State != results.DeliveryPending || len(a.Locations) != 1 {
			continue
		}
		alerts[i].GroupKey = results.LocationGroupKey(a.Receiver, a.Locations[0].Location)
	}
}

// maxSilentGroupWait bounds how long a location's group waits for its
// probes on a route that does not group (see silentGrouping).
const maxSilentGroupWait = 5 * time.Minute

// silentGrouping returns the grouping of a location's location_silent and
// location_back alerts to a receiver whose route does not group, for cfg.
// The probes of a dead location turn silent over about one interval
// (their last runs were spread over it) and are found so at the
// decider's next round: the message waits the longest interval of the
// probes of several locations and a round (at most maxSilentGroupWait),
// and a return as long after it. Probes of much longer intervals than the
// others turn silent later, in a message of their own.
func silentGrouping(cfg *checks.Config) checks.Grouping {
	longest := time.Duration(0)
	for _, p := range cfg.Probes {
		if len(p.Locations) > 1 {
			longest = max(longest, p.Interval)
		}
	}
	wait := min(longest+DecideEvery, maxSilentGroupWait)
	return checks.Grouping{GroupBy: []string{results.SilentLocationLabel}, GroupWait: wait, GroupInterval: wait}
}

// decideFleet is the decide stage of a fleet-wide decision: the probe's
// verdict failing (K of N of locs), counted for flapping as one verdict,
// then announced by the alert policy (announce) as one run's verdict is,
// the run being run.r, the spokesman. Every alert shows each location's
// view and names the decider.
func decideFleet(run *recording, n checks.Notify, failing bool, locs []judged, vs []results.LocationView) {
	prev := run.state
	next := fleetState(prev, run.probe, failing, locs)
	v := verdict{failing: failing}
	agrees := (run.r.Outcome != results.Pass) == failing
	next, v.flapping, v.flapStarted, v.settled = flaps(n.Flapping, next, failing != prev.IsFailing(), agrees, run.now)
	next, alerts := announce(n, prev, next, v, run.r, run.now, run.silenced)
	if slices.ContainsFunc(alerts, func(a results.Alert) bool { return a.Kind == results.AlertFiring }) {
		run.to.told = nil
	}
	if moved := movedFiring(n, prev, next, alerts, run.to, run.r, run.now, run.silenced); moved != nil {
		alerts = append(alerts, *moved)
	}
	for i := range alerts {
		alerts[i].Locations, alerts[i].Decider = slices.Clone(vs), results.DeciderLease
	}
	run.next, run.alerts = next, alerts
}

// viewWord is a location's view in one word, for the log.
func viewWord(v results.LocationView) string {
	switch {
	case v.Silent:
		return "silent"
	case v.Failing:
		return "failing"
	}
	return "passing"
}

// deciderRole is the decider's side of an instance: whether it holds the
// decider's lease, under which epoch. Its elector's callbacks set wanted
// and wake the loop that starts and stops the terms (runDecider).
type deciderRole struct {
	mu     sync.Mutex
	wanted int64 // the epoch to decide under; 0: none
	wake   chan struct{}
}

func (r *deciderRole) want(epoch int64) {
	r.mu.Lock()
	r.wanted = epoch
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// refusedUnder steps down unless a newer term has begun.
func (r *deciderRole) refusedUnder(epoch int64) {
	r.mu.Lock()
	if r.wanted == epoch {
		r.wanted = 0
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// runDecider is the decider's side of an instance of a fleet whose store
// keeps decisions, until ctx ends: while the config has a probe of
// several locations, it claims the decider's lease with an elector of its
// own; while it holds the lease under an epoch, a term decides and
// delivers the decider's alerts under that epoch (startDeciding). A
// lapsed or deposed decider stops deciding at once: a decision missed for
// a few seconds is made by the next decider, from the same runs.
func (d *Daemon) runDecider(ctx context.Context, store DecisionStore) {
	role := &deciderRole{wake: make(chan struct{}, 1)}
	var (
		stopElector func()
		stopTerm    func()
		epoch       int64
	)
	endTerm := func() {
		if stopTerm != nil {
			stopTerm()
			stopTerm, epoch = nil, 0
		}
	}
	tick := d.clock.NewTicker(DecideEvery)
	defer tick.Stop()
	for {
		wide := len(fleetWide(d.config())) > 0
		switch {
		case wide && stopElector == nil:
			stopElector = d.electDecider(ctx, role)
		case !wide && stopElector != nil:
			stopElector()
			stopElector = nil
		}
		role.mu.Lock()
		want := role.wanted
		role.mu.Unlock()
		if want != epoch {
			endTerm()
			if want != 0 {
				stopTerm, epoch = d.startDeciding(store, role, want), want
			}
		}
		select {
		case <-ctx.Done():
			if stopElector != nil {
				stopElector() // releases the lease
			}
			endTerm()
			return
		case <-role.wake:
		case <-tick.Chan():
		}
	}
}

// electDecider runs an elector for the decider's lease until the returned
// stop is called (which releases the lease and waits for it).
func (d *Daemon) electDecider(ctx context.Context, role *deciderRole) (stop func()) {
	ectx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	e := &elector{
		store: d.fleet.Store, location: results.DeciderLease, node: d.node, ttl: d.ttl,
		clock: d.clock, rand: d.rand, logger: d.logger,
		elected: role.want,
		lapsed:  func() { role.want(0) },
		deposed: func() { role.want(0) },
	}
	go func() {
		defer close(done)
		e.run(ectx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// startDeciding starts a term of the decider under epoch: the decision
// loop and a deliverer of the decider's alerts, both fenced by the
// decider's lease at epoch. stop ends both and waits for them.
func (d *Daemon) startDeciding(store DecisionStore, role *deciderRole, epoch int64) (stop func()) {
	f := results.Fence{Location: results.DeciderLease, Epoch: epoch}
	ctx, cancel := context.WithCancel(d.runCtx)
	logger := d.logger.With("role", "decider", "node", d.node, "epoch", epoch)
	refused := func() { role.refusedUnder(epoch) }
	deliv := newDeliverer(d.fleet.Store.FencedOutbox(f), d.sender, d.delivery)
	deliv.grouping = d.sender.grouping
	deliv.silentGrouping = func() checks.Grouping { return silentGrouping(d.config()) }
	deliv.use(d.fleet.Store.FencedOutbox(f), refused)
	dc := &decider{
		store: store, states: d.rec.store.AlertStates, rc: d.rec, config: d.config, fence: f,
		logger: logger, wake: deliv.Wake, fenced: refused,
	}
	var wg sync.WaitGroup
	wg.Go(func() { dc.run(ctx, d.clock) })
	wg.Go(func() { deliv.Run(ctx) })
	// The receivers' own loops (Alertmanager's re-posts of what fires)
	// run while the decider delivers, leading a location or not, from
	// what the last decider told them is active.
	if active, ok := d.fleet.Store.(ActiveAlerts); ok {
		d.sender.restore(ctx, active, logger)
	}
	d.sender.start(d.runCtx)
	logger.Info("fleet: deciding the alerts of probes of several locations, and delivering them")
	return func() {
		cancel()
		wg.Wait()
		d.sender.stop()
		logger.Info("fleet: no longer deciding")
	}
}

// config is the config in force.
func (d *Daemon) config() *checks.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}
