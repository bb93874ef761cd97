package prometheus

import (
	"fmt"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/toolpulse/toolpulse/results"
)

// familyHelp are the help texts of the per-probe families and of
// toolpulse_probe_info, by name: their descriptions and streamed scrapes
// (stream.go) both say them.
var familyHelp = map[string]string{
	"toolpulse_runs_total":                 "Probe runs by outcome and code (code \"none\" on pass).",
	"toolpulse_run_duration_seconds":       "Duration of probe runs, all attempts and back-off included.",
	"toolpulse_attempts_total":             "HTTP attempts made by probe runs, first attempts and retries.",
	"toolpulse_retried_runs_total":         "Probe runs that needed more than one attempt, by final outcome.",
	"toolpulse_last_outcome":               "1 for the outcome of the probe's last run, 0 for the other two.",
	"toolpulse_last_run_timestamp_seconds": "Unix time at which the probe's last run finished.",
	"toolpulse_validated_items":            "Items selected and validated by the probe's last run; absent while it does not pass.",
	"toolpulse_drift_events_total":         "Drift events: of the response's shape (kind response) or of an MCP tool's definition (kind definition).",
	"toolpulse_probe_info":                 "Always 1, one series per configured probe: kind is http, mcp or steps, tool an MCP probe's tool (empty for HTTP).",
}

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
func newProbeDescs(withLocation bool) probeDescs {
	// labels are a series' label names, and location when the instance
	// names one.
	labels := func(names ...string) []string {
		if withLocation {
			names = append(names, labelLocation)
		}
		return names
	}
	return probeDescs{
		runs: prometheus.NewDesc("toolpulse_runs_total", familyHelp["toolpulse_runs_total"],
			labels(labelProbe, labelOutcome, labelCode), nil),
		duration: prometheus.NewDesc("toolpulse_run_duration_seconds", familyHelp["toolpulse_run_duration_seconds"],
			labels(labelProbe), nil),
		attempts: prometheus.NewDesc("toolpulse_attempts_total", familyHelp["toolpulse_attempts_total"],
			labels(labelProbe), nil),
		retried: prometheus.NewDesc("toolpulse_retried_runs_total", familyHelp["toolpulse_retried_runs_total"],
			labels(labelProbe, labelOutcome), nil),
		last: prometheus.NewDesc("toolpulse_last_outcome", familyHelp["toolpulse_last_outcome"],
			labels(labelProbe, labelOutcome), nil),
		lastRun: prometheus.NewDesc("toolpulse_last_run_timestamp_seconds", familyHelp["toolpulse_last_run_timestamp_seconds"],
			labels(labelProbe), nil),
		validated: prometheus.NewDesc("toolpulse_validated_items", familyHelp["toolpulse_validated_items"],
			labels(labelProbe), nil),
		drifts: prometheus.NewDesc("toolpulse_drift_events_total", familyHelp["toolpulse_drift_events_total"],
			labels(labelProbe, labelKind), nil),
	}
}

// probeCollector exposes the per-probe state of a Metrics. It is a type of
// its own so that Metrics does not offer Describe and Collect to callers
// that could register it a second time.
type probeCollector struct {
	m      *Metrics
	d      probeDescs
	shared *sharedMessages
}

// Describe sends the descriptions of the per-probe metrics.
func (c *probeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.d.runs, c.d.duration, c.d.attempts, c.d.retried,
		c.d.last, c.d.lastRun, c.d.validated, c.d.drifts,
	} {
		ch <- d
	}
}

// Collect sends the series of every probe. It copies the probe states
// under the mutex and builds the series outside it, so that reports are
// not held up by a scrape. Each scrape writes its series into messages of
// its own (series.go) and shares with other scrapes only messages that
// never change. A probe whose series cannot be built is sent as an
// invalid metric, which fails the scrape instead of panicking.
func (c *probeCollector) Collect(ch chan<- prometheus.Metric) {
	probes := c.m.snapshot()
	b := c.newBuilder()
	for i := range probes {
		p := &probes[i]
		if err := checkProbe(p); err != nil {
			ch <- prometheus.NewInvalidMetric(c.d.runs, err)
			continue
		}
		b.collectProbe(ch, p)
	}
}

// checkProbe reports what in p the registry would refuse or the builder
// could not index: a label value that is not UTF-8, an outcome out of
// range. The metrics never record either; this keeps a scrape from
// serving one, or panicking, if they ever did.
func checkProbe(p *probe) error {
	if !utf8.ValidString(p.name) {
		return fmt.Errorf("probe label value %q is not valid UTF-8", p.name)
	}
	for _, rc := range p.runs {
		if !utf8.ValidString(rc.code) {
			return fmt.Errorf("probe %q: code label value %q is not valid UTF-8", p.name, rc.code)
		}
		if rc.outcome < 0 || int(rc.outcome) >= len(results.Outcomes) {
			return fmt.Errorf("probe %q: runs of code %q have no outcome", p.name, rc.code)
		}
	}
	return nil
}

// builder builds the series of one scrape. Its arenas allocate about
// 32 KiB at a time; what they hand out lives as long as the gathered
// families do.
type builder struct {
	d        *probeDescs
	sh       *sharedMessages
	probes   *arena[probeScrape]
	runs     *arena[runCounter]
	counters *arena[counterScrape]
	buckets  *arena[bucketScrape]
}

