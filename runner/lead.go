package runner

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// Fleet makes a Daemon one instance of a fleet (SPEC §12): instances
// sharing one store elect, per location, the one that schedules probes and
// delivers alerts; the others stand by.
type Fleet struct {
	// Store keeps the location's lease, the heartbeats and the fenced
	// outbox; it is the Daemon's Store too.
	Store FleetStore
	// Location is the location whose lease the instance claims; "":
	// results.DefaultLocation.
	Location string
	// TTL is fleet.lease: how long leadership outlives its holder's last
	// renewal. 0: checks.DefaultLease.
	TTL time.Duration
	// Version is the toolpulse version the heartbeats report.
	Version string
}

// roleKind is where an instance of a fleet is in its leadership.
type roleKind int

const (
	// standby: it neither runs probes nor delivers alerts; a run still
	// in flight or queued is written as a handover.
	standby roleKind = iota
	// leading: it holds the lease and trusts it; it runs probes, and
	// delivers alerts through the outbox fenced by its epoch.
	leading
	// lapsed: it led under epoch, and could not renew the lease before it
	// stopped trusting it (the store is unreachable, say). It runs probes
	// on, into the write queue, writing under epoch while the store takes
	// it; it delivers nothing. Renewing under epoch leads again, a new
	// epoch begins a new term, another holder deposes it.
	lapsed
)

func (k roleKind) String() string { return [...]string{"standby", "leading", "lapsed"}[k] }

// role is a leadership state: its kind and, unless standby, its epoch.
type role struct {
	kind  roleKind
	epoch int64
	why   string // what made it, for the log
}

func (r role) same(o role) bool { return r.kind == o.kind && r.epoch == o.epoch }

// fence is the leadership the writes of a role claim.
func (d *Daemon) fence(epoch int64) results.Fence {
	return results.Fence{Location: d.location, Epoch: epoch}
}

// want records what the instance should be, told by the elector or by a
// store refusing a fence, and wakes the leadership loop. It never blocks:
// its callers are the elector's loop and writes in flight.
func (d *Daemon) want(update func(w role) role) {
	d.roleMu.Lock()
	d.wanted = update(d.wanted)
	d.roleMu.Unlock()
	select {
	case d.roleWake <- struct{}{}:
	default:
	}
}

func (d *Daemon) elected(epoch int64) {
	d.want(func(role) role { return role{kind: leading, epoch: epoch, why: "elected"} })
}

func (d *Daemon) lapsed() {
	d.want(func(w role) role {
		if w.kind == leading {
			w.kind, w.why = lapsed, "the lease could not be renewed before the instance stopped trusting it"
		}
		return w
	})
}

func (d *Daemon) deposed() {
	d.want(func(role) role {
		return role{kind: standby, why: "another instance holds the lease, or this one stops"}
	})
}

// refused is told that the store refused a write claiming f: a newer
// epoch holds the lease. The instance steps down at once, unless it has
// since begun another term.
func (d *Daemon) refused(f results.Fence) {
	d.want(func(w role) role {
		if w.kind != standby && w.epoch == f.Epoch {
			return role{kind: standby, why: "the store refused a write of this epoch: a newer leader holds the lease"}
		}
		return w
	})
}

// leadLoop makes the instance what the elector says it is, one change at
// a time, until ctx ends; then it stands by (the deliverer stopped, the
// runs left written as handovers) and returns.
func (d *Daemon) leadLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			d.become(role{kind: standby, why: "stopping"})
			return
		case <-d.roleWake:
		}
		d.roleMu.Lock()
		w := d.wanted
		d.roleMu.Unlock()
		d.become(w)
	}
}

