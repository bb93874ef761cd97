package runner

import (
	"context"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// SilenceRefresh is how long the Recorder uses the silences it read
// before reading them again: a silence added or expired takes effect
// within this long.
const SilenceRefresh = 5 * time.Second

// maintenanceError is the last error of an alert a maintenance window,
// and no silence, kept back.
const maintenanceError = "maintenance"

// checkSilence is the silence stage: whether an active silence or a
// maintenance window that is on covers the run's probe; either mutes its
// alerts alike. When the silences cannot be read, the last ones read stand
// (none before the first read); the failure is logged and counted.
func (rc *Recorder) checkSilence(ctx context.Context, run *recording) {
	if rc.silences != nil {
		list, err := rc.silences.get(ctx, run.now)
		if err != nil {
			rc.logger.Error("reading silences failed; using the last ones read", "error", err)
			rc.observer.StoreError("silences")
		}
		run.silenced = results.Silenced(list, run.now, run.probe, run.labels)
	}
	if run.silenced {
		return
	}
	_, run.maintenance = results.InMaintenance(run.windows, run.now, run.probe, run.labels)
	run.silenced = run.maintenance
}

// creditMaintenance names a maintenance window, not a silence, as the
// reason the run's alerts were skipped, for whoever reads the alerts'
// history.
func creditMaintenance(run *recording) {
	if !run.maintenance {
		return
	}
	for i := range run.alerts {
		if a := &run.alerts[i]; a.State == results.DeliverySkipped && a.LastError == silencedError {
			a.LastError = maintenanceError
		}
	}
}

// silenceCache holds the silences last read, for SilenceRefresh.
type silenceCache struct {
	src Silences

	mu     sync.Mutex
	list   []results.Silence
	readAt time.Time // zero: never read
}

// get returns the silences active at now, reading them again when the
// last read is SilenceRefresh old (or in the future: the clock went back).
// On a failed read it returns the last list with the error, and tries
// again on the next call.
func (c *silenceCache) get(ctx context.Context, now time.Time) ([]results.Silence, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readAt.IsZero() && now.Sub(c.readAt) < SilenceRefresh && !now.Before(c.readAt) {
		return c.list, nil
	}
	list, err := c.src.Silences(ctx, now, false)
	if err != nil {
		return c.list, err
	}
	c.list, c.readAt = list, now
	return list, nil
}
