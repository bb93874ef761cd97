package prometheus

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolpulse/toolpulse/results"
)

// ProbeInfo is what toolpulse_probe_info says of one configured probe.
type ProbeInfo struct {
	Probe string
	Kind  results.ProbeKind
	// Tool is an MCP probe's tool; "" for an HTTP probe.
	Tool string
}

// infoCollector exposes toolpulse_probe_info: one series per configured
// probe, always 1, whose labels say what the probe calls. The kind and
// tool are labels of this one series rather than of every per-probe
// series, so that they cost one series per probe, and a query that wants
// them joins on probe:
//
//	toolpulse_last_outcome * on (probe) group_left (kind, tool) toolpulse_probe_info
type infoCollector struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	// series are built when the probes are set and shared by every
	// scrape: they change only on a reload.
	series []prometheus.Metric
}

func newInfoCollector() *infoCollector {
	return &infoCollector{desc: prometheus.NewDesc("toolpulse_probe_info",
		"Always 1, one series per configured probe: kind is http, mcp or steps, tool an MCP probe's tool (empty for HTTP).",
		[]string{labelProbe, "kind", "tool"}, nil)}
}

// Describe sends the description of toolpulse_probe_info.
func (c *infoCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends the series of the probes set last.
func (c *infoCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	series := c.series
	c.mu.Unlock()
	for _, s := range series {
		ch <- s
	}
}

// SetProbeInfo declares what each configured probe calls, on start and
// after every reload: toolpulse_probe_info then has exactly one series per
// probe of infos, and none for a probe no longer listed. A probe whose
// name or tool cannot be a label value (not UTF-8) gets no series.
func (m *Metrics) SetProbeInfo(infos []ProbeInfo) {
	series := make([]prometheus.Metric, 0, len(infos))
	for _, p := range infos {
		kind := p.Kind
		if kind == "" {
			kind = results.ProbeHTTP
		}
		s, err := prometheus.NewConstMetric(m.info.desc, prometheus.GaugeValue, 1, p.Probe, string(kind), p.Tool)
		if err != nil {
			continue
		}
		series = append(series, s)
	}
	m.info.mu.Lock()
	m.info.series = series
	m.info.mu.Unlock()
}
