package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
)

// gocron runs the schedule; toolpulse overrides its defaults where a
// prober needs otherwise, once, here:
//   - the daemon's clock (WithClock), so that tests drive the schedule;
//   - its logger at debug for gocron's lifecycle chatter (WithLogger): an
//     operator's info log is one line per run;
//   - UTC (WithLocation): the schedule is intervals, and must not move
//     with the host's zone;
//   - a short stop bound (WithStopTimeout): shutdown drains the tasks
//     itself (see Daemon.shutdown), so gocron's is only a backstop;
//   - per job, a jittered first run instead of an immediate one, and no
//     singleton mode: the limiter's claim skips overlapping ticks instead
//     (see scheduleProbe); a job runs a group of probes (jobGroup).
const schedulerStopTimeout = 5 * time.Second

// newScheduler returns the daemon's gocron scheduler, not started.
func newScheduler(clock clockwork.Clock, logger *slog.Logger) (gocron.Scheduler, error) {
	return gocron.NewScheduler(
		gocron.WithClock(clock),
		gocron.WithLogger(schedulerLogger{logger}),
		gocron.WithStopTimeout(schedulerStopTimeout),
		gocron.WithLocation(time.UTC),
	)
}

// minStartLead is the earliest a probe's first run may be scheduled after
// now: gocron refuses a start already past when it checks it, and pushes
// one past by the time it arms the timer a whole interval later
// (catchUpFirstRun repairs that on a busy machine).
const minStartLead = 10 * time.Millisecond

// jitterOffset is where in [0, jitter) a probe's first run falls, from r
// in [0, 1); an r outside is clamped.
func jitterOffset(r float64, jitter time.Duration) time.Duration {
	if r < 0 || r != r { // r != r: NaN
		r = 0
	}
	off := time.Duration(r * float64(jitter))
	if off >= jitter {
		off = max(jitter-1, 0)
	}
	return off
}

// Start ticks. A daemon whose runs are spread evenly in time wakes for
// each one, and at 100 runs a second or fewer most of its CPU went to
// waking up rather than to the runs: the Go scheduler parking and waking
// threads, its monitor thread polling every 20 µs for a millisecond after
// each wake, and a commit per run (BENCHMARKS.md, "Start ticks"). So
// first runs fall on a grid of ticks, sized so that a tick gathers a few
// dozen runs of the instance's probes: those runs start together, share
// their commits, and the daemon wakes once for them and then sleeps. Each
// probe keeps a random phase within its jitter window, rounded up to a
// tick no longer than its jitter, and its regular interval.
//
// runsPerTick is how many runs a tick aims at, at most; a tick never
// aims at more than half the concurrency slots, so that the runs of a
// tick do not wait for each other's slots.
const runsPerTick = 50

// tickSizes are the ticks a grid may have: each divides a second, so that
// runs every whole number of seconds stay on their grid.
var tickSizes = []time.Duration{
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second,
}

// startTick is the grid for probes, run with slots concurrency slots: the
// longest tick size in which they are expected to start no more runs than
// runsPerTick and half the slots; 0 (no grid) when even that tick would
// gather fewer than two.
func startTick(probes []*checks.Probe, slots int) time.Duration {
	var perSecond float64
	for _, p := range probes {
		if p.Interval > 0 {
			perSecond += float64(time.Second) / float64(p.Interval)
		}
	}
	if perSecond == 0 {
		return 0
	}
	runs := float64(max(min(runsPerTick, slots/2), 1))
	tick := tickAtMost(time.Duration(runs / perSecond * float64(time.Second)))
	if perSecond*tick.Seconds() < 2 {
		return 0 // a tick of fewer than two runs would move first runs for nothing
	}
	return tick
}

// tickAtMost is the longest tick size not above limit, or 0 if none is.
func tickAtMost(limit time.Duration) time.Duration {
	tick := time.Duration(0)
	for _, size := range tickSizes {
		if size <= limit {
			tick = size
		}
	}
	return tick
}

