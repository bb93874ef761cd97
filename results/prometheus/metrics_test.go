package prometheus_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/toolpulse/toolpulse/results"
	metrics "github.com/toolpulse/toolpulse/results/prometheus"
	"github.com/toolpulse/toolpulse/runner"
)

// The daemon reports to metrics through runner.Observer; this keeps the two
// in step at compile time.
var _ runner.Observer = (*metrics.Metrics)(nil)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newMetrics returns metrics on a fresh registry, which is also the
// gatherer the assertions read.
func newMetrics(t testing.TB) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := metrics.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m, reg
}

// run returns a result of probe with the given outcome, code (ignored on
// pass), duration, number of attempts and validated count.
func run(probe string, code results.Code, d time.Duration, attempts, validated int) *results.Result {
	r := &results.Result{
		OperationID:    "op-" + probe,
		Probe:          probe,
		StartedAt:      t0,
		Duration:       d,
		Outcome:        results.Pass,
		ValidatedCount: validated,
		SelectedCount:  validated,
	}
	for i := range attempts {
		r.Attempts = append(r.Attempts, results.Attempt{Number: i + 1, StartedAt: t0})
	}
	if code != "" {
		r.Fail(results.NewError(code, "failed with %s", code))
	}
	return r
}

// gatherAndCompare fails t unless the named metrics of reg are exactly
// the expected exposition text.
func gatherAndCompare(t *testing.T, reg prometheus.Gatherer, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

// value returns the value of the series of metric name with exactly the
// given labels, and false when it does not exist.
func value(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; !ok || v != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// count returns how many series of metric name reg holds.
func count(t *testing.T, reg prometheus.Gatherer, name string) int {
	t.Helper()
	n, err := testutil.GatherAndCount(reg, name)
	if err != nil {
		t.Fatalf("GatherAndCount(%s): %v", name, err)
	}
	return n
}

// TestRunFinished feeds a pass, a contract error with a rule's own code and
// an unavailable run that needed retries, and checks every per-probe
// series.
func TestRunFinished(t *testing.T) {
	m, reg := newMetrics(t)
	m.RunFinished(run("search", "", 125*time.Millisecond, 1, 3))
	m.RunFinished(run("search", "price_missing", 31250*time.Microsecond, 1, 0))
	m.RunFinished(run("search", results.CodeTimeout, 2500*time.Millisecond, 3, 0))

	gatherAndCompare(t, reg, `
# HELP toolpulse_runs_total Probe runs by outcome and code (code "none" on pass).
# TYPE toolpulse_runs_total counter
toolpulse_runs_total{code="none",outcome="pass",probe="search"} 1
toolpulse_runs_total{code="price_missing",outcome="contract_error",probe="search"} 1
toolpulse_runs_total{code="timeout",outcome="unavailable",probe="search"} 1
# HELP toolpulse_attempts_total HTTP attempts made by probe runs, first attempts and retries.
# TYPE toolpulse_attempts_total counter
toolpulse_attempts_total{probe="search"} 5
# HELP toolpulse_retried_runs_total Probe runs that needed more than one attempt, by final outcome.
# TYPE toolpulse_retried_runs_total counter
toolpulse_retried_runs_total{outcome="contract_error",probe="search"} 0
toolpulse_retried_runs_total{outcome="pass",probe="search"} 0
toolpulse_retried_runs_total{outcome="unavailable",probe="search"} 1
# HELP toolpulse_last_outcome 1 for the outcome of the probe's last run, 0 for the other two.
# TYPE toolpulse_last_outcome gauge
toolpulse_last_outcome{outcome="contract_error",probe="search"} 0
toolpulse_last_outcome{outcome="pass",probe="search"} 0
toolpulse_last_outcome{outcome="unavailable",probe="search"} 1
# HELP toolpulse_last_run_timestamp_seconds Unix time at which the probe's last run finished.
# TYPE toolpulse_last_run_timestamp_seconds gauge
toolpulse_last_run_timestamp_seconds{probe="search"} 1.7673230475e+09
# HELP toolpulse_run_duration_seconds Duration of probe runs, all attempts and back-off included.
# TYPE toolpulse_run_duration_seconds histogram
toolpulse_run_duration_seconds_bucket{probe="search",le="0.005"} 0
toolpulse_run_duration_seconds_bucket{probe="search",le="0.01"} 0
toolpulse_run_duration_seconds_bucket{probe="search",le="0.025"} 0
toolpulse_run_duration_seconds_bucket{probe="search",le="0.05"} 1
toolpulse_run_duration_seconds_bucket{probe="search",le="0.1"} 1
toolpulse_run_duration_seconds_bucket{probe="search",le="0.25"} 2
toolpulse_run_duration_seconds_bucket{probe="search",le="0.5"} 2
toolpulse_run_duration_seconds_bucket{probe="search",le="1"} 2
toolpulse_run_duration_seconds_bucket{probe="search",le="2.5"} 3
toolpulse_run_duration_seconds_bucket{probe="search",le="5"} 3
toolpulse_run_duration_seconds_bucket{probe="search",le="10"} 3
toolpulse_run_duration_seconds_bucket{probe="search",le="15"} 3
toolpulse_run_duration_seconds_bucket{probe="search",le="30"} 3
toolpulse_run_duration_seconds_bucket{probe="search",le="+Inf"} 3
toolpulse_run_duration_seconds_sum{probe="search"} 2.65625
toolpulse_run_duration_seconds_count{probe="search"} 3
`, "toolpulse_runs_total", "toolpulse_attempts_total", "toolpulse_retried_runs_total",
		"toolpulse_last_outcome", "toolpulse_last_run_timestamp_seconds", "toolpulse_run_duration_seconds")

	// The last run did not pass: no validated list to show, not an empty one.
	if n := count(t, reg, "toolpulse_validated_items"); n != 0 {
		t.Errorf("toolpulse_validated_items has %d series after a failed run, want 0", n)
	}
}

// TestLastOutcomeFlips: exactly one outcome of a probe is 1, the one of
// its last run, so an alert rule can select outcome="contract_error".
func TestLastOutcomeFlips(t *testing.T) {
	m, reg := newMetrics(t)
	steps := []struct {
		name string
		code results.Code
		want results.Outcome
	}{
		{"pass", "", results.Pass},
		{"contract error", results.CodeEmptySelection, results.ContractError},
		{"unavailable", results.CodeServerError, results.Unavailable},
		{"contract error again", "price_missing", results.ContractError},
		{"pass again", "", results.Pass},
	}
	for _, s := range steps {
		m.RunFinished(run("search", s.code, time.Second, 1, 1))
		for _, o := range results.Outcomes {
			want := 0.0
			if o == s.want {
				want = 1
			}
			got, ok := value(t, reg, "toolpulse_last_outcome", map[string]string{"probe": "search", "outcome": string(o)})
			if !ok || got != want {
				t.Errorf("after %s: last_outcome{outcome=%q} = %v (present %v), want %v", s.name, o, got, ok, want)
			}
		}
	}
}

// TestValidatedItems: an empty list that passes (min_results 0) reads 0;
// a failure removes the series instead of reading as an empty list.
func TestValidatedItems(t *testing.T) {
	m, reg := newMetrics(t)
	series := map[string]string{"probe": "search"}
	steps := []struct {
		name      string
		r         *results.Result
		want      float64
		wantExist bool
	}{
		{"pass with 4 items", run("search", "", time.Second, 1, 4), 4, true},
		{"pass with an empty list", run("search", "", time.Second, 1, 0), 0, true},
		{"too few results", run("search", results.CodeTooFewResults, time.Second, 1, 2), 0, false},
		{"pass again", run("search", "", time.Second, 1, 7), 7, true},
		{"unavailable", run("search", results.CodeTimeout, time.Second, 3, 0), 0, false},
	}
	for _, s := range steps {
		m.RunFinished(s.r)
		got, ok := value(t, reg, "toolpulse_validated_items", series)
		if ok != s.wantExist || got != s.want {
			t.Errorf("after %s: validated_items = %v (present %v), want %v (present %v)", s.name, got, ok, s.want, s.wantExist)
		}
	}
}

// TestCanceledRun: a run toolpulse stopped itself is counted but leaves
// the probe's state alone, as the alert policy does.
func TestCanceledRun(t *testing.T) {
	m, reg := newMetrics(t)
	m.RunFinished(run("search", "", time.Second, 1, 2))
	canceled := run("search", results.CodeCanceled, 2*time.Second, 1, 0)
	canceled.StartedAt = t0.Add(time.Hour)
	m.RunFinished(canceled)

	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"toolpulse_runs_total", map[string]string{"probe": "search", "outcome": "unavailable", "code": "canceled"}, 1},
		{"toolpulse_last_outcome", map[string]string{"probe": "search", "outcome": "pass"}, 1},
		{"toolpulse_last_outcome", map[string]string{"probe": "search", "outcome": "unavailable"}, 0},
		{"toolpulse_last_run_timestamp_seconds", map[string]string{"probe": "search"}, float64(t0.Unix() + 1)},
		{"toolpulse_validated_items", map[string]string{"probe": "search"}, 2},
	}
	for _, c := range checks {
		if got, ok := value(t, reg, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
}

// TestSetProbes: a reload drops every series of a removed probe, ignores a
// late run of it, and starts listed probes at 0.
func TestSetProbes(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetProbes([]string{"search", "weather"})
	for _, p := range []string{"search", "weather"} {
		if got, ok := value(t, reg, "toolpulse_runs_total", map[string]string{"probe": p, "outcome": "pass", "code": "none"}); !ok || got != 0 {
			t.Errorf("runs_total{probe=%q,pass,none} before any run = %v (present %v), want 0", p, got, ok)
		}
	}
	m.RunFinished(run("search", "", time.Second, 1, 1))
	m.RunFinished(run("weather", results.CodeInvalidJSON, time.Second, 2, 0))
	m.DriftDetected(&results.Drift{Probe: "weather"})

	m.SetProbes([]string{"search"})
	// A run of weather that was in flight during the reload finishes now.
	m.RunFinished(run("weather", results.CodeInvalidJSON, time.Second, 1, 0))
	m.DriftDetected(&results.Drift{Probe: "weather"})

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "probe" && l.GetValue() == "weather" {
					t.Errorf("%s still has a series of the removed probe: %v", mf.GetName(), s.GetLabel())
				}
			}
		}
	}
	if got, ok := value(t, reg, "toolpulse_last_outcome", map[string]string{"probe": "search", "outcome": "pass"}); !ok || got != 1 {
		t.Errorf("last_outcome of the kept probe = %v (present %v), want 1", got, ok)
	}

	// A probe added back starts from scratch.
	m.SetProbes([]string{"search", "weather"})
	m.RunFinished(run("weather", "", time.Second, 1, 1))
	if got, _ := value(t, reg, "toolpulse_runs_total", map[string]string{"probe": "weather", "outcome": "contract_error", "code": "invalid_json"}); got != 0 {
		t.Errorf("runs_total of a re-added probe kept its old count %v", got)
	}
	if got, ok := value(t, reg, "toolpulse_runs_total", map[string]string{"probe": "weather", "outcome": "pass", "code": "none"}); !ok || got != 1 {
		t.Errorf("runs_total{weather,pass} = %v (present %v), want 1", got, ok)
	}
}

