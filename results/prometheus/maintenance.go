package prometheus

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maintenanceCollector exposes toolpulse_probe_in_maintenance at scrape
// time, from the running config's windows as WatchMaintenance's function
// reads them: a series for each probe some window covers (1 while one is
// on, 0 otherwise), none for the others, so that a config without windows
// adds no series.
type maintenanceCollector struct {
	desc    *prometheus.Desc
	now     func() time.Time
	covered atomic.Pointer[func(time.Time) map[string]bool]
}

func newMaintenanceCollector() *maintenanceCollector {
	return &maintenanceCollector{
		desc: prometheus.NewDesc("toolpulse_probe_in_maintenance",
			"1 while a maintenance window of the config mutes the probe's alerts, 0 while none does; only probes some window covers have a series.",
			[]string{labelProbe}, nil),
		now: time.Now,
	}
}

// Describe sends the description of toolpulse_probe_in_maintenance.
func (c *maintenanceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends one series per covered probe.
func (c *maintenanceCollector) Collect(ch chan<- prometheus.Metric) {
	fn := c.covered.Load()
	if fn == nil {
		return
	}
	for probe, on := range (*fn)(c.now()) {
		v := 0.0
		if on {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, probe)
	}
}

// WatchMaintenance makes toolpulse_probe_in_maintenance read, at each
// scrape, the probes that some maintenance window covers and whether one
// is on at now (checks.Config.MaintenanceAt of the running config). It
// must be cheap and safe for concurrent use. Until it is called the
// metric has no series.
func (m *Metrics) WatchMaintenance(covered func(now time.Time) map[string]bool) {
	m.maintenance.covered.Store(&covered)
}
