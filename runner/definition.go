package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/tooldef"
)

// Definition drift (SPEC §10, "Drift, twice", and §10.1): an MCP probe's
// definition, its tool's tools/list entry with what the server says of
// itself and the listings the probe watches (results/tooldef), is
// fingerprinted every run that listed the tool, and a definition that
// differs from the probe's previous one is a drift event of kind
// definition. The previous definition lives in
// memory, read from the store on the probe's first run after a start, so
// a restart neither misses a change nor announces an unchanged one; the
// first definition a probe ever shows is its baseline, not a drift.

// definitionEntry is one probe's last definition as the Recorder keeps it.
type definitionEntry struct {
	fingerprint string             // "": the probe has shown none yet
	definition  tooldef.Definition // what fingerprint is of
	resetAt     time.Time          // the baseline reset it was seen after; zero: none
}

// definitionCache keeps each probe's last tool definition. Entries of one
// probe are only used under the Recorder's lock of that probe; the mutex
// guards the map.
type definitionCache struct {
	mu      sync.Mutex
	entries map[string]*definitionEntry
}

func (c *definitionCache) get(probe string) *definitionEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[probe]
}

func (c *definitionCache) put(probe string, e *definitionEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxCachedProfiles {
		c.entries = make(map[string]*definitionEntry)
	}
	c.entries[probe] = e
}

// dropReset forgets the entries of probes reset (`toolpulse baseline
// reset`) since their definition was loaded, so their next definition is
// read from the store again: the reset deleted it there, and the next one
// is a new baseline.
func (c *definitionCache) dropReset(resets map[string]time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for probe, at := range resets {
		if e := c.entries[probe]; e != nil && !e.resetAt.Equal(at) {
			delete(c.entries, probe)
		}
	}
}

// judgeDefinition compares the definition r listed with its probe's
// previous one and returns the drift event when they differ; learn makes
// r's definition the previous one, once the run is committed. The common
// run, of a probe whose definition is in memory, costs no store read.
//
// An error means the store could not answer: the run is then recorded
// without the definition's text (its fingerprint stays on the result), so
// that the stored definition stays the previous one and the next run
// compares against it, rather than a change going unannounced.
func (rc *Recorder) judgeDefinition(ctx context.Context, r *results.Result, now time.Time) (drift *results.Drift, learn func(), err error) {
	learn = func() {}
	if r.Tool == nil || r.Tool.Fingerprint == "" || r.Tool.Canonical == "" {
		return nil, learn, nil
	}
	cur, err := tooldef.ParseStored([]byte(r.Tool.Canonical))
	if err != nil {
		rc.logger.Warn("run's tool definition does not parse; definition drift not judged", "probe", r.Probe,
			"fingerprint", r.Tool.Fingerprint, "error", err)
		return nil, learn, nil
	}
	rc.dropReset(ctx, now)
	e := rc.definitions.get(r.Probe)
	if e == nil {
		if e, err = rc.loadDefinition(ctx, r.Probe); err != nil {
			return nil, learn, err
		}
	}
	next := &definitionEntry{fingerprint: r.Tool.Fingerprint, definition: cur, resetAt: e.resetAt}
	learn = func() { rc.definitions.put(r.Probe, next) }
	if e.fingerprint == "" || e.fingerprint == r.Tool.Fingerprint {
		return nil, learn, nil
	}
	diff := tooldef.Diff(tooldef.Comparable(e.definition, cur))
	if len(diff) == 0 {
		// Only what toolpulse reads changed (a listing the probe started
		// watching, a definition stored before the server was watched):
		// the run's definition is the new baseline, silently.
		return nil, learn, nil
	}
	drift = &results.Drift{
		Kind:        results.DriftDefinition,
		Probe:       r.Probe,
		OperationID: r.OperationID,
		DetectedAt:  now,
		Baseline:    e.fingerprint,
		Current:     r.Tool.Fingerprint,
		Diff:        diff,
	}
	if before, after, changed := tooldef.DescriptionChange(e.definition, cur, results.DescriptionRunes); changed {
		drift.Before, drift.After = before, after
	}
	return drift, learn, nil
}

// loadDefinition reads probe's last definition from the store, with the
// reset it was seen after. A stored definition that does not parse is
// logged and the next one taken as the baseline.
func (rc *Recorder) loadDefinition(ctx context.Context, probe string) (*definitionEntry, error) {
	sp, _, err := rc.store.ShapeProfile(ctx, probe)
	if err != nil {
		return nil, fmt.Errorf("baseline reset of %s: %w", probe, err)
	}
	e := &definitionEntry{resetAt: sp.ResetAt}
	stored, found, err := rc.store.ToolDefinition(ctx, probe)
	if err != nil {
		return nil, fmt.Errorf("tool definition of %s: %w", probe, err)
	}
	if !found {
		return e, nil
	}
	d, err := tooldef.ParseStored([]byte(stored.Canonical))
	if err != nil {
		rc.logger.Warn("stored tool definition does not read; taking the next one as the baseline",
			"probe", probe, "fingerprint", stored.Fingerprint, "error", err)
		return e, nil
	}
	e.fingerprint, e.definition = stored.Fingerprint, d
	return e, nil
}
