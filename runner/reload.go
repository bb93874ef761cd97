package runner

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/toolpulse/toolpulse/checks"
)

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
	// An instance of a fleet that does not lead has no jobs to change; it
	// schedules the new probes when elected.
	scheduling := state == stateRunning && d.scheduling
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
	d.sender.setGroups(cfg.Notify)
	d.exec.SetRedactor(cfg.Redactor())
	d.limit.resize(cfg.MaxConcurrency)
	d.rec.SetConfig(cfg, len(senders) > 0)
	// Before the schedule changes, so that the first runs of added probes
	// count.
	d.observer.SetProbes(d.probeNames(cfg))

	// Only the probes that run from the instance's location are its to
	// schedule; one whose locations no longer include it is removed.
	local := localProbes(cfg, d.location)
	d.tick = startTick(local, d.maxConcurrency())
	next := make(map[string]*checks.Probe, len(local))
	var added, changed, removed []string
	var errs []error
	for _, p := range local {
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
		if scheduling {
			// A changed probe leaves its group, and its run in flight
			// gets the grace period; it joins one at a fresh phase.
			if err := d.unscheduleProbe(s, p.Name); err != nil {
				errs = append(errs, fmt.Errorf("probe %s: %w", p.Name, err))
			}
			if err := d.scheduleProbe(s, p); err != nil {
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
		if scheduling {
			if err := d.unscheduleProbe(s, name); err != nil {
				errs = append(errs, fmt.Errorf("probe %s: %w", name, err))
			}
		}
	}
	sort.Strings(removed)

	d.mu.Lock()
	d.cfg, d.redactor, d.probes = cfg, cfg.Redactor(), next
	d.mu.Unlock()

	if scheduling && len(changed)+len(removed) > 0 {
		// Clients are cached per probe value; those of replaced values
		// would otherwise keep their idle connections for good.
		d.exec.CloseIdleConnections()
	}
	d.logger.Info("schedule reloaded", "added", added, "changed", changed, "removed", removed,
		"unchanged", len(next)-len(added)-len(changed), "max_concurrency", d.maxConcurrency())
	d.sayWhere(cfg, len(next))
	return errors.Join(errs...)
}
