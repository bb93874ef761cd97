package prometheus

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolpulse/toolpulse/results"
)

// probeDescs describe the per-probe metrics; their series are built from
// the probe states at scrape time.
type probeDescs struct {
	runs      *prometheus.Desc
	duration  *prometheus.Desc
	attempts  *prometheus.Desc
	retried   *prometheus.Desc
	last      *prometheus.Desc
	lastRun   *prometheus.Desc
	validated *prometheus.Desc
	drifts    *prometheus.Desc
}

// newProbeDescs returns the descriptions the per-probe metrics have always
// had, names and help texts included: dashboards and alert rules depend
// on them.
func newProbeDescs() probeDescs {
	return probeDescs{
		runs: prometheus.NewDesc("toolpulse_runs_total",
			"Probe runs by outcome and code (code \"none\" on pass).",
			[]string{"probe", "outcome", "code"}, nil),
		duration: prometheus.NewDesc("toolpulse_run_duration_seconds",
			"Duration of probe runs, all attempts and back-off included.",
			[]string{"probe"}, nil),
		attempts: prometheus.NewDesc("toolpulse_attempts_total",
			"HTTP attempts made by probe runs, first attempts and retries.",
			[]string{"probe"}, nil),
		retried: prometheus.NewDesc("toolpulse_retried_runs_total",
			"Probe runs that needed more than one attempt, by final outcome.",
			[]string{"probe", "outcome"}, nil),
		last: prometheus.NewDesc("toolpulse_last_outcome",
			"1 for the outcome of the probe's last run, 0 for the other two.",
			[]string{"probe", "outcome"}, nil),
		lastRun: prometheus.NewDesc("toolpulse_last_run_timestamp_seconds",
			"Unix time at which the probe's last run finished.",
			[]string{"probe"}, nil),
		validated: prometheus.NewDesc("toolpulse_validated_items",
			"Items selected and validated by the probe's last run; absent while it does not pass.",
			[]string{"probe"}, nil),
		drifts: prometheus.NewDesc("toolpulse_drift_events_total",
			"Response shape drift events.",
			[]string{"probe"}, nil),
	}
}

// probeCollector exposes the per-probe state of a Metrics. It is a type of
// its own so that Metrics does not offer Describe and Collect to callers
// that could register it a second time.
type probeCollector struct {
	m *Metrics
	d probeDescs
}

// Describe sends the descriptions of the per-probe metrics.
func (c probeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.d.runs, c.d.duration, c.d.attempts, c.d.retried,
		c.d.last, c.d.lastRun, c.d.validated, c.d.drifts,
	} {
		ch <- d
	}
}

// Collect sends the series of every probe. It copies the probe states
// under the mutex and builds the series outside it, so that reports are
// not held up by a scrape. A series that cannot be built is sent as an
// invalid metric, which fails the scrape instead of panicking.
func (c probeCollector) Collect(ch chan<- prometheus.Metric) {
	probes := c.m.snapshot()
	for i := range probes {
		c.collectProbe(ch, &probes[i])
	}
}

// collectProbe sends the series of one probe.
func (c probeCollector) collectProbe(ch chan<- prometheus.Metric, p *probe) {
	d := &c.d
	created := time.Unix(0, p.created)
	for _, rc := range p.runs {
		ch <- counter(d.runs, rc.n, time.Unix(0, rc.created), p.name, string(results.Outcomes[rc.outcome]), rc.code)
	}
	ch <- histogram(d.duration, p, created)
	ch <- counter(d.attempts, p.attempts, created, p.name)
	for i, o := range results.Outcomes {
		ch <- counter(d.retried, p.retried[i], created, p.name, string(o))
	}
	ch <- counter(d.drifts, p.drifts, created, p.name)
	if p.last != noOutcome {
		for i, o := range results.Outcomes {
			v := 0.0
			if i == int(p.last) {
				v = 1
			}
			ch <- gauge(d.last, v, p.name, string(o))
		}
		ch <- gauge(d.lastRun, p.lastRun, p.name)
	}
	if p.hasValidated {
		ch <- gauge(d.validated, p.validated, p.name)
	}
}

// counter returns a counter series, or an invalid metric saying why it
// could not be built.
func counter(desc *prometheus.Desc, v uint64, created time.Time, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetricWithCreatedTimestamp(desc, prometheus.CounterValue, float64(v), created, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

// gauge returns a gauge series, or an invalid metric saying why it could
// not be built.
func gauge(desc *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

// histogram returns the run duration histogram of p, or an invalid metric
// saying why it could not be built.
func histogram(desc *prometheus.Desc, p *probe, created time.Time) prometheus.Metric {
	m, err := prometheus.NewConstHistogramWithCreatedTimestamp(desc, p.durCount, p.durSum, p.cumulativeBuckets(), created, p.name)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}
