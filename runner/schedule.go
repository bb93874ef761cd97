package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
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

// sameProbe reports whether a reload left probe a as it was, so that its
// job and schedule are kept. Compiled consumers compare by name, version
// and rule hash, and TLS configurations by what a probe sets in them: both
// are rebuilt on every load, and their internals (programs, certificate
// pools) are not comparable with reflect.DeepEqual.
func sameProbe(a, b *checks.Probe) bool {
	if a.Consumer == nil || b.Consumer == nil {
		if a.Consumer != b.Consumer {
			return false
		}
	} else if a.Consumer.Ref() != b.Consumer.Ref() {
		return false
	}
	if !sameTLS(a.TLS, b.TLS) {
		return false
	}
	if !sameSteps(a.Steps, b.Steps) {
		return false
	}
	x, y := *a, *b
	x.Consumer, y.Consumer = nil, nil
	x.TLS, y.TLS = nil, nil
	x.Steps, y.Steps = nil, nil
	return reflect.DeepEqual(x, y)
}

// sameSteps compares steps as sameProbe compares probes: consumers by
// ref, rules by their text.
func sameSteps(a, b []checks.Step) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Consumer.Ref() != y.Consumer.Ref() || ruleText(x.Until) != ruleText(y.Until) || len(x.Capture) != len(y.Capture) {
			return false
		}
		for j := range x.Capture {
			cx, cy := x.Capture[j], y.Capture[j]
			if cx.Name != cy.Name || cx.Secret != cy.Secret || ruleText(cx.Rule) != ruleText(cy.Rule) {
				return false
			}
		}
		x.Consumer, y.Consumer, x.Until, y.Until, x.Capture, y.Capture = nil, nil, nil, nil, nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

func ruleText(x *consumers.Expression) string {
	if x == nil {
		return ""
	}
	return x.Text
}

// sameTLS compares the two things checks sets in a probe's TLS config.
func sameTLS(a, b *tls.Config) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.InsecureSkipVerify != b.InsecureSkipVerify {
		return false
	}
	if a.RootCAs == nil || b.RootCAs == nil {
		return a.RootCAs == b.RootCAs
	}
	return a.RootCAs.Equal(b.RootCAs)
}

// limiter bounds the runs in flight: one per probe (claim), and
// max_concurrency across all probes (acquire). Unlike a buffered channel it
// can be resized while runs hold slots, and it hands slots out first come,
// first served, so that no probe starves behind faster ones. The zero value
// admits nothing; use newLimiter.
type limiter struct {
	mu      sync.Mutex
	limit   int
	active  int
	waiters []chan struct{} // closed when granted a slot
	// claimed holds the names of the probes with a run going, waiting for
	// a slot included; it holds nothing for a probe between runs.
	claimed map[string]struct{}
}

func newLimiter(n int) *limiter { return &limiter{limit: max(n, 1)} }

// claim marks a run of probe as going and reports true, or reports false
// when one already is; unclaim ends it.
func (l *limiter) claim(probe string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.claimed[probe]; ok {
		return false
	}
	if l.claimed == nil {
		l.claimed = map[string]struct{}{}
	}
	l.claimed[probe] = struct{}{}
	return true
}

// unclaim ends a run claim admitted.
func (l *limiter) unclaim(probe string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.claimed, probe)
}

// acquire waits for a slot until ctx ends, and returns ctx's error if it
// ends first; a slot granted at the same moment is given back.
func (l *limiter) acquire(ctx context.Context) error {
	l.mu.Lock()
	if l.active < l.limit && len(l.waiters) == 0 {
		l.active++
		l.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()

	select {
	case <-w:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-w:
		l.active--
		l.grant()
	default:
		for i, x := range l.waiters {
			if x == w {
				l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
				break
			}
		}
	}
	return ctx.Err()
}

// release gives a slot back.
func (l *limiter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active--
	l.grant()
}

// resize sets the number of slots. Shrinking never interrupts a run: the
// extra holders finish, and no slot is handed out until active is below the
// new limit.
func (l *limiter) resize(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = max(n, 1)
	l.grant()
}

// grant hands free slots to waiters, oldest first. l.mu must be held.
func (l *limiter) grant() {
	for l.active < l.limit && len(l.waiters) > 0 {
		w := l.waiters[0]
		l.waiters[0] = nil
		l.waiters = l.waiters[1:]
		l.active++
		close(w)
	}
}

// counts returns the slots in use, the runs waiting and the limit.
func (l *limiter) counts() (active, waiting, limit int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active, len(l.waiters), l.limit
}