// TestCodeCap: rule-raised codes are user strings; each probe shows at most
// MaxCustomCodes of them, counts the rest as "other", and never folds a
// built-in code.
func TestCodeCap(t *testing.T) {
	m, reg := newMetrics(t)
	const extra = 5
	for i := range metrics.MaxCustomCodes + extra {
		m.RunFinished(run("search", results.Code(fmt.Sprintf("rule_code_%02d", i)), time.Second, 1, 0))
	}
	// A code seen before the cap keeps its own value after it.
	m.RunFinished(run("search", "rule_code_00", time.Second, 1, 0))
	m.RunFinished(run("search", results.CodeInvalidItem, time.Second, 1, 0))
	m.RunFinished(run("search", results.CodeDNSError, time.Second, 1, 0))
	// Not a valid code (bypassed validation): never its own label value.
	m.RunFinished(run("weather", "Not A Code!", time.Second, 1, 0))
	m.RunFinished(run("weather", results.Code(strings.Repeat("a", 65)), time.Second, 1, 0))
	// The cap is per probe.
	m.RunFinished(run("weather", "rule_code_99", time.Second, 1, 0))

	search := map[string]int{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "toolpulse_runs_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range s.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["probe"] == "search" {
				search[l["code"]] = int(s.GetCounter().GetValue())
			}
		}
	}
	custom := 0
	for code := range search {
		if strings.HasPrefix(code, "rule_code_") {
			custom++
		}
	}
	if custom != metrics.MaxCustomCodes {
		t.Errorf("search shows %d custom codes, want %d", custom, metrics.MaxCustomCodes)
	}
	for code, want := range map[string]int{"other": extra, "rule_code_00": 2, "invalid_item": 1, "dns_error": 1} {
		if got := search[code]; got != want {
			t.Errorf("runs_total{probe=search,code=%q} = %d, want %d", code, got, want)
		}
	}
	for code, want := range map[string]float64{"other": 2, "rule_code_99": 1} {
		if got, ok := value(t, reg, "toolpulse_runs_total", map[string]string{"probe": "weather", "outcome": "contract_error", "code": code}); !ok || got != want {
			t.Errorf("runs_total{probe=weather,code=%q} = %v (present %v), want %v", code, got, ok, want)
		}
	}
}

