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

// checkSilence is the silence stage: whether an active silence covers the
// run's probe. When the silences cannot be read, the last ones read stand
// (none before the first read); the failure is logged and counted.
func (rc *Recorder) checkSilence(ctx context.Context, run *recording) {
	if rc.silences == nil {
		return
	}
	list, err := rc.silences.get(ctx, run.now)
	if err != nil {
		rc.logger.Error("reading silences failed; using the last ones read", "error", err)
		rc.observer.StoreError("silences")
	}
	run.silenced = results.Silenced(list, run.now, run.probe, run.labels)
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
