package runner

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"

	"github.com/toolpulse/toolpulse/checks"
)

// minStartLead is the earliest a probe's first run may be scheduled after
// now. gocron refuses a start that is already past when it checks it and
// pushes one that is past by the time it arms the timer a whole interval
// later; a small lead keeps a zero jitter offset out of both on an idle
// machine, and catchUpFirstRun repairs a push on a busy one.
const minStartLead = 10 * time.Millisecond

// errStillRunning skips a tick that comes while the probe's previous run
// is still going.
var errStillRunning = errors.New("the previous run of the probe is still going")

// probeNamespace derives job identifiers from probe names.
var probeNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/toolpulse/toolpulse#probe"))

// jobID is the gocron identifier of a probe's job. It depends on the name
// only, so that a reload that replaces a probe's job keeps its identity
// (Update replaces the job under it).
func jobID(probe string) uuid.UUID {
	return uuid.NewSHA1(probeNamespace, []byte(probe))
}

// jitterOffset is where in [0, jitter) a probe's first run falls, from a
// random number r that should be in [0, 1); an injected source that strays
// outside is clamped rather than trusted.
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

// scheduleProbe creates or, with update, replaces p's job: every
// p.Interval, first at now plus a random offset in [0, p.Jitter), so that
// a fleet of probes (or a reload) never fires in lockstep. The offset is a
// phase fixed per job: each later run is one interval after the previous
// tick, whatever the runs took.
//
// A tick that comes while the probe's previous run is still going is
// skipped, not queued: a run longer than the interval skips the ticks it
// covers instead of queueing a backlog that would then fire back to back.
// The limiter's claim on the probe's name does that, rather than gocron's
// singleton mode, which keeps a goroutine and a 1,000-slot queue (some
// 18 KB of heap besides the stack) per job for the life of the scheduler,
// even after the job is removed. Being keyed by name, the claim also keeps
// the first run of a job that a reload replaced from overlapping a run of
// the old one still in flight.
func (d *Daemon) scheduleProbe(s gocron.Scheduler, p *checks.Probe, update bool) error {
	var err error
	// A start computed from the clock can be overtaken by it before gocron
	// checks it (a stalled goroutine on a busy machine); computing it again
	// is then the fix.
	for range 3 {
		start := d.clock.Now().Add(max(jitterOffset(d.rand(), p.Jitter), minStartLead))
		fired := new(atomic.Bool)
		opts := []gocron.JobOption{
			gocron.WithName(p.Name),
			gocron.WithIdentifier(jobID(p.Name)),
			gocron.WithStartAt(gocron.WithStartDateTime(start)),
			gocron.WithEventListeners(
				// gocron calls this first in the tick's run, before it
				// re-arms the job, and always runs the task once this says
				// yes: the task gives the claim back.
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
// late. gocron checks a job's start when the job is built and arms its
// timer later, on its own goroutine; a start the clock overtook in between
// (a stalled goroutine on a busy machine) is moved to the next interval
// rather than fired. Once NewJob or Update has returned the job is armed,
// and two things tell a push apart: NextRun is past start, which alone
// would also describe a job whose first run already fired, and fired,
// which the job's listener sets before gocron re-arms it, is still false.
// The run made up goes through the same listeners (the overlap claim); the
// pushed time stays the next run, one interval after start, so the probe
// keeps its phase.
func catchUpFirstRun(j gocron.Job, start time.Time, fired *atomic.Bool) error {
	next, err := j.NextRun()
	if err != nil || !next.After(start) || fired.Load() {
		return nil // removed meanwhile, still waiting, or already fired
	}
	return j.RunNow()
}

// schedulerLogger hands gocron's chatter (scheduler created, started,
// stopped) to the debug level: toolpulse logs its own lifecycle at info,
// and an operator's info log should be one line per run.
type schedulerLogger struct{ l *slog.Logger }

func (s schedulerLogger) Debug(msg string, args ...any) { s.l.Debug(msg, args...) }
func (s schedulerLogger) Info(msg string, args ...any)  { s.l.Debug(msg, args...) }
func (s schedulerLogger) Warn(msg string, args ...any)  { s.l.Warn(msg, args...) }
func (s schedulerLogger) Error(msg string, args ...any) { s.l.Error(msg, args...) }
