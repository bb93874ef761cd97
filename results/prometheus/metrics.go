// Package prometheus exposes what the toolpulse daemon does as Prometheus
// metrics on an injected registry. It is the only package that imports
// client_golang.
//
// Every metric name starts with toolpulse_. Per-probe series:
//
//	toolpulse_runs_total{probe,outcome,code}             counter; code "none" on pass
//	toolpulse_run_duration_seconds{probe}                histogram, 5ms to 30s
//	toolpulse_attempts_total{probe}                      counter of HTTP attempts
//	toolpulse_retried_runs_total{probe,outcome}          counter of runs with more than one attempt
//	toolpulse_last_outcome{probe,outcome}                gauge: 1 for the last outcome, 0 for the other two
//	toolpulse_last_run_timestamp_seconds{probe}          gauge: when the last run finished
//	toolpulse_validated_items{probe}                     gauge: validated_count of the last run, while it passes
//	toolpulse_drift_events_total{probe}                  counter
//
// Process-wide series:
//
//	toolpulse_alerts_sent_total{kind}                    counter
//	toolpulse_alerts_failed_total{kind,final}            counter of failed delivery attempts
//	toolpulse_store_errors_total{op}                     counter
//	toolpulse_build_info{version}                        gauge, always 1
//
// Attempts are two counters rather than a histogram: attempts per run is
// rate(attempts_total) / rate(runs_total), and the flakiness that retries
// hide is rate(retried_runs_total{outcome="pass"}), at four series per
// probe instead of a dozen buckets.
//
// toolpulse_validated_items exists only while the probe's last run passed:
// a failure is never an empty list (SPEC §1), so a passing empty selection
// reads 0 and a failing run removes the series rather than reading 0.
//
// A run that toolpulse itself canceled (code canceled, at shutdown or when
// a reload stops a probe) is counted but, as in the alert policy, leaves
// the last-outcome, last-run and validated-items gauges unchanged: it says
// nothing about the provider.
//
// Codes raised by a rule's fail() are user strings. Built-in codes always
// get their own label value; each probe keeps at most MaxCustomCodes
// distinct custom codes, and any further one, or one that is not a valid
// code, is counted as code "other".
package prometheus

import (
	"errors"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolpulse/toolpulse/results"
)

// MaxCustomCodes is how many distinct rule-raised codes one probe may show
// as their own code label value; further ones are counted as OtherCode.
const MaxCustomCodes = 32

// Code label values that are not codes.
const (
	// NoCode is the code label value of a passing run.
	NoCode = "none"
	// OtherCode is the code label value of custom codes beyond
	// MaxCustomCodes and of strings that are not valid codes.
	OtherCode = "other"
)

// durationBuckets suit HTTP probes: a few milliseconds on loopback, up to
// the default retry budget (15s) and beyond.
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30}

// alertKinds are the kinds whose alert series exist from the start, so
// that rate() and absent() work before the first alert.
var alertKinds = []results.AlertKind{results.AlertFiring, results.AlertReminder, results.AlertResolved, results.AlertDrift}

// Metrics records what the daemon does. It implements runner.Observer; all
// methods are safe for concurrent use.
type Metrics struct {
	runs       *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	attempts   *prometheus.CounterVec
	retried    *prometheus.CounterVec
	last       *prometheus.GaugeVec
	lastRun    *prometheus.GaugeVec
	validated  *prometheus.GaugeVec
	drifts     *prometheus.CounterVec
	sent       *prometheus.CounterVec
	failed     *prometheus.CounterVec
	storeErrs  *prometheus.CounterVec
	dropped    prometheus.Counter
	builtin    map[results.Code]bool
	sentBy     map[results.AlertKind]prometheus.Counter
	failedBy   map[results.AlertKind][2]prometheus.Counter // [retry, final]
	mu         sync.Mutex
	probes     map[string]*probeSeries // guarded by mu
	known      map[string]bool         // guarded by mu; nil until SetProbes
	perProbeVs []deletable
}

// deletable is the part of a metric vector SetProbes needs.
type deletable interface {
	DeletePartialMatch(labels prometheus.Labels) int
}

// probeSeries holds one probe's series, resolved once so that RunFinished
// does no label hashing for them.
type probeSeries struct {
	duration  prometheus.Observer
	attempts  prometheus.Counter
	retried   [3]prometheus.Counter // by outcomeIndex
	drifts    prometheus.Counter
	last      [3]prometheus.Gauge // nil until the first run
	lastRun   prometheus.Gauge    // nil until the first run
	validated prometheus.Gauge    // nil unless the last run passed
	runs      map[runKey]prometheus.Counter
	custom    map[results.Code]bool // custom codes with their own label value
}