// newBuilder returns a builder for one scrape.
func (c *probeCollector) newBuilder() *builder {
	return &builder{
		d:        &c.d,
		sh:       c.shared,
		probes:   newArena[probeScrape](32),
		runs:     newArena[runCounter](192),
		counters: newArena[counterScrape](512),
		buckets:  newArena[bucketScrape](512),
	}
}

// collectProbe builds every series of p, and only then sends them.
func (b *builder) collectProbe(ch chan<- prometheus.Metric, p *probe) {
	s := b.probes.one()
	s.init(p, b.sh)
	runs := b.fillRuns(p, s)
	b.fillCounters(p, s)
	b.fillDuration(p, s)
	b.fillGauges(p, s)

	for i := range runs {
		ch <- &runs[i]
	}
	ch <- &s.attempts
	for i := range s.drifts {
		ch <- &s.drifts[i]
	}
	for i := range s.retried {
		ch <- &s.retried[i]
	}
	ch <- &s.duration
	if p.last != noOutcome {
		for i := range s.last {
			ch <- &s.last[i]
		}
		ch <- &s.lastRun
	}
	if p.hasValidated {
		ch <- &s.validated
	}
}

// fillRuns returns the runs series of p, one per (outcome, code).
func (b *builder) fillRuns(p *probe, s *probeScrape) []runCounter {
	runs := b.runs.take(len(p.runs))
	for i, rc := range p.runs {
		r := &runs[i]
		r.desc = b.d.runs
		r.nl = b.sh.put(r.labels[:], b.sh.codePair(rc.code), &b.sh.outcomes[rc.outcome], &s.probe)
		r.n = float64(rc.n)
		setTimestamp(&r.created, rc.created)
		r.counter.Value, r.counter.CreatedTimestamp = &r.n, &r.created
	}
	return runs
}

// fillCounters fills in the attempts, drifts and retried-runs series of
// p, all created with the probe.
func (b *builder) fillCounters(p *probe, s *probeScrape) {
	s.attempts = probeCounter{desc: b.d.attempts, counter: b.counter(s, p.attempts)}
	s.attempts.nl = b.sh.put(s.attempts.labels[:], &s.probe)
	for i, n := range p.drifts {
		s.drifts[i] = kindCounter{desc: b.d.drifts, counter: b.counter(s, n)}
		s.drifts[i].nl = b.sh.put(s.drifts[i].labels[:], &b.sh.kinds[i], &s.probe)
	}
	for i, n := range p.retried {
		s.retried[i] = outcomeCounter{desc: b.d.retried, counter: b.counter(s, n)}
		s.retried[i].nl = b.sh.put(s.retried[i].labels[:], &b.sh.outcomes[i], &s.probe)
	}
}

// counter returns the message of a counter of s at n that was created
// with the probe: the probe's zero counter while n is 0, as retries and
// drifts mostly are.
func (b *builder) counter(s *probeScrape, n uint64) *dto.Counter {
	if n == 0 {
		return &s.zero
	}
	c := b.counters.one()
	c.value = float64(n)
	c.counter.Value, c.counter.CreatedTimestamp = &c.value, &s.created
	return &c.counter
}

// fillDuration fills in the run duration histogram of p as
// NewConstHistogram writes it: cumulative buckets in ascending order, +Inf
// left implicit (it is the sample count), created with the probe. The
// buckets no run reached are shared ones.
func (b *builder) fillDuration(p *probe, s *probeScrape) {
	d := &s.duration
	d.desc = b.d.duration
	d.nl = b.sh.put(d.labels[:], &s.probe)
	first := p.unreached()
	reached := b.buckets.take(nBuckets - first)
	var cumulative uint64
	for i := range d.buckets {
		if i < first {
			d.buckets[i] = &b.sh.unreached[i]
			continue
		}
		cumulative += p.buckets[i]
		bk := &reached[i-first]
		bk.cumulative = cumulative
		bk.bucket.CumulativeCount, bk.bucket.UpperBound = &bk.cumulative, &b.sh.bounds[i]
		d.buckets[i] = &bk.bucket
	}
	d.count, d.sum = p.durCount, p.durSum
	h := &d.histogram
	h.SampleCount, h.SampleSum, h.CreatedTimestamp = &d.count, &d.sum, &s.created
	h.Bucket = d.buckets[:]
}

// fillGauges fills in the last-outcome and last-run gauges of p once it
// has a last run, and the validated-items gauge while that run passed.
func (b *builder) fillGauges(p *probe, s *probeScrape) {
	if p.last != noOutcome {
		for i := range s.last {
			g := &b.sh.lastOutcome[0]
			if i == int(p.last) {
				g = &b.sh.lastOutcome[1]
			}
			s.last[i] = outcomeGauge{desc: b.d.last, gauge: g}
			s.last[i].nl = b.sh.put(s.last[i].labels[:], &b.sh.outcomes[i], &s.probe)
		}
		fillGauge(&s.lastRun, b.d.lastRun, b.sh, &s.probe, p.lastRun)
	}
	if p.hasValidated {
		fillGauge(&s.validated, b.d.validated, b.sh, &s.probe, p.validated)
	}
}

// fillGauge makes g the gauge series of desc on probe at v.
func fillGauge(g *probeGauge, desc *prometheus.Desc, sh *sharedMessages, probe *dto.LabelPair, v float64) {
	g.desc, g.value = desc, v
	g.nl = sh.put(g.labels[:], probe)
	g.gauge.Value = &g.value
}
