package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
)

// Drift detection parameters (SPEC §5).
const (
	// driftWindow is how far back the baseline (dominant) shape is sought.
	driftWindow = 24 * time.Hour
	// driftMinObservations is how often the baseline must have been seen
	// for a different shape to count as drift rather than noise of a new
	// probe.
	driftMinObservations = 5
	// driftDedup is how long a drift to the same fingerprint of the same
	// probe is not recorded or alerted again.
	driftDedup = time.Hour
)

// maxCachedShapes bounds the parsed-shape cache. A provider whose bodies
// have dynamic keys can produce a new fingerprint on every run; the cache
// must not grow with them.
const maxCachedShapes = 512

// shapeCache keeps parsed shapes by fingerprint. A fingerprint's canonical
// text never changes, so an entry never goes stale; caching it keeps the
// store out of every drifted run but the first. Safe for concurrent use.
type shapeCache struct {
	mu     sync.Mutex
	shapes map[string]shape.Shape
}

func (c *shapeCache) get(fingerprint string) (shape.Shape, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.shapes[fingerprint]
	return s, ok
}

func (c *shapeCache) put(fingerprint string, s shape.Shape) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shapes == nil || len(c.shapes) >= maxCachedShapes {
		// Dropping everything is crude, but the cache only saves a read of
		// an immutable row, and the common case holds a handful of shapes.
		c.shapes = make(map[string]shape.Shape)
	}
	c.shapes[fingerprint] = s
}

// baselineTTL is how long a probe's baseline, as last read from the store,
// answers for runs that show that same shape. See baselineCache.
const baselineTTL = 5 * time.Minute

// maxCachedBaselines bounds the baseline cache: probes removed by reloads
// leave entries behind, and a cache that only saves a read can start over.
const maxCachedBaselines = 1 << 16

// baselineCache keeps each probe's dominant shape as the store last gave
// it, so that the common run, one that shows its probe's established
// shape, costs no store read. A run with any other shape asks the store
// and refreshes the entry, so the entry can only be wrong when the shape
// it names has kept repeating while older runs left the 24-hour window
// and another shape, unseen since its last read, overtook it; the TTL
// bounds that to a few minutes. Safe for concurrent use.
type baselineCache struct {
	mu      sync.Mutex
	entries map[string]baselineEntry
}

type baselineEntry struct {
	fingerprint string
	count       int
	readAt      time.Time
}

// settled reports whether fingerprint is probe's baseline, established
// (seen at least driftMinObservations times), as read within baselineTTL
// of now.
func (c *baselineCache) settled(probe, fingerprint string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[probe]
	return ok && e.fingerprint == fingerprint && e.count >= driftMinObservations &&
		!now.Before(e.readAt) && now.Sub(e.readAt) < baselineTTL
}

func (c *baselineCache) put(probe string, e baselineEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxCachedBaselines {
		c.entries = make(map[string]baselineEntry)
	}
	c.entries[probe] = e
}

// detectDrift compares r's shape with the probe's dominant shape of the
// previous 24 hours (SPEC §5). When the run drifted it sets d.Baseline and
// d.Drift, on every drifted run; it returns a drift event only for the
// first drift to this fingerprint in an hour, since that is what gets a
// row and an alert.
//
// The common path, a run with its probe's established shape, costs no store
// call while the cached baseline is fresh, and one (DominantShape) otherwise. An error
// means the store could not answer; d may then already carry the drift
// lines, and the caller still records the run.
func (rc *Recorder) detectDrift(ctx context.Context, r *results.Result, now time.Time, d *Decision) (*results.Drift, error) {
	if r.Shape == nil || r.Shape.Fingerprint == "" {
		return nil, nil
	}
	current := r.Shape.Fingerprint
	if rc.baselines.settled(r.Probe, current, now) {
		return nil, nil
	}
	baseline, n, err := rc.store.DominantShape(ctx, r.Probe, now.Add(-driftWindow))
	if err != nil {
		return nil, fmt.Errorf("dominant shape of %s: %w", r.Probe, err)
	}
	rc.baselines.put(r.Probe, baselineEntry{fingerprint: baseline, count: n, readAt: now})
	if n < driftMinObservations || baseline == "" || baseline == current {
		return nil, nil
	}

	lines, err := rc.diff(ctx, baseline, r.Shape)
	if err != nil {
		return nil, err
	}
	d.Baseline, d.Drift = baseline, lines

	last, seen, err := rc.store.LastDriftAt(ctx, r.Probe, current)
	if err != nil {
		return nil, fmt.Errorf("last drift of %s to %s: %w", r.Probe, current, err)
	}
	if seen && now.Sub(last) < driftDedup {
		return nil, nil
	}
	return &results.Drift{
		Probe:       r.Probe,
		OperationID: r.OperationID,
		DetectedAt:  now,
		Baseline:    baseline,
		Current:     current,
		Diff:        lines,
	}, nil
}

// diff returns the SPEC §5 diff lines from the baseline fingerprint's shape
// to cur. A shape text that does not parse (a row written by a different
// version, or keys changed by secret redaction) cannot be diffed, but the
// fingerprints still differ, so the drift is reported with one line that
// says so rather than lost.
func (rc *Recorder) diff(ctx context.Context, baseline string, cur *results.Shape) ([]string, error) {
	from, ok := rc.shapes.get(baseline)
	if !ok {
		text, err := rc.store.ShapeText(ctx, baseline)
		if err != nil {
			return nil, fmt.Errorf("shape text of %s: %w", baseline, err)
		}
		from, err = shape.Parse(text)
		if err != nil {
			rc.logger.Warn("stored shape does not parse; drift reported without a diff",
				"fingerprint", baseline, "error", err)
			return opaqueDrift(baseline, cur.Fingerprint), nil
		}
		rc.shapes.put(baseline, from)
	}
	to, ok := rc.shapes.get(cur.Fingerprint)
	if !ok {
		var err error
		to, err = shape.Parse(cur.Canonical)
		if err != nil {
			rc.logger.Warn("run's shape does not parse; drift reported without a diff",
				"fingerprint", cur.Fingerprint, "error", err)
			return opaqueDrift(baseline, cur.Fingerprint), nil
		}
		rc.shapes.put(cur.Fingerprint, to)
	}
	if lines := shape.Diff(from, to); len(lines) > 0 {
		return lines, nil
	}
	return opaqueDrift(baseline, cur.Fingerprint), nil
}

// opaqueDrift is the single diff line of a drift whose shapes could not be
// compared path by path.
func opaqueDrift(baseline, current string) []string {
	return []string{fmt.Sprintf("$: shape %s -> %s (no path diff available)", baseline, current)}
}