type runKey struct {
	outcome results.Outcome
	code    string
}

// New creates the toolpulse metrics and registers them on reg. It fails
// when reg is nil or refuses a metric (New called twice on one registry).
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("prometheus: New: nil registerer")
	}
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolpulse_runs_total",
			Help: "Probe runs by outcome and code (code \"none\" on pass).",
		}, []string{"probe", "outcome", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolpulse_run_duration_seconds",
			Help:    "Duration of probe runs, all attempts and back-off included.",
			Buckets: durationBuckets,
		}, []string{"probe"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolpulse_attempts_total",
			Help: "HTTP attempts made by probe runs, first attempts and retries.",
		}, []string{"probe"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolpulse_retried_runs_total",
			Help: "Probe runs that needed more than one attempt, by final outcome.",
		}, []string{"probe", "outcome"}),
		last: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "toolpulse_last_outcome",
			Help: "1 for the outcome of the probe's last run, 0 for the other two.",
		}, []string{"probe", "outcome"}),
		lastRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "toolpulse_last_run_timestamp_seconds",
			Help: "Unix time at which the probe's last run finished.",
		}, []string{"probe"}),
		validated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "toolpulse_validated_items",
			Help: "Items selected and validated by the probe's last run; absent while it does not pass.",
		}, []string{"probe"}),
		drifts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolpulse_drift_events_total",
			Help: "Response shape drift events.",
		}, []string{"probe"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolpulse_alerts_sent_total",
			Help: "Alerts the receiver accepted, by kind.",
		}, []string{"kind"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolpulse_alerts_failed_total",
			Help: "Failed alert delivery attempts, by kind; final=\"true\" when the alert is given up.",
		}, []string{"kind", "final"}),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolpulse_store_errors_total",
			Help: "Failed store operations, by operation.",
		}, []string{"op"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolpulse_results_dropped_total",
			Help: "Runs lost because the store could not take them: the oldest pushed out of a full write queue, or still waiting at shutdown.",
		}),
		builtin:  map[results.Code]bool{},
		sentBy:   map[results.AlertKind]prometheus.Counter{},
		failedBy: map[results.AlertKind][2]prometheus.Counter{},
		probes:   map[string]*probeSeries{},
	}
	m.perProbeVs = []deletable{m.runs, m.duration, m.attempts, m.retried, m.last, m.lastRun, m.validated, m.drifts}
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "toolpulse_build_info",
		Help: "Always 1; the version label says which toolpulse is running.",
	}, []string{"version"})
	buildInfo.WithLabelValues(version()).Set(1)

	for _, c := range []prometheus.Collector{
		m.runs, m.duration, m.attempts, m.retried, m.last, m.lastRun, m.validated, m.drifts,
		m.sent, m.failed, m.storeErrs, m.dropped, buildInfo,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, c := range results.UnavailableCodes {
		m.builtin[c] = true
	}
	for _, c := range results.ContractCodes {
		m.builtin[c] = true
	}
	for _, k := range alertKinds {
		m.sentBy[k] = m.sent.WithLabelValues(string(k))
		m.failedBy[k] = [2]prometheus.Counter{
			m.failed.WithLabelValues(string(k), "false"),
			m.failed.WithLabelValues(string(k), "true"),
		}
	}
	return m, nil
}

// version is the main module's version as the Go toolchain recorded it:
// a tag for `go install ...@v1.2.3`, "(devel)" for a build from a checkout.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// SetProbes declares the configured probes, on start and after every
// reload. The series of a probe no longer listed are deleted (counters
// included, so a removed probe leaves no stale last outcome behind), and
// later reports about it, from a run that was still in flight, are
// ignored. Listed probes get their counters at 0 before their first run.
// Until SetProbes is called, every probe is accepted.
func (m *Metrics) SetProbes(names []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.known = make(map[string]bool, len(names))
	for _, n := range names {
		m.known[n] = true
	}
	for name := range m.probes {
		if m.known[name] {
			continue
		}
		for _, v := range m.perProbeVs {
			v.DeletePartialMatch(prometheus.Labels{"probe": name})
		}
		delete(m.probes, name)
	}
	for name := range m.known {
		m.probeLocked(name)
	}
}