// firstRun is when a probe first runs: now plus offset (its phase in
// [0, jitter)), moved onto the grid of tick, to the tick after it or else
// the one before, whichever stays within [now + minStartLead,
// now + jitter); a tick of 0, or one neither fits, leaves it alone.
func firstRun(now time.Time, offset, jitter, tick time.Duration) time.Time {
	at := now.Add(max(offset, minStartLead))
	if tick <= 0 {
		return at
	}
	down := at.Truncate(tick) // on the grid of every probe: multiples since the zero time
	if up := down.Add(tick); !down.Equal(at) && up.Before(now.Add(jitter)) {
		return up
	}
	if !down.Before(now.Add(minStartLead)) {
		return down
	}
	return at
}

// Probes that share an interval and a start tick share one gocron job: a
// jobGroup. The grid already starts them together; one job for them all
// keeps the scheduler's state per tick rather than per probe (gocron keeps
// some 1.8 KB, a context and a timer for each job: most of the daemon's
// memory at 10,000 probes, BENCHMARKS.md). Without a grid every probe has
// a group, and a job, of its own.
type jobGroup struct {
	key   jobKey
	id    uuid.UUID // gocron's, once the job exists
	mu    sync.Mutex
	probe []*scheduledProbe // in the order they joined
	// due are the probes claimed for the job's run about to start.
	due []*scheduledProbe
}

// jobKey identifies a group: the probe's name when there is no grid,
// else the interval and where in it the runs fall, on the grid.
type jobKey struct {
	probe    string
	interval time.Duration
	phase    time.Duration // the first run's time since the Unix epoch, modulo interval
}

// name is the group's gocron job name: its probe's, or its schedule.
func (k jobKey) name() string {
	if k.probe != "" {
		return k.probe
	}
	return fmt.Sprintf("every %s at +%s", k.interval, k.phase)
}

// scheduledProbe is a probe's place in a group, from scheduleProbe to
// unscheduleProbe. Its removal ends its run in flight, after the grace
// period (see whenRemoved).
type scheduledProbe struct {
	probe *checks.Probe
	group *jobGroup

	mu      sync.Mutex
	removed bool
	// onRemove is called once the probe is removed: the run in flight's
	// (at most one; the limiter's claim keeps runs of a probe apart).
	onRemove func()
}

// whenRemoved arranges for f to be called once sp is removed from the
// schedule, at once if it already is; stop undoes that. A call to f may
// already be under way when stop returns: f must allow for it.
func (sp *scheduledProbe) whenRemoved(f func()) (stop func()) {
	sp.mu.Lock()
	if sp.removed {
		sp.mu.Unlock()
		f()
		return func() {}
	}
	sp.onRemove = f
	sp.mu.Unlock()
	return func() {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		sp.onRemove = nil
	}
}

// markRemoved tells the run in flight, if any, that sp was removed.
func (sp *scheduledProbe) markRemoved() {
	sp.mu.Lock()
	sp.removed = true
	f := sp.onRemove
	sp.onRemove = nil
	sp.mu.Unlock()
	if f != nil {
		f()
	}
}

// scheduleProbe schedules p: every p.Interval, first at now plus a random
// offset in [0, p.Jitter), rounded up to the daemon's start tick (or the
// longest tick size within the jitter, if shorter): the offset is the
// probe's fixed phase, and probes start in small groups, never all at
// once. A probe whose first run falls where a group's runs do joins it;
// otherwise it gets a group and a job. d.jobsMu must be held.
//
// A tick that comes while the probe's previous run is still going is
// skipped for that probe, not queued: the limiter's claim on its name
// does that, rather than gocron's singleton mode, which keeps a goroutine
// and a queue per job for the life of the scheduler (BENCHMARKS.md);
// being keyed by name, it also keeps a reloaded probe's first run off its
// old run.
func (d *Daemon) scheduleProbe(s gocron.Scheduler, p *checks.Probe) error {
	var err error
	// The clock can overtake a start before gocron checks it: try again.
	for range 3 {
		tick := min(d.tick, tickAtMost(p.Jitter))
		start := firstRun(d.clock.Now(), jitterOffset(d.rand(), p.Jitter), p.Jitter, tick)
		key := jobKey{probe: p.Name}
		if tick > 0 {
			key = jobKey{interval: p.Interval, phase: time.Duration(start.UnixNano() % int64(p.Interval))}
		}
		if g := d.groups[key]; g != nil {
			d.join(g, p)
			return nil
		}
		g := &jobGroup{key: key}
		d.join(g, p) // before the job exists: it may fire at once
		fired := new(atomic.Bool)
		var j gocron.Job
		j, err = s.NewJob(gocron.DurationJob(p.Interval), gocron.NewTask(d.runGroup, g),
			gocron.WithName(key.name()),
			gocron.WithStartAt(gocron.WithStartDateTime(start)),
			gocron.WithEventListeners(
				gocron.BeforeJobRunsSkipIfBeforeFuncErrors(func(uuid.UUID, string) error {
					fired.Store(true)
					return d.claimDue(g)
				}),
				gocron.AfterJobRunsWithPanic(d.escapedPanic),
			))
		if err == nil {
			g.id = j.ID()
			if d.groups == nil {
				d.groups = map[jobKey]*jobGroup{}
			}
			d.groups[key] = g
			if err := catchUpFirstRun(j, start, fired); err != nil {
				d.logger.Warn("the probe's first run was pushed to its next interval", "probe", p.Name, "error", err)
			}
			return nil
		}
		delete(d.scheduled, p.Name)
		if !errors.Is(err, gocron.ErrWithStartDateTimePast) {
			break
		}
	}
	return err
}

