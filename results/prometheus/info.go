package prometheus

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

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
	series []infoSeries
}

func newInfoCollector() *infoCollector {
	return &infoCollector{desc: prometheus.NewDesc("toolpulse_probe_info", familyHelp["toolpulse_probe_info"],
		[]string{labelProbe, labelKind, labelTool}, nil)}
}

// labelTool is toolpulse_probe_info's label of an MCP probe's tool.
const labelTool = "tool"

// infoSeries is one probe's toolpulse_probe_info series. The daemon keeps
// one per configured probe for its whole life, so it holds only its probe
// pair: the kind and tool pairs and the gauge at 1 are shared by every
// probe of the same kind and tool (see sharedMessages for why scrapes may
// share messages), where a const metric took some 500 bytes a probe.
type infoSeries struct {
	desc   *prometheus.Desc
	gauge  *dto.Gauge
	labels [3]*dto.LabelPair // kind, probe, tool: sorted by name
	probe  dto.LabelPair
	name   string // the probe pair's value
}

// Desc returns the description of toolpulse_probe_info.
func (s *infoSeries) Desc() *prometheus.Desc { return s.desc }

// Write points m at the series' messages; it copies nothing.
func (s *infoSeries) Write(m *dto.Metric) error {
	m.Label, m.Gauge = s.labels[:], s.gauge
	return nil
}

// Describe sends the description of toolpulse_probe_info.
func (c *infoCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends the series of the probes set last.
func (c *infoCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	series := c.series
	c.mu.Unlock()
	for i := range series {
		ch <- &series[i]
	}
}

// SetProbeInfo declares what each configured probe calls, on start and
// after every reload: toolpulse_probe_info then has exactly one series per
// probe of infos, and none for a probe no longer listed. A probe whose
// name or tool cannot be a label value (not UTF-8) gets no series.
func (m *Metrics) SetProbeInfo(infos []ProbeInfo) {
	var (
		names = [...]string{labelKind, labelProbe, labelTool}
		one   = 1.0
		gauge = &dto.Gauge{Value: &one}
		pairs = map[[2]string]*dto.LabelPair{} // by name and value
	)
	pair := func(name *string, value string) *dto.LabelPair {
		key := [2]string{*name, value}
		if lp := pairs[key]; lp != nil {
			return lp
		}
		lp := newLabelPair(name, value)
		pairs[key] = lp
		return lp
	}
	series := make([]infoSeries, 0, len(infos))
	for _, p := range infos {
		kind := p.Kind
		if kind == "" {
			kind = results.ProbeHTTP
		}
		if !utf8.ValidString(p.Probe) || !utf8.ValidString(string(kind)) || !utf8.ValidString(p.Tool) {
			continue
		}
		// series never grows past its capacity, so s stays where it is
		// and its pairs may point into it.
		series = append(series, infoSeries{desc: m.info.desc, gauge: gauge, name: p.Probe})
		s := &series[len(series)-1]
		s.probe.Name, s.probe.Value = &names[1], &s.name
		s.labels = [3]*dto.LabelPair{pair(&names[0], string(kind)), &s.probe, pair(&names[2], p.Tool)}
	}
	m.info.mu.Lock()
	m.info.series = series
	m.info.mu.Unlock()
}

// len returns how many series toolpulse_probe_info has.
func (c *infoCollector) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.series)
}

// writeSeries writes the series of toolpulse_probe_info in the text
// format, in the registry's order: by kind, probe and tool.
func (c *infoCollector) writeSeries(t *textWriter) {
	c.mu.Lock()
	all := c.series
	c.mu.Unlock()
	series := make([]*infoSeries, len(all))
	for i := range all {
		series[i] = &all[i]
	}
	slices.SortFunc(series, func(a, b *infoSeries) int {
		return cmp.Or(strings.Compare(*a.labels[0].Value, *b.labels[0].Value),
			strings.Compare(a.name, b.name), strings.Compare(*a.labels[2].Value, *b.labels[2].Value))
	})
	for _, s := range series {
		t.start("toolpulse_probe_info")
		t.label(labelKind, *s.labels[0].Value)
		t.label(labelProbe, s.name)
		t.label(labelTool, *s.labels[2].Value)
		t.end(1)
	}
}