// probeLocked returns the series of probe, creating them on first use, or
// nil when SetProbes did not list it. m.mu must be held.
func (m *Metrics) probeLocked(probe string) *probeSeries {
	if ps := m.probes[probe]; ps != nil {
		return ps
	}
	if m.known != nil && !m.known[probe] {
		return nil
	}
	ps := &probeSeries{
		duration: m.duration.WithLabelValues(probe),
		attempts: m.attempts.WithLabelValues(probe),
		drifts:   m.drifts.WithLabelValues(probe),
		runs:     map[runKey]prometheus.Counter{},
		custom:   map[results.Code]bool{},
	}
	for i, o := range results.Outcomes {
		ps.retried[i] = m.retried.WithLabelValues(probe, string(o))
	}
	ps.runs[runKey{results.Pass, NoCode}] = m.runs.WithLabelValues(probe, string(results.Pass), NoCode)
	m.probes[probe] = ps
	return ps
}

// outcomeIndex returns the position of o in results.Outcomes, or -1.
func outcomeIndex(o results.Outcome) int {
	switch o {
	case results.Pass:
		return 0
	case results.ContractError:
		return 1
	case results.Unavailable:
		return 2
	}
	return -1
}

// codeLabel returns the code label value of code for a probe, admitting a
// new custom code while the probe has room for it.
func (m *Metrics) codeLabel(ps *probeSeries, code results.Code) string {
	switch {
	case code == "":
		return NoCode
	case m.builtin[code], ps.custom[code]:
		return string(code)
	case !results.ValidCustomCode(string(code)), len(ps.custom) >= MaxCustomCodes:
		return OtherCode
	}
	ps.custom[code] = true
	return string(code)
}

// RunFinished records one run. Results with an outcome outside the three,
// or of a probe SetProbes did not list, are ignored.
func (m *Metrics) RunFinished(r *results.Result) {
	if r == nil {
		return
	}
	oi := outcomeIndex(r.Outcome)
	if oi < 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.probeLocked(r.Probe)
	if ps == nil {
		return
	}

	key := runKey{r.Outcome, m.codeLabel(ps, r.Code())}
	c := ps.runs[key]
	if c == nil {
		c = m.runs.WithLabelValues(r.Probe, string(key.outcome), key.code)
		ps.runs[key] = c
	}
	c.Inc()
	ps.duration.Observe(r.Duration.Seconds())
	n := r.AttemptCount()
	ps.attempts.Add(float64(n))
	if n > 1 {
		ps.retried[oi].Inc()
	}

	if r.Code() == results.CodeCanceled {
		return
	}
	if ps.last[0] == nil {
		for i, o := range results.Outcomes {
			ps.last[i] = m.last.WithLabelValues(r.Probe, string(o))
		}
		ps.lastRun = m.lastRun.WithLabelValues(r.Probe)
	}
	// Clear the others before raising this one: a scrape in between sees
	// no outcome at 1, never two.
	for i, g := range ps.last {
		if i != oi {
			g.Set(0)
		}
	}
	ps.last[oi].Set(1)
	end := r.StartedAt.Add(r.Duration)
	ps.lastRun.Set(float64(end.UnixNano()) / 1e9)

	switch {
	case r.Outcome == results.Pass:
		if ps.validated == nil {
			ps.validated = m.validated.WithLabelValues(r.Probe)
		}
		ps.validated.Set(float64(r.ValidatedCount))
	case ps.validated != nil:
		m.validated.DeleteLabelValues(r.Probe)
		ps.validated = nil
	}
}

// DriftDetected counts one drift event of d.Probe.
func (m *Metrics) DriftDetected(d *results.Drift) {
	if d == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ps := m.probeLocked(d.Probe); ps != nil {
		ps.drifts.Inc()
	}
}

// AlertDelivered counts an alert the receiver accepted.
func (m *Metrics) AlertDelivered(a *results.Alert) {
	if a == nil {
		return
	}
	if c, ok := m.sentBy[a.Kind]; ok {
		c.Inc()
		return
	}
	m.sent.WithLabelValues(string(a.Kind)).Inc()
}

// AlertFailed counts one failed delivery attempt; final says the alert was
// given up.
func (m *Metrics) AlertFailed(a *results.Alert, final bool) {
	if a == nil {
		return
	}
	i := 0
	if final {
		i = 1
	}
	if cs, ok := m.failedBy[a.Kind]; ok {
		cs[i].Inc()
		return
	}
	m.failed.WithLabelValues(string(a.Kind), strconv.FormatBool(final)).Inc()
}

// ResultsDropped counts n runs the store never got.
func (m *Metrics) ResultsDropped(n int) { m.dropped.Add(float64(n)) }

// StoreError counts one failed store operation named op.
func (m *Metrics) StoreError(op string) {
	m.storeErrs.WithLabelValues(op).Inc()
}