// TestAlertsAndStore: delivery counters by kind, receiver and final, every
// kind at 0 for each receiver from the start; store counters by op.
func TestAlertsAndStore(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetReceivers([]string{"default/slack"})
	firing := &results.Alert{Kind: results.AlertFiring, Probe: "search", Receiver: "default/slack"}
	drift := &results.Alert{Kind: results.AlertDrift, Probe: "search", Receiver: "default/slack"}
	hook := &results.Alert{Kind: results.AlertFiring, Probe: "search", Receiver: "routes[0]/webhook"}
	m.AlertDelivered(firing)
	m.AlertDelivered(firing)
	m.AlertDelivered(hook)
	m.AlertFailed(drift, false)
	m.AlertFailed(drift, false)
	m.AlertFailed(drift, true)
	m.StoreError("record_run")
	m.StoreError("due_alerts")
	m.StoreError("record_run")
	m.ResultsDropped(3)
	m.ResultsDropped(1)

	gatherAndCompare(t, reg, `
# HELP toolpulse_alerts_sent_total Alerts a receiver accepted, by kind and receiver (route/kind, as in alerts.receiver).
# TYPE toolpulse_alerts_sent_total counter
toolpulse_alerts_sent_total{kind="firing",receiver="default/slack"} 2
toolpulse_alerts_sent_total{kind="firing",receiver="routes[0]/webhook"} 1
toolpulse_alerts_sent_total{kind="reminder",receiver="default/slack"} 0
toolpulse_alerts_sent_total{kind="reminder",receiver="routes[0]/webhook"} 0
toolpulse_alerts_sent_total{kind="resolved",receiver="default/slack"} 0
toolpulse_alerts_sent_total{kind="resolved",receiver="routes[0]/webhook"} 0
toolpulse_alerts_sent_total{kind="shape_drift",receiver="default/slack"} 0
toolpulse_alerts_sent_total{kind="shape_drift",receiver="routes[0]/webhook"} 0
toolpulse_alerts_sent_total{kind="update",receiver="default/slack"} 0
toolpulse_alerts_sent_total{kind="update",receiver="routes[0]/webhook"} 0
# HELP toolpulse_alerts_failed_total Failed alert delivery attempts, by kind and receiver; final="true" when the alert is given up.
# TYPE toolpulse_alerts_failed_total counter
toolpulse_alerts_failed_total{final="false",kind="firing",receiver="default/slack"} 0
toolpulse_alerts_failed_total{final="false",kind="firing",receiver="routes[0]/webhook"} 0
toolpulse_alerts_failed_total{final="false",kind="reminder",receiver="default/slack"} 0
toolpulse_alerts_failed_total{final="false",kind="reminder",receiver="routes[0]/webhook"} 0
toolpulse_alerts_failed_total{final="false",kind="resolved",receiver="default/slack"} 0
toolpulse_alerts_failed_total{final="false",kind="resolved",receiver="routes[0]/webhook"} 0
toolpulse_alerts_failed_total{final="false",kind="shape_drift",receiver="default/slack"} 2
toolpulse_alerts_failed_total{final="false",kind="shape_drift",receiver="routes[0]/webhook"} 0
toolpulse_alerts_failed_total{final="false",kind="update",receiver="default/slack"} 0
toolpulse_alerts_failed_total{final="false",kind="update",receiver="routes[0]/webhook"} 0
toolpulse_alerts_failed_total{final="true",kind="firing",receiver="default/slack"} 0
toolpulse_alerts_failed_total{final="true",kind="firing",receiver="routes[0]/webhook"} 0
toolpulse_alerts_failed_total{final="true",kind="reminder",receiver="default/slack"} 0
toolpulse_alerts_failed_total{final="true",kind="reminder",receiver="routes[0]/webhook"} 0
toolpulse_alerts_failed_total{final="true",kind="resolved",receiver="default/slack"} 0
toolpulse_alerts_failed_total{final="true",kind="resolved",receiver="routes[0]/webhook"} 0
toolpulse_alerts_failed_total{final="true",kind="shape_drift",receiver="default/slack"} 1
toolpulse_alerts_failed_total{final="true",kind="shape_drift",receiver="routes[0]/webhook"} 0
toolpulse_alerts_failed_total{final="true",kind="update",receiver="default/slack"} 0
toolpulse_alerts_failed_total{final="true",kind="update",receiver="routes[0]/webhook"} 0
# HELP toolpulse_store_errors_total Failed store operations, by operation.
# TYPE toolpulse_store_errors_total counter
toolpulse_store_errors_total{op="due_alerts"} 1
toolpulse_store_errors_total{op="record_run"} 2
# HELP toolpulse_results_dropped_total Runs lost because the store could not take them: the oldest pushed out of a full write queue, or still waiting at shutdown.
# TYPE toolpulse_results_dropped_total counter
toolpulse_results_dropped_total 4
`, "toolpulse_alerts_sent_total", "toolpulse_alerts_failed_total", "toolpulse_store_errors_total", "toolpulse_results_dropped_total")
}

