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

// scheduleProbe creates or, with update, replaces p's job: every
// p.Interval, first at now plus a random offset in [0, p.Jitter), so that
// probes never fire in lockstep; the offset is the job's fixed phase.
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
		start := d.clock.Now().Add(max(jitterOffset(d.rand(), p.Jitter), minStartLead))
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
