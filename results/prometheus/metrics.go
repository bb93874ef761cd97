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
//	toolpulse_drift_events_total{probe,kind}             counter; kind response or definition
//	toolpulse_probe_info{probe,kind,tool}                gauge, always 1: http or mcp, an MCP probe's tool
//	toolpulse_probe_flapping{probe}                      gauge: 1 while the probe is flapping, read from the store (flapping.go)
//
// Each of the series above also carries location, the instance's
// fleet.location ("default" for a single instance, SPEC §13): the
// instances of several locations run the same probe, and their series
// must not collide where one Prometheus scrapes them all.
//
// The probe's kind (http or mcp) is a label of toolpulse_probe_info alone,
// never of the series above: one series per probe, which a query joins on
// probe (SetProbeInfo). The drift counter's kind is the drift's.
//
// Process-wide series:
//
//	toolpulse_alerts_sent_total{kind,receiver}           counter
//	toolpulse_alerts_failed_total{kind,receiver,final}   counter of failed delivery attempts
//	toolpulse_store_errors_total{op}                     counter
//	toolpulse_results_dropped_total                      counter of runs the store never got
//	toolpulse_results_pending                            gauge: runs waiting in the write queue
//	toolpulse_build_info{version}                        gauge, always 1
//	toolpulse_config_last_reload_successful              gauge: 1 if the last config load succeeded
//	toolpulse_config_last_reload_success_timestamp_seconds gauge: when it last did
//	toolpulse_fleet_leader                               gauge: 1 while this instance leads its location
//	toolpulse_fleet_nodes                                gauge: instances whose heartbeat is recent (fleet.go)
//
// The two config gauges have the names Prometheus and Alertmanager give
// their own, so that one alert rule covers all three.
//
// NewRegistry adds the Go runtime and process metrics, renamed
// toolpulse_go_* and toolpulse_process_*.
//
// Per-probe state is plain numbers (probe.go), and the series are built
// from it at scrape time (collect.go): at 10,000 probes, client_golang's
// own per-probe series took most of the daemon's heap. Each series is a
// prometheus.Metric of ours that points the registry's message at
// messages built for the scrape (series.go). What does not depend on a
// probe's numbers (label pairs of outcomes and codes, the 0 and 1 of
// last_outcome, buckets no run reached) is created once in New and shared
// by every scrape; a probe's counters still at 0 share one message; the
// rest is carved from a few large arrays per scrape, where client_golang's
// const metrics allocated every label pair, value and bucket apart.
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
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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

// alertKinds are the kinds whose alert series exist from the start, so
// that rate() and absent() work before the first alert.
var alertKinds = []results.AlertKind{results.AlertFiring, results.AlertReminder, results.AlertUpdate, results.AlertResolved, results.AlertDrift}

// Metrics records what the daemon does. It implements runner.Observer; all
// methods are safe for concurrent use. Per-probe state is guarded by mu;
// the process-wide series are few and stay client_golang vectors.
type Metrics struct {
	sent      *prometheus.CounterVec
	failed    *prometheus.CounterVec
	storeErrs *prometheus.CounterVec
	dropped   prometheus.Counter
	reloadOK  prometheus.Gauge
	reloadAt  prometheus.Gauge
	leader    prometheus.Gauge
	pending   atomic.Pointer[func() int]
	builtin   map[results.Code]bool
	alertsMu  sync.Mutex
	receivers map[string]bool // guarded by alertsMu: receivers whose series exist
	mu        sync.Mutex
	probes    map[string]*probe // guarded by mu
	known     map[string]bool   // guarded by mu; nil until SetProbes
	info      *infoCollector
	fleet     *fleetCollector
	// maintenance exposes toolpulse_probe_in_maintenance.
	maintenance *maintenanceCollector
	flapping    *flappingCollector
	// shared are the per-probe series' shared messages, which streamed
	// scrapes read their label values from; rest gathers every family
	// but those streamed scrapes write themselves (stream.go).
	shared *sharedMessages
	rest   *prometheus.Registry
}

// New creates the toolpulse metrics of an instance in the default
// location and registers them on reg (see NewAt).
func New(reg prometheus.Registerer) (*Metrics, error) {
	return NewAt(reg, results.DefaultLocation)
}

