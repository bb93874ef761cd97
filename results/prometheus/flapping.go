package prometheus

import (
	"context"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolpulse/toolpulse/results"
)

// flappingCollector exposes toolpulse_probe_flapping{probe}: 1 while the
// probe is flapping (SPEC §13), else 0, for every configured probe, read
// from the alert state in the store at scrape time through the fleet's
// short cache, so that a standby shows what the leader decided. When the
// store cannot answer, the series are absent (and the failure counted as
// toolpulse_store_errors_total{op="alert_state"}).
type flappingCollector struct {
	desc  *prometheus.Desc
	now   func() time.Time
	known func() []string // the configured probes; nil: those with a state

	mu       sync.Mutex // held across a read, as fleetCollector's
	read     func(context.Context) (map[string]results.AlertState, error)
	failed   func()
	readAt   time.Time
	flapping map[string]bool
	present  bool
}

func newFlappingCollector(known func() []string) *flappingCollector {
	return &flappingCollector{
		desc: prometheus.NewDesc("toolpulse_probe_flapping",
			"1 while the probe is flapping (its verdict changed more often than notify.flapping allows; alerts wait until it is stable), else 0; read from the store at most every 5s.",
			[]string{labelProbe}, nil),
		now:   time.Now,
		known: known,
	}
}

// Describe sends the description of toolpulse_probe_flapping.
func (c *flappingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends one series per probe, reading the store again once the
// cached answer is older than fleetCacheTTL.
func (c *flappingCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read == nil {
		return
	}
	if now := c.now(); c.readAt.IsZero() || now.Sub(c.readAt) >= fleetCacheTTL || now.Before(c.readAt) {
		c.refresh(now)
	}
	if !c.present {
		return
	}
	names := c.known()
	if names == nil {
		for name := range c.flapping {
			names = append(names, name)
		}
		slices.Sort(names)
	}
	for _, name := range names {
		if !utf8.ValidString(name) {
			continue
		}
		v := 0.0
		if c.flapping[name] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, name)
	}
}

// refresh reads the alert states; c.mu must be held.
func (c *flappingCollector) refresh(now time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), fleetReadTimeout)
	defer cancel()
	c.readAt = now
	states, err := c.read(ctx)
	if err != nil {
		c.present = false
		c.failed()
		return
	}
	c.flapping, c.present = make(map[string]bool, len(states)), true
	for name, st := range states {
		c.flapping[name] = st.Flapping
	}
}

// WatchAlertStates makes toolpulse_probe_flapping read, at scrape time,
// which probes are flapping from the alert states read returns (the
// store's AlertStates): at most once every 5 seconds, with a one-second
// timeout; an error leaves the series out until the next read and counts
// as toolpulse_store_errors_total{op="alert_state"}. Until it is called
// the gauge has no series.
func (m *Metrics) WatchAlertStates(read func(context.Context) (map[string]results.AlertState, error)) {
	m.flapping.mu.Lock()
	defer m.flapping.mu.Unlock()
	m.flapping.read, m.flapping.readAt = read, time.Time{}
	m.flapping.failed = func() { m.StoreError("alert_state") }
}

// knownProbes returns the probes SetProbes declared, sorted; nil before
// it was called.
func (m *Metrics) knownProbes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.known == nil {
		return nil
	}
	names := make([]string, 0, len(m.known))
	for name := range m.known {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
