package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
)

// Each answer's learned shape profile (shape.Profile) lives in memory,
// read from the store on its probe's first run after a start, and is saved
// with the runs that change it.
const (
	// driftMinObservations is how many answers establish a probe's
	// profile before any answer can drift.
	driftMinObservations = shape.ProfileWarmup
	// profileFlush is how long a profile whose counts changed, but not
	// what it has learned, may go unsaved: a restart loses at most this
	// much of its counting.
	profileFlush = 10 * time.Minute
	// carriedShapes bounds the shapes a probe recorded before profiles
	// existed that its first profile is built from.
	carriedShapes = 64
	// maxCachedProfiles bounds the profile cache: probes removed by
	// reloads leave entries behind, and the cache only saves a read.
	maxCachedProfiles = 1 << 16
)

// profileEntry is one probe's profile as the Recorder keeps it.
type profileEntry struct {
	profile *shape.Profile
	resetAt time.Time // the reset it was learned after; zero: none
	savedAt time.Time // when it was last written; zero: never
}

// profileCache keeps each probe's profile and notices resets made by
// `toolpulse baseline reset`. Entries of one probe are only used under the
// Recorder's lock of that probe; the mutex guards the map.
type profileCache struct {
	mu           sync.Mutex
	entries      map[string]*profileEntry
	resetsReadAt time.Time // zero: never read
}

func (c *profileCache) get(probe string) *profileEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[probe]
}

func (c *profileCache) put(probe string, e *profileEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxCachedProfiles {
		c.entries = make(map[string]*profileEntry)
	}
	c.entries[probe] = e
}

// dropReset forgets the profiles and tool definitions of probes reset
// (`toolpulse baseline reset`) since they were learned. It reads the
// resets, one query for all probes, at most every SilenceRefresh.
func (rc *Recorder) dropReset(ctx context.Context, now time.Time) {
	c := &rc.baselines
	c.mu.Lock()
	due := c.resetsReadAt.IsZero() || now.Sub(c.resetsReadAt) >= SilenceRefresh || now.Before(c.resetsReadAt)
	if due {
		c.resetsReadAt = now
	}
	c.mu.Unlock()
	if !due {
		return
	}
	resets, err := rc.store.ProfileResets(ctx, time.Time{})
	if err != nil {
		rc.logger.Error("reading baseline resets failed; trying again in a few seconds", "error", err)
		rc.observer.StoreError("profile_resets")
		return
	}
	rc.definitions.dropReset(resets)
	c.mu.Lock()
	defer c.mu.Unlock()
	for probe, at := range resets {
		if e := c.entries[probe]; e != nil && !e.resetAt.Equal(at) {
			delete(c.entries, probe)
		}
	}
}

// loadProfile reads probe's profile from the store. A probe with no
// profile row but with runs recorded before profiles existed starts from
// the shapes of its last ProfileWindow of runs, each learned as often as
// it was seen (up to the warm-up), so an upgrade neither warms up again
// nor alerts on what the probe already answered. A stored profile that
// cannot be read is logged and started afresh.
func (rc *Recorder) loadProfile(ctx context.Context, probe string, now time.Time) (*profileEntry, error) {
	sp, found, err := rc.store.ShapeProfile(ctx, probe)
	if err != nil {
		return nil, fmt.Errorf("shape profile of %s: %w", probe, err)
	}
	e := &profileEntry{profile: &shape.Profile{}, resetAt: sp.ResetAt}
	if found {
		if sp.Data != "" {
			if err := json.Unmarshal([]byte(sp.Data), e.profile); err != nil {
				rc.logger.Warn("stored shape profile does not read; learning a new one", "probe", probe, "error", err)
				e.profile = &shape.Profile{}
			} else {
				e.savedAt = now
			}
		}
		return e, nil
	}
	seen, err := rc.store.RecentShapes(ctx, probe, now.Add(-shape.ProfileWindow), carriedShapes)
	if err != nil {
		return nil, fmt.Errorf("recent shapes of %s: %w", probe, err)
	}
	slices.SortStableFunc(seen, func(a, b results.ShapeSeen) int { return a.LastSeen.Compare(b.LastSeen) })
	for _, s := range seen {
		parsed, err := shape.Parse(s.Canonical)
		if err != nil {
			rc.logger.Warn("stored shape does not parse; left out of the first profile", "probe", probe,
				"fingerprint", s.Fingerprint, "error", err)
			continue
		}
		parsed = shape.Collapse(parsed)
		for range min(s.Runs, shape.ProfileWarmup) {
			e.profile.Learn(parsed, s.LastSeen)
		}
	}
	return e, nil
}