// NewAt creates the toolpulse metrics of an instance in location, its
// fleet.location, and registers them on reg: every per-probe series
// carries location="..." ("" is the default location). It fails when reg
// is nil or refuses a metric (New called twice on one registry).
func NewAt(reg prometheus.Registerer, location string) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("prometheus: New: nil registerer")
	}
	m := &Metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolpulse_alerts_sent_total",
			Help: "Alerts a receiver accepted, by kind and receiver (route/kind, as in alerts.receiver).",
		}, []string{"kind", "receiver"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolpulse_alerts_failed_total",
			Help: "Failed alert delivery attempts, by kind and receiver; final=\"true\" when the alert is given up.",
		}, []string{"kind", "receiver", "final"}),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolpulse_store_errors_total",
			Help: "Failed store operations, by operation.",
		}, []string{"op"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolpulse_results_dropped_total",
			Help: "Runs lost because the store could not take them: the oldest pushed out of a full write queue, or still waiting at shutdown.",
		}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "toolpulse_config_last_reload_successful",
			Help: "1 if the last attempt to load the config (at start or on SIGHUP) succeeded, 0 if it was refused.",
		}),
		reloadAt: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "toolpulse_config_last_reload_success_timestamp_seconds",
			Help: "When the running config was loaded, in seconds since the Unix epoch.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "toolpulse_fleet_leader",
			Help: "1 while this instance leads its location (schedules probes and delivers alerts), 0 while it stands by. A single instance on SQLite always leads.",
		}),
		builtin:   map[results.Code]bool{},
		receivers: map[string]bool{},
		probes:    map[string]*probe{},
		info:      newInfoCollector(),
		fleet:     newFleetCollector(),

		maintenance: newMaintenanceCollector(),
	}
	m.flapping = newFlappingCollector(m.knownProbes)
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "toolpulse_build_info",
		Help: "Always 1; the version label says which toolpulse is running.",
	}, []string{"version"})
	buildInfo.WithLabelValues(results.ReadBuild().Label()).Set(1)
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "toolpulse_results_pending",
		Help: "Runs waiting in the write queue because the store has not taken them yet.",
	}, func() float64 {
		if fn := m.pending.Load(); fn != nil {
			return float64((*fn)())
		}
		return 0
	})

	for _, c := range results.UnavailableCodes {
		m.builtin[c] = true
	}
	for _, c := range results.ContractCodes {
		m.builtin[c] = true
	}
	m.shared = newSharedMessages(m.builtin, results.LocationOrDefault(location))
	probes := &probeCollector{m: m, d: newProbeDescs(m.shared.hasLocation), shared: m.shared}
	rest := []prometheus.Collector{
		m.sent, m.failed, m.storeErrs, m.dropped, buildInfo,
		m.reloadOK, m.reloadAt, m.leader, m.fleet, m.flapping, pending, m.maintenance,
	}
	for _, c := range append([]prometheus.Collector{probes, m.info}, rest...) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.rest = NewRegistry()
	for _, c := range rest {
		if err := m.rest.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ConfigLoaded records an attempt to load the config, at start or on a
// reload: ok says whether it is now the running config. A refused one
// leaves the success timestamp where it was.
func (m *Metrics) ConfigLoaded(ok bool, at time.Time) {
	if !ok {
		m.reloadOK.Set(0)
		return
	}
	m.reloadOK.Set(1)
	m.reloadAt.Set(float64(at.UnixNano()) / 1e9)
}

// SetLeader records whether this instance leads its location. The gauge
// reads 0 until the first call: an instance is not counted as a leader
// before it knows it leads.
func (m *Metrics) SetLeader(leading bool) {
	if leading {
		m.leader.Set(1)
		return
	}
	m.leader.Set(0)
}

// WatchPending makes toolpulse_results_pending read fn at every scrape;
// fn must be cheap and safe for concurrent use. Until it is called the
// gauge reads 0.
func (m *Metrics) WatchPending(fn func() int) { m.pending.Store(&fn) }

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
		if !m.known[name] {
			delete(m.probes, name)
		}
	}
	for name := range m.known {
		m.probeLocked(name)
	}
}

// probeLocked returns the state of probe, creating it on first use, or nil
// when SetProbes did not list it or its name cannot be a label value (not
// UTF-8). m.mu must be held.
func (m *Metrics) probeLocked(name string) *probe {
	if p := m.probes[name]; p != nil {
		return p
	}
	if m.known != nil && !m.known[name] || !utf8.ValidString(name) {
		return nil
	}
	p := newProbe(name)
	m.probes[name] = p
	return p
}

