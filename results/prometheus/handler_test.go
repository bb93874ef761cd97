package prometheus_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/toolpulse/toolpulse/results"
	metrics "github.com/toolpulse/toolpulse/results/prometheus"
)

// TestHandler scrapes /metrics as a curl or Prometheus would: valid text
// exposition, every metric named toolpulse_ (SPEC §9), every metric of the
// package present after a little activity.
func TestHandler(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetProbes([]string{"search"})
	m.SetReceivers([]string{"default/slack"})
	m.RunFinished(run("search", "", 120*time.Millisecond, 2, 3))
	m.DriftDetected(&results.Drift{Probe: "search"})
	m.StoreError("record_run")
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()

	req, err := http.NewRequest("GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Asked explicitly, so that the client does not decompress silently.
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want text/plain", ct)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		t.Errorf("Content-Encoding = %q, want none", ce)
	}

	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("body is not valid text exposition: %v\n%s", err, body)
	}
	for name := range families {
		if !strings.HasPrefix(name, "toolpulse_") {
			t.Errorf("metric %s does not start with toolpulse_", name)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		name := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
		if !strings.HasPrefix(name, "toolpulse_") {
			t.Errorf("line does not name a toolpulse_ metric: %q", line)
		}
	}
	want := map[string]dto.MetricType{
		"toolpulse_runs_total":                                   dto.MetricType_COUNTER,
		"toolpulse_run_duration_seconds":                         dto.MetricType_HISTOGRAM,
		"toolpulse_attempts_total":                               dto.MetricType_COUNTER,
		"toolpulse_retried_runs_total":                           dto.MetricType_COUNTER,
		"toolpulse_last_outcome":                                 dto.MetricType_GAUGE,
		"toolpulse_last_run_timestamp_seconds":                   dto.MetricType_GAUGE,
		"toolpulse_validated_items":                              dto.MetricType_GAUGE,
		"toolpulse_drift_events_total":                           dto.MetricType_COUNTER,
		"toolpulse_alerts_sent_total":                            dto.MetricType_COUNTER,
		"toolpulse_alerts_failed_total":                          dto.MetricType_COUNTER,
		"toolpulse_store_errors_total":                           dto.MetricType_COUNTER,
		"toolpulse_results_dropped_total":                        dto.MetricType_COUNTER,
		"toolpulse_build_info":                                   dto.MetricType_GAUGE,
		"toolpulse_results_pending":                              dto.MetricType_GAUGE,
		"toolpulse_config_last_reload_successful":                dto.MetricType_GAUGE,
		"toolpulse_config_last_reload_success_timestamp_seconds": dto.MetricType_GAUGE,
		"toolpulse_fleet_leader":                                 dto.MetricType_GAUGE,
		"toolpulse_fleet_nodes":                                  dto.MetricType_GAUGE,
	}
	for name, typ := range want {
		mf, ok := families[name]
		if !ok {
			t.Errorf("metric %s missing from /metrics", name)
			continue
		}
		if mf.GetType() != typ {
			t.Errorf("%s has type %v, want %v", name, mf.GetType(), typ)
		}
	}
	for name := range families {
		_, ours := want[name]
		runtime := strings.HasPrefix(name, "toolpulse_go_") || strings.HasPrefix(name, "toolpulse_process_")
		if !ours && !runtime {
			t.Errorf("/metrics has %s, neither a metric of the package nor a runtime one", name)
		}
	}
}

// TestNewRegistryRuntimeMetrics: the Go runtime and process metrics are
// there for operators and the soak harness, renamed under toolpulse_ like
// every other metric (SPEC §9).
func TestNewRegistryRuntimeMetrics(t *testing.T) {
	m, reg := newMetrics(t)
	m.RunFinished(run("search", "", time.Second, 1, 1))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
		if !strings.HasPrefix(mf.GetName(), "toolpulse_") {
			t.Errorf("metric %s does not start with toolpulse_", mf.GetName())
		}
	}
	want := []string{"toolpulse_go_goroutines", "toolpulse_go_memstats_heap_inuse_bytes", "toolpulse_go_info"}
	if runtime.GOOS == "linux" {
		want = append(want, "toolpulse_process_resident_memory_bytes", "toolpulse_process_cpu_seconds_total")
	}
	for _, name := range want {
		if !got[name] {
			t.Errorf("%s missing", name)
		}
	}
}

// TestHandlerGatherError: a partial collection failure fails the scrape
// visibly instead of serving a silently partial page.
func TestHandlerGatherError(t *testing.T) {
	_, reg := newMetrics(t)
	broken := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		return mfs, errors.New("collector exploded")
	})
	rec := httptest.NewRecorder()
	metrics.Handler(broken).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("HTTP %d, want 500", rec.Code)
	}
	if !strings.Contains(rec.Body.String(), "collector exploded") {
		t.Errorf("body %q does not say why", rec.Body)
	}
}