// TestDriftDetected counts drift events per probe and kind, both kinds
// created at 0 (a drift without a kind is a response drift).
func TestDriftDetected(t *testing.T) {
	m, reg := newMetrics(t)
	m.DriftDetected(&results.Drift{Probe: "search", Baseline: "a", Current: "b"})
	m.DriftDetected(&results.Drift{Kind: results.DriftResponse, Probe: "search", Baseline: "b", Current: "c"})
	m.DriftDetected(&results.Drift{Kind: results.DriftDefinition, Probe: "search", Baseline: "d", Current: "e"})
	m.DriftDetected(&results.Drift{Probe: "weather"})
	gatherAndCompare(t, reg, `
# HELP toolpulse_drift_events_total Drift events: of the response's shape (kind response) or of an MCP tool's definition (kind definition).
# TYPE toolpulse_drift_events_total counter
toolpulse_drift_events_total{kind="definition",probe="search"} 1
toolpulse_drift_events_total{kind="definition",probe="weather"} 0
toolpulse_drift_events_total{kind="response",probe="search"} 2
toolpulse_drift_events_total{kind="response",probe="weather"} 1
`, "toolpulse_drift_events_total")
}

// TestBuildInfo: one series at 1, labelled with the binary's version.
func TestBuildInfo(t *testing.T) {
	_, reg := newMetrics(t)
	want := results.ReadBuild().Label()
	if got, ok := value(t, reg, "toolpulse_build_info", map[string]string{"version": want}); !ok || got != 1 {
		t.Errorf("toolpulse_build_info{version=%q} = %v (present %v), want 1", want, got, ok)
	}
	if n := count(t, reg, "toolpulse_build_info"); n != 1 {
		t.Errorf("toolpulse_build_info has %d series, want 1", n)
	}
}