// join adds p to g. d.jobsMu must be held.
func (d *Daemon) join(g *jobGroup, p *checks.Probe) {
	sp := &scheduledProbe{probe: p, group: g}
	g.mu.Lock()
	g.probe = append(g.probe, sp)
	g.mu.Unlock()
	if d.scheduled == nil {
		d.scheduled = map[string]*scheduledProbe{}
	}
	d.scheduled[p.Name] = sp
}

// unscheduleProbe removes the probe named name from the schedule, and its
// group's job with the last of the group: a run in flight gets the grace
// period. d.jobsMu must be held.
func (d *Daemon) unscheduleProbe(s gocron.Scheduler, name string) error {
	sp := d.scheduled[name]
	if sp == nil {
		return nil
	}
	delete(d.scheduled, name)
	sp.markRemoved()
	g := sp.group
	g.mu.Lock()
	g.probe = slices.DeleteFunc(g.probe, func(x *scheduledProbe) bool { return x == sp })
	empty := len(g.probe) == 0
	g.mu.Unlock()
	if !empty {
		return nil
	}
	delete(d.groups, g.key)
	if err := s.RemoveJob(g.id); err != nil && !errors.Is(err, gocron.ErrJobNotFound) {
		return err
	}
	return nil
}

// errNoneDue skips a run of a group's job in which every probe of the
// group is still running.
var errNoneDue = errors.New("every probe of the group is still running")

// claimDue claims the probes of g whose previous run is over, for the run
// of g's job that gocron is about to start; runGroup starts them. gocron
// calls it before it re-arms the job, so that whoever sees the job armed
// again sees its probes going.
func (d *Daemon) claimDue(g *jobGroup) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.due)
	for _, sp := range g.probe {
		if d.limit.claim(sp.probe.Name) {
			g.due = append(g.due, sp)
		}
	}
	if len(g.due) == n {
		return errNoneDue
	}
	return nil
}

// runGroup is a group's job: it starts a run of each probe claimDue
// claimed.
func (d *Daemon) runGroup(g *jobGroup) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, sp := range g.due {
		go d.task(sp)
	}
	clear(g.due)
	g.due = g.due[:0]
}

// catchUpFirstRun runs now a first run that gocron pushed a whole interval
// late because the clock overtook its start between the check and the
// arming of its timer: NextRun is past start and the job's listener has
// not fired. The run goes through the same listeners; the group keeps its
// phase.
func catchUpFirstRun(j gocron.Job, start time.Time, fired *atomic.Bool) error {
	next, err := j.NextRun()
	if err != nil || !next.After(start) || fired.Load() {
		return nil // removed meanwhile, still waiting, or already fired
	}
	return j.RunNow()
}

// schedulerLogger hands gocron's info lines to debug (see newScheduler).
type schedulerLogger struct{ l *slog.Logger }

func (s schedulerLogger) Debug(msg string, args ...any) { s.l.Debug(msg, args...) }
func (s schedulerLogger) Info(msg string, args ...any)  { s.l.Debug(msg, args...) }
func (s schedulerLogger) Warn(msg string, args ...any)  { s.l.Warn(msg, args...) }
func (s schedulerLogger) Error(msg string, args ...any) { s.l.Error(msg, args...) }
