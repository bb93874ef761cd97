package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

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

// task is one scheduled run of sp's probe, started by its group's job
// with the probe's claim (runGroup), which it gives back. The run ends
// with shutdown, or the grace period after sp is removed from the
// schedule (a reload removed or changed the probe).
func (d *Daemon) task(sp *scheduledProbe) {
	p := sp.probe
	defer d.limit.unclaim(p.Name)
	defer func() {
		if v := recover(); v != nil {
			d.escapedPanic(uuid.Nil, p.Name, v)
		}
	}()
	stopCtx, hardCtx, ok := d.begin(p.Name)
	if !ok {
		return
	}
	defer d.end(p.Name)

	// Waiting for a slot is part of the run, and ends when sp is removed,
	// and at the start of shutdown: a run that has not started is not one
	// to drain.
	waitCtx, cancelWait := context.WithCancel(stopCtx)
	unwatch := sp.whenRemoved(cancelWait)
	err := d.limit.acquire(waitCtx)
	unwatch()
	cancelWait()
	if err != nil {
		d.logger.Debug("run dropped while waiting for a concurrency slot", "probe", p.Name)
		return
	}
	// The slot bounds the probing, not the recording: it is given back
	// once the answer is judged, before the store commits the run. The
	// probe's claim is held until the run is recorded, so its next run
	// starts only after that, and its runs reach the store and the alert
	// policy in order. With a store whose commit is a round trip
	// (Postgres), holding the slot through it let 64 slots cap the runs per
	// second at 64 ÷ the commit wait (BENCHMARKS.md).
	var once sync.Once
	release := func() { once.Do(d.limit.release) }
	defer release()

	ctx, done := d.runContext(hardCtx, sp)
	defer done()
	d.runOnce(ctx, p, release)
}

// runContext returns the context of one run of sp: it ends when hard does
// (the shutdown grace period is over), or the grace period after sp is
// removed from the schedule, so that a run in flight may finish but not
// linger. done releases it.
func (d *Daemon) runContext(hard context.Context, sp *scheduledProbe) (ctx context.Context, done func()) {
	ctx, cancel := context.WithCancel(hard)
	var mu sync.Mutex
	var timer *time.Timer
	finished := false
	unwatch := sp.whenRemoved(func() {
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			timer = time.AfterFunc(d.grace, cancel)
		}
	})
	return ctx, func() {
		unwatch()
		mu.Lock()
		finished = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// runOnce runs p, calls judged once the answer is judged, records the
// result and reports it. A panic in any of it (the Executor never panics,
// but the recorder and the store are other code) becomes a recorded
// internal_error rather than a lost run.
func (d *Daemon) runOnce(ctx context.Context, p *checks.Probe, judged func()) {
	var r results.Result
	taken := false // by Record: written or queued
	defer func() {
		if v := recover(); v != nil {
			if taken {
				d.logger.Error("panic after the run was recorded", "probe", p.Name,
					"operation_id", r.OperationID, "panic", d.redact(fmt.Sprint(v)), "stack", string(debug.Stack()))
				return
			}
			d.recordInternalError(ctx, p, &r, v)
		}
	}()
	r = d.exec.Run(ctx, p)
	judged()
	r.Node, r.Location = d.node, d.storedLocation()
	// A run cut short by shutdown is still recorded, as canceled: Record
	// ignores ctx's end.
	dec, err := d.rec.Record(ctx, &r)
	// A panic from here on must not record the run a second time.
	taken = true
	d.report(&r, dec, err)
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
	if len(dec.Diff) > 0 {
		attrs = append(attrs, "drift", true)
	}
	if dec.Handover {
		attrs = append(attrs, "handover", true)
	}
	return attrs
}

// escapedPanic is the last resort of a group's job (gocron calls it) and
// of each probe's run (task), for a panic that got past runOnce's own
// recovery (the logger panicking while reporting one, say); name is the
// job's or the probe's. It must not panic itself: it is called from a
// deferred recover, where a second panic would end the process.
func (d *Daemon) escapedPanic(_ uuid.UUID, name string, v any) {
	defer func() { _ = recover() }()
	d.logger.Error("panic escaped a probe run; the schedule goes on", "job", name, "panic", d.redact(fmt.Sprint(v)))
}