// TestConfigLoaded: the reload gauges follow Prometheus's own: a refused
// load sets successful to 0 and leaves the success timestamp alone.
func TestConfigLoaded(t *testing.T) {
	m, reg := newMetrics(t)
	t0 := time.Date(2026, 10, 26, 13, 7, 0, 500_000_000, time.UTC)
	steps := []struct {
		name   string
		ok     bool
		at     time.Time
		wantOK float64
		wantAt float64
	}{
		{"start", true, t0, 1, 1793020020.5},
		{"refused", false, t0.Add(time.Minute), 0, 1793020020.5},
		{"reloaded", true, t0.Add(2 * time.Minute), 1, 1793020140.5},
	}
	for _, s := range steps {
		m.ConfigLoaded(s.ok, s.at)
		if got, _ := value(t, reg, "toolpulse_config_last_reload_successful", nil); got != s.wantOK {
			t.Errorf("%s: toolpulse_config_last_reload_successful = %v, want %v", s.name, got, s.wantOK)
		}
		if got, _ := value(t, reg, "toolpulse_config_last_reload_success_timestamp_seconds", nil); got != s.wantAt {
			t.Errorf("%s: toolpulse_config_last_reload_success_timestamp_seconds = %v, want %v", s.name, got, s.wantAt)
		}
	}
}

