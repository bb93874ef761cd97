package runner

import (
	"context"
	"errors"
	"log/slog"
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
//     (see scheduleProbe).
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

// errStillRunning skips a tick that comes while the probe's previous run
// is still going.
var errStillRunning = errors.New("the previous run of the probe is still going")

// probeNamespace derives job identifiers from probe names.
var probeNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/toolpulse/toolpulse#probe"))

// jobID is the gocron identifier of a probe's job: by name only, so that
// Update replaces a reloaded probe's job under the same identity.
func jobID(probe string) uuid.UUID {
	return uuid.NewSHA1(probeNamespace, []byte(probe))
}

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

// scheduleProbe creates or, with update, replaces p's job: every
// p.Interval, first at now plus a random offset in [0, p.Jitter), rounded
// up to the daemon's start tick (or the longest tick size within the
// jitter, if shorter): the offset is the job's fixed phase, and probes
// start in small groups, never all at once.
//
// A tick that comes while the probe's previous run is still going is
// skipped, not queued. The limiter's claim on the probe's name does that
// rather than gocron's singleton mode, which keeps a goroutine and a queue
// per job for the life of the scheduler (BENCHMARKS.md); being keyed by
// name, it also keeps a reloaded probe's first run off its old job's run.
func (d *Daemon) scheduleProbe(s gocron.Scheduler, p *checks.Probe, update bool) error {
	var err error
	// The clock can overtake a start before gocron checks it: try again.
	for range 3 {
		start := firstRun(d.clock.Now(), jitterOffset(d.rand(), p.Jitter), p.Jitter, min(d.tick, tickAtMost(p.Jitter)))
		fired := new(atomic.Bool)
		opts := []gocron.JobOption{
			gocron.WithName(p.Name),
			gocron.WithIdentifier(jobID(p.Name)),
			gocron.WithStartAt(gocron.WithStartDateTime(start)),
			gocron.WithEventListeners(
				// Called before gocron re-arms the job; once it says yes
				// the task runs, and gives the claim back.
				gocron.BeforeJobRunsSkipIfBeforeFuncErrors(func(uuid.UUID, string) error {
					fired.Store(true)
					if !d.limit.claim(p.Name) {
						return errStillRunning
					}
					return nil
				}),
				gocron.AfterJobRunsWithPanic(d.escapedPanic),
			),
		}
		task := gocron.NewTask(func(ctx context.Context) {
			defer d.limit.unclaim(p.Name)
			d.task(ctx, p)
		})
		var j gocron.Job
		if update {
			j, err = s.Update(jobID(p.Name), gocron.DurationJob(p.Interval), task, opts...)
		} else {
			j, err = s.NewJob(gocron.DurationJob(p.Interval), task, opts...)
		}
		if err == nil {
			if err := catchUpFirstRun(j, start, fired); err != nil {
				d.logger.Warn("the probe's first run was pushed to its next interval", "probe", p.Name, "error", err)
			}
		}
		if !errors.Is(err, gocron.ErrWithStartDateTimePast) {
			break
		}
	}
	return err
}

// catchUpFirstRun runs now a first run that gocron pushed a whole interval
// late because the clock overtook its start between the check and the
// arming of its timer: NextRun is past start and the job's listener has
// not fired. The run goes through the same listeners; the probe keeps its
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