// become moves the instance from the role it has to w: the deliverer runs
// only while leading, under the term's fence; probes are scheduled while
// leading or lapsed; a new epoch is a new term for the Recorder (see
// Recorder.lead), and standing by makes it write handovers.
func (d *Daemon) become(w role) {
	d.roleMu.Lock()
	h := d.have
	d.roleMu.Unlock()
	if h.same(w) {
		return
	}
	newTerm := w.kind != standby && (h.kind == standby || h.epoch != w.epoch)
	if d.stopDelivering != nil && (w.kind != leading || newTerm) {
		d.stopDelivering()
		d.stopDelivering = nil
	}
	switch {
	case w.kind == standby:
		d.unscheduleAll()
		d.rec.standBy()
	case newTerm:
		d.rec.lead(d.fence(w.epoch))
	}
	if w.kind != standby {
		d.scheduleAll()
	}
	if w.kind == leading && d.stopDelivering == nil {
		d.startDelivering(d.fence(w.epoch))
	}

	d.roleMu.Lock()
	d.have = w
	d.roleMu.Unlock()
	if (h.kind == leading) != (w.kind == leading) {
		d.observer.SetLeader(w.kind == leading)
	}
	attrs := []any{"node", d.node, "location", d.location, "role", w.kind.String(), "why", w.why}
	if w.kind != standby {
		attrs = append(attrs, "epoch", w.epoch)
	}
	switch w.kind {
	case leading:
		d.logger.Info("fleet: leading: running probes and delivering alerts", attrs...)
	case lapsed:
		d.logger.Warn("fleet: lapsed: running probes into the write queue; not delivering alerts", attrs...)
	default:
		d.logger.Info("fleet: standing by", attrs...)
	}
}

// startDelivering runs the deliverer, and the receivers' own loops, for
// the term of f; stopDelivering ends both, a Send in flight within its
// grace.
func (d *Daemon) startDelivering(f results.Fence) {
	ctx, cancel := context.WithCancel(d.runCtx)
	done := make(chan struct{})
	d.deliv.use(d.fleet.Store.FencedOutbox(f), func() { d.refused(f) })
	go func() {
		defer close(done)
		d.deliv.Run(ctx)
	}()
	d.sender.start(d.runCtx)
	d.stopDelivering = func() {
		cancel()
		<-done
		d.sender.stop()
	}
}

// scheduleAll schedules every probe, each first run at a fresh offset in
// its jitter window, unless they are scheduled or shutdown has begun.
func (d *Daemon) scheduleAll() {
	d.jobsMu.Lock()
	defer d.jobsMu.Unlock()
	d.mu.Lock()
	if d.state != stateRunning || d.scheduling {
		d.mu.Unlock()
		return
	}
	d.scheduling = true
	s, probes := d.sched, d.scheduledInOrder()
	d.mu.Unlock()
	d.tick = startTick(probes, d.maxConcurrency())
	for _, p := range probes {
		if err := d.scheduleProbe(s, p); err != nil {
			d.logger.Error("scheduling the probe failed", "probe", p.Name, "error", err)
		}
	}
	d.logger.Info("scheduler started", "probes", len(probes), "max_concurrency", d.maxConcurrency())
}

// unscheduleAll removes every probe's job. Runs in flight go on for the
// grace period (see runContext) and are written under the term then
// current.
func (d *Daemon) unscheduleAll() {
	d.jobsMu.Lock()
	defer d.jobsMu.Unlock()
	d.mu.Lock()
	if !d.scheduling || d.state != stateRunning {
		d.scheduling = false
		d.mu.Unlock()
		return
	}
	d.scheduling = false
	s := d.sched
	d.mu.Unlock()
	names := slices.Collect(maps.Keys(d.scheduled))
	for _, name := range names {
		if err := d.unscheduleProbe(s, name); err != nil {
			d.logger.Error("unscheduling the probe failed", "probe", name, "error", err)
		}
	}
	d.logger.Info("scheduler paused: not leading", "probes", len(names))
}

// runElector claims the location's lease until ctx ends, heartbeating.
func (d *Daemon) runElector(ctx context.Context) {
	f := d.fleet
	e := &elector{
		store: f.Store, location: d.location, node: d.node, ttl: d.ttl,
		clock: d.clock, rand: d.rand, logger: d.logger,
		elected: d.elected, lapsed: d.lapsed, deposed: d.deposed,
		beat: func(ctx context.Context) error {
			return f.Store.Heartbeat(ctx, results.FleetNode{Node: d.node, Location: d.location, Version: f.Version, Started: d.started})
		},
	}
	e.run(ctx)
}