// TestResultsPending: the write queue's length is read at scrape time.
func TestResultsPending(t *testing.T) {
	m, reg := newMetrics(t)
	if got, ok := value(t, reg, "toolpulse_results_pending", nil); !ok || got != 0 {
		t.Errorf("before WatchPending: toolpulse_results_pending = %v (present %v), want 0", got, ok)
	}
	n := 3
	m.WatchPending(func() int { return n })
	if got, _ := value(t, reg, "toolpulse_results_pending", nil); got != 3 {
		t.Errorf("toolpulse_results_pending = %v, want 3", got)
	}
	n = 7
	if got, _ := value(t, reg, "toolpulse_results_pending", nil); got != 7 {
		t.Errorf("after the queue grew: toolpulse_results_pending = %v, want 7", got)
	}
}

// TestNew: New needs a registry and registers on it, not on the global one.
func TestNew(t *testing.T) {
	if _, err := metrics.New(nil); err == nil {
		t.Error("New(nil) succeeded, want an error")
	}
	reg := metrics.NewRegistry()
	if _, err := metrics.New(reg); err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := metrics.New(reg); err == nil {
		t.Error("New twice on one registry succeeded, want an already-registered error")
	}
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "toolpulse_") {
			t.Errorf("%s is on the default registry", mf.GetName())
		}
	}
}

// TestIgnored: nil reports and impossible outcomes change nothing.
func TestIgnored(t *testing.T) {
	m, reg := newMetrics(t)
	m.RunFinished(nil)
	m.DriftDetected(nil)
	m.AlertDelivered(nil)
	m.AlertFailed(nil, true)
	m.RunFinished(&results.Result{Probe: "search", Outcome: "exploded"})
	for _, name := range []string{"toolpulse_runs_total", "toolpulse_drift_events_total", "toolpulse_last_outcome"} {
		if n := count(t, reg, name); n != 0 {
			t.Errorf("%s has %d series, want 0", name, n)
		}
	}
}

