package prometheus

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolpulse/toolpulse/results"
)

const (
	// fleetCacheTTL is how long one read of the fleet answers scrapes:
	// several Prometheus servers, or a scrape storm, cost the store one
	// query per instance in that time.
	fleetCacheTTL = 5 * time.Second
	// fleetReadTimeout bounds the read a scrape waits for: a store that
	// hangs must not hang /metrics, which is what shows it hanging.
	fleetReadTimeout = time.Second
)

// fleetCollector exposes toolpulse_fleet_nodes: the nodes of the fleet
// whose last heartbeat is within results.SilentLeases leases, read from
// the store at scrape time through a short cache. Without a fleet (a
// single instance on SQLite) it reads 1, the instance itself. When the
// store cannot answer, the series is absent from the scrape (and the
// failure counted as toolpulse_store_errors_total{op="fleet"}): a count
// it could not read is not 0, and an old count would hide the outage;
// the rest of the scrape, toolpulse_fleet_leader included, is served.
type fleetCollector struct {
	desc *prometheus.Desc
	now  func() time.Time // the local clock, for the cache

	// mu is held across a read, so that concurrent scrapes wait for one
	// read instead of each making its own.
	mu      sync.Mutex
	read    func(context.Context) (results.Fleet, error) // nil: no fleet
	lease   time.Duration
	failed  func()    // counts a failed read
	readAt  time.Time // when the cached answer was read; zero: never
	nodes   int
	present bool // the cached read succeeded
}

func newFleetCollector() *fleetCollector {
	return &fleetCollector{
		desc: prometheus.NewDesc("toolpulse_fleet_nodes",
			"Instances sharing the store whose last heartbeat is within 3 leases (fleet.lease), read from the store at most every 5s; 1 for a single instance without a fleet; absent while the store cannot answer.",
			nil, nil),
		now: time.Now,
	}
}

// Describe sends the description of toolpulse_fleet_nodes.
func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends the node count, reading the fleet again once the cached
// answer is older than fleetCacheTTL.
func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read == nil {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
		return
	}
	if now := c.now(); c.readAt.IsZero() || now.Sub(c.readAt) >= fleetCacheTTL || now.Before(c.readAt) {
		c.refresh(now)
	}
	if c.present {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.nodes))
	}
}

// refresh reads the fleet; c.mu must be held. A failed read is cached as
// long as a good one, so that a down store is not asked at every scrape.
func (c *fleetCollector) refresh(now time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), fleetReadTimeout)
	defer cancel()
	c.readAt = now
	f, err := c.read(ctx)
	if err != nil {
		c.present = false
		c.failed()
		return
	}
	c.nodes, c.present = 0, true
	for _, n := range f.Nodes {
		if f.Alive(n, c.lease) {
			c.nodes++
		}
	}
}

// WatchFleet makes toolpulse_fleet_nodes count, at scrape time, the nodes
// of the fleet that read returns whose heartbeat is within
// results.SilentLeases × lease of the store's clock. read is called at
// most once every 5 seconds, with a one-second timeout; an error leaves
// the series out of the scrape until the next read and counts as
// toolpulse_store_errors_total{op="fleet"}. Until WatchFleet is called
// the gauge reads 1: an instance without a fleet is a fleet of one.
func (m *Metrics) WatchFleet(read func(context.Context) (results.Fleet, error), lease time.Duration) {
	m.fleet.mu.Lock()
	defer m.fleet.mu.Unlock()
	m.fleet.read, m.fleet.lease, m.fleet.readAt = read, lease, time.Time{}
	m.fleet.failed = func() { m.StoreError("fleet") }
}