// snapshot returns a copy of every probe's state, for a scrape to build
// series from without holding m.mu. Each probe is copied whole, so a
// scrape sees it as one report left it: never two outcomes at 1.
func (m *Metrics) snapshot() []probe {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, p := range m.probes {
		n += len(p.runs)
	}
	probes := make([]probe, 0, len(m.probes))
	runs := make([]runCount, 0, n)
	for _, p := range m.probes {
		c := *p
		start := len(runs)
		runs = append(runs, p.runs...)
		c.runs = runs[start:len(runs):len(runs)]
		c.custom = nil
		probes = append(probes, c)
	}
	return probes
}

// codeLabel returns the code label value of code for a probe, admitting a
// new custom code while the probe has room for it.
func (m *Metrics) codeLabel(p *probe, code results.Code) string {
	switch {
	case code == "":
		return NoCode
	case m.builtin[code], p.hasCustom(code):
		return string(code)
	case !results.ValidCustomCode(string(code)), len(p.custom) >= MaxCustomCodes:
		return OtherCode
	}
	p.custom = append(p.custom, code)
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
	code := r.Code()
	seconds, attempts := r.Duration.Seconds(), r.AttemptCount()
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.probeLocked(r.Probe)
	if p == nil {
		return
	}
	p.countRun(oi, m.codeLabel(p, code))
	p.observe(seconds, attempts, oi)
	if code != results.CodeCanceled {
		p.setLast(oi, r)
	}
}

// DriftDetected counts one drift event of d.Probe, by its kind.
func (m *Metrics) DriftDetected(d *results.Drift) {
	if d == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.probeLocked(d.Probe); p != nil {
		p.drifts[driftKindIndex(d.KindOrResponse())]++
	}
}

// driftKinds are the kind label values of the drift counter, both created
// at 0 with the probe.
var driftKinds = [2]results.DriftKind{results.DriftResponse, results.DriftDefinition}

// driftKindIndex is k's index in driftKinds.
func driftKindIndex(k results.DriftKind) int {
	if k == results.DriftDefinition {
		return 1
	}
	return 0
}

// AlertDelivered counts an alert its receiver accepted.
func (m *Metrics) AlertDelivered(a *results.Alert) {
	if a == nil {
		return
	}
	m.sent.WithLabelValues(string(a.Kind), m.receiver(a)).Inc()
}

// AlertFailed counts one failed delivery attempt; final says the alert was
// given up.
func (m *Metrics) AlertFailed(a *results.Alert, final bool) {
	if a == nil {
		return
	}
	m.failed.WithLabelValues(string(a.Kind), m.receiver(a), strconv.FormatBool(final)).Inc()
}

// SetReceivers creates the alert series of every kind at zero for each
// receiver key, so that rate() and increase() see a receiver's first
// alert rather than a series that starts with it. Series of receivers a
// reload removed stay, as counters do.
func (m *Metrics) SetReceivers(keys []string) {
	for _, key := range keys {
		m.ensureReceiver(key)
	}
}

// noReceiver labels the deliveries of an alert that names no receiver
// (none are made; the label keeps the series well-formed).
const noReceiver = "none"

// receiver returns a's receiver label, creating its series if
// SetReceivers did not.
func (m *Metrics) receiver(a *results.Alert) string {
	key := a.Receiver
	if key == "" {
		key = noReceiver
	}
	m.ensureReceiver(key)
	return key
}

func (m *Metrics) ensureReceiver(key string) {
	m.alertsMu.Lock()
	defer m.alertsMu.Unlock()
	if !m.receivers[key] {
		m.receivers[key] = true
		for _, k := range alertKinds {
			m.sent.WithLabelValues(string(k), key)
			m.failed.WithLabelValues(string(k), key, "false")
			m.failed.WithLabelValues(string(k), key, "true")
		}
	}
}

// ResultsDropped counts n runs the store never got.
func (m *Metrics) ResultsDropped(n int) { m.dropped.Add(float64(n)) }

// StoreError counts one failed store operation named op.
func (m *Metrics) StoreError(op string) {
	m.storeErrs.WithLabelValues(op).Inc()
}