// TestConcurrent reports from many goroutines while reloads and scrapes go
// on; run it with -race. Counts of the probes never removed must be exact.
func TestConcurrent(t *testing.T) {
	m, reg := newMetrics(t)
	stable := []string{"p0", "p1", "p2", "p3"}
	m.SetProbes(append(stable, "flapping"))
	const perWorker = 200
	var wg sync.WaitGroup
	for i, p := range stable {
		wg.Go(func() {
			for j := range perWorker {
				code := results.Code("")
				switch j % 4 {
				case 1:
					code = results.CodeTimeout
				case 2:
					code = results.Code(fmt.Sprintf("custom_%d", j%50))
				}
				m.RunFinished(run(p, code, time.Duration(j)*time.Millisecond, 1+j%3, j%5))
				m.DriftDetected(&results.Drift{Probe: p})
				m.AlertDelivered(&results.Alert{Kind: results.AlertFiring})
				m.AlertFailed(&results.Alert{Kind: results.AlertReminder}, j%2 == 0)
				m.StoreError(fmt.Sprintf("op%d", i))
			}
		})
	}
	wg.Go(func() {
		for range perWorker {
			m.RunFinished(run("flapping", results.CodeInvalidJSON, time.Millisecond, 1, 0))
		}
	})
	wg.Go(func() {
		for j := range perWorker / 4 {
			if j%2 == 0 {
				m.SetProbes(stable)
			} else {
				m.SetProbes(append(stable, "flapping"))
			}
		}
	})
	wg.Go(func() {
		h := metrics.Handler(reg)
		for range 20 {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if rec.Code != http.StatusOK {
				t.Errorf("scrape during reports: HTTP %d: %s", rec.Code, rec.Body)
				return
			}
		}
	})
	wg.Wait()

	for _, p := range stable {
		runs, drifts := 0.0, 0.0
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, s := range mf.GetMetric() {
				if !hasLabel(s.GetLabel(), "probe", p) {
					continue
				}
				switch mf.GetName() {
				case "toolpulse_runs_total":
					runs += s.GetCounter().GetValue()
				case "toolpulse_drift_events_total":
					drifts += s.GetCounter().GetValue()
				}
			}
		}
		if runs != perWorker || drifts != perWorker {
			t.Errorf("%s: runs %v, drifts %v, want %d each", p, runs, drifts, perWorker)
		}
	}
	if got, _ := value(t, reg, "toolpulse_alerts_sent_total", map[string]string{"kind": "firing", "receiver": "none"}); got != perWorker*float64(len(stable)) {
		t.Errorf("alerts_sent_total{firing} = %v, want %d", got, perWorker*len(stable))
	}
}

// TestConcurrentScrapes gathers several times at once, directly and over
// HTTP in text and protobuf, while reports and reloads go on; run it with
// -race. Scrapes share the messages that never change, so this is where
// a write to one of them would show. A scrape is a copy: what it gathered
// stays the same while later reports and scrapes happen.
func TestConcurrentScrapes(t *testing.T) {
	m, reg := newMetrics(t)
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("p%02d", i))
	}
	m.SetProbes(names)
	for _, p := range names {
		m.RunFinished(run(p, "", 120*time.Millisecond, 1, 2))
	}
	first, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	before := encodeText(t, first)

	codes := []results.Code{"", results.CodeTimeout, "price_missing", results.CodeInvalidJSON, "rule_x"}
	var wg sync.WaitGroup
	for i, p := range names[:8] {
		wg.Go(func() {
			for j := range 100 {
				m.RunFinished(run(p, codes[(i+j)%len(codes)], time.Duration(j)*time.Millisecond, 1+j%3, j%4))
				m.DriftDetected(&results.Drift{Probe: p})
			}
		})
	}
	wg.Go(func() {
		for j := range 20 {
			m.SetProbes(names[:len(names)-j%2])
		}
	})
	h := metrics.Handler(reg)
	for i := range 6 {
		wg.Go(func() {
			for range 10 {
				switch i % 3 {
				case 0:
					if _, err := reg.Gather(); err != nil {
						t.Errorf("Gather: %v", err)
						return
					}
				case 1:
					scrape(t, h, expfmt.NewFormat(expfmt.TypeTextPlain))
				case 2:
					scrape(t, h, expfmt.NewFormat(expfmt.TypeProtoDelim))
				}
			}
		})
	}
	wg.Wait()

	if after := encodeText(t, first); after != before {
		t.Errorf("a gathered scrape changed afterwards:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// scrape GETs /metrics from h in format f and decodes every family.
func scrape(t *testing.T, h http.Handler, f expfmt.Format) {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", string(f))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("scrape in %s: HTTP %d: %s", f, rec.Code, rec.Body)
		return
	}
	if got := expfmt.ResponseFormat(rec.Header()); got.FormatType() != f.FormatType() {
		t.Errorf("asked for %s, got %s", f, got)
	}
	dec := expfmt.NewDecoder(rec.Body, expfmt.ResponseFormat(rec.Header()))
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			return
		} else if err != nil {
			t.Errorf("decoding a scrape in %s: %v", f, err)
			return
		}
	}
}

// encodeText returns mfs in the text exposition format.
func encodeText(t *testing.T, mfs []*dto.MetricFamily) string {
	t.Helper()
	var b strings.Builder
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("encoding %s: %v", mf.GetName(), err)
		}
	}
	return b.String()
}

// hasLabel reports whether ls has the label name="value".
func hasLabel(ls []*dto.LabelPair, name, value string) bool {
	for _, l := range ls {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// BenchmarkRunFinished measures the hot path: one call per operation.
func BenchmarkRunFinished(b *testing.B) {
	m, _ := newMetrics(b)
	probes := []string{"search", "weather", "geo", "translate"}
	m.SetProbes(probes)
	rs := []*results.Result{
		run("search", "", 120*time.Millisecond, 1, 5),
		run("weather", results.CodeEmptySelection, 80*time.Millisecond, 1, 0),
		run("geo", results.CodeTimeout, 5*time.Second, 3, 0),
		run("translate", "price_missing", 40*time.Millisecond, 1, 0),
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			m.RunFinished(rs[i%len(rs)])
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				m.RunFinished(rs[i%len(rs)])
				i++
			}
		})
	})
}

// TestCreatedTimestamps: counters and the histogram carry the time their
// series appeared, as client_golang's own do, for scrapers that read the
// protobuf exposition and ingest created timestamps.
func TestCreatedTimestamps(t *testing.T) {
	before := time.Now()
	m, reg := newMetrics(t)
	m.SetProbes([]string{"search"})
	listed := time.Now()
	m.RunFinished(run("search", results.CodeTimeout, time.Second, 2, 0))
	after := time.Now()

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			if !hasLabel(s.GetLabel(), "probe", "search") {
				continue
			}
			var ct interface{ AsTime() time.Time }
			switch {
			case s.Counter != nil && s.Counter.CreatedTimestamp != nil:
				ct = s.Counter.CreatedTimestamp
			case s.Histogram != nil && s.Histogram.CreatedTimestamp != nil:
				ct = s.Histogram.CreatedTimestamp
			case s.Gauge != nil:
				continue
			default:
				t.Errorf("%s%v has no created timestamp", mf.GetName(), s.GetLabel())
				continue
			}
			seen++
			from := before
			if hasLabel(s.GetLabel(), "code", "timeout") {
				// Created by the run, not by SetProbes.
				from = listed
			}
			if got := ct.AsTime(); got.Before(from) || got.After(after) {
				t.Errorf("%s%v created at %v, want between %v and %v", mf.GetName(), s.GetLabel(), got, from, after)
			}
		}
	}
	// runs (pass, timeout), duration, attempts, retried by 3 outcomes, drifts by 2 kinds.
	if want := 9; seen != want {
		t.Errorf("%d series with a created timestamp, want %d", seen, want)
	}
}

// TestUnusableProbeName: a probe name that is not UTF-8 cannot be a label
// value; its reports are ignored and scrapes keep working.
func TestUnusableProbeName(t *testing.T) {
	m, reg := newMetrics(t)
	bad := "caf\xe9"
	m.SetProbes([]string{"search", bad})
	m.RunFinished(run(bad, "", time.Second, 1, 1))
	m.DriftDetected(&results.Drift{Probe: bad})
	m.RunFinished(run("search", "", time.Second, 1, 1))
	if n := count(t, reg, "toolpulse_runs_total"); n != 1 {
		t.Errorf("toolpulse_runs_total has %d series, want only the one of search", n)
	}
}
