package prometheus

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/toolpulse/toolpulse/results"
)

// report returns a finished run of probe: code "" passes; d is its
// duration, attempts its HTTP attempts, validated its validated count.
func report(probe string, code results.Code, d time.Duration, attempts, validated int) *results.Result {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &results.Result{Probe: probe, StartedAt: start, Duration: d, Outcome: results.Pass, ValidatedCount: validated}
	for i := range attempts {
		r.Attempts = append(r.Attempts, results.Attempt{Number: i + 1, StartedAt: start})
	}
	if code != "" {
		r.Fail(results.NewError(code, "failed with %s", code))
	}
	return r
}

// referenceSeries returns the series of p as client_golang's const
// metrics build them: what the series were first built with, and what
// the protobuf exposition, created timestamps included, must stay.
func referenceSeries(d *probeDescs, p *probe) []prometheus.Metric {
	must := func(m prometheus.Metric, err error) prometheus.Metric {
		if err != nil {
			return prometheus.NewInvalidMetric(d.runs, err)
		}
		return m
	}
	counter := func(desc *prometheus.Desc, v uint64, created int64, labels ...string) prometheus.Metric {
		return must(prometheus.NewConstMetricWithCreatedTimestamp(desc, prometheus.CounterValue, float64(v), time.Unix(0, created), labels...))
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
		return must(prometheus.NewConstMetric(desc, prometheus.GaugeValue, v, labels...))
	}
	var out []prometheus.Metric
	for _, rc := range p.runs {
		out = append(out, counter(d.runs, rc.n, rc.created, p.name, string(results.Outcomes[rc.outcome]), rc.code))
	}
	buckets := map[float64]uint64{}
	var cumulative uint64
	for i, bound := range durationBuckets {
		cumulative += p.buckets[i]
		buckets[bound] = cumulative
	}
	out = append(out,
		must(prometheus.NewConstHistogramWithCreatedTimestamp(d.duration, p.durCount, p.durSum, buckets, time.Unix(0, p.created), p.name)),
		counter(d.attempts, p.attempts, p.created, p.name),
	)
	for i, k := range driftKinds {
		out = append(out, counter(d.drifts, p.drifts[i], p.created, p.name, string(k)))
	}
	for i, o := range results.Outcomes {
		out = append(out, counter(d.retried, p.retried[i], p.created, p.name, string(o)))
	}
	if p.last != noOutcome {
		for i, o := range results.Outcomes {
			v := 0.0
			if i == int(p.last) {
				v = 1
			}
			out = append(out, gauge(d.last, v, p.name, string(o)))
		}
		out = append(out, gauge(d.lastRun, p.lastRun, p.name))
	}
	if p.hasValidated {
		out = append(out, gauge(d.validated, p.validated, p.name))
	}
	return out
}

// written returns what each of ms writes, by metric name and labels.
func written(t *testing.T, ms []prometheus.Metric) map[string]*dto.Metric {
	t.Helper()
	out := map[string]*dto.Metric{}
	for _, m := range ms {
		w := &dto.Metric{}
		if err := m.Write(w); err != nil {
			t.Fatalf("Write %v: %v", m.Desc(), err)
		}
		var key strings.Builder
		key.WriteString(m.Desc().String())
		for _, lp := range w.GetLabel() {
			fmt.Fprintf(&key, " %s=%q", lp.GetName(), lp.GetValue())
		}
		out[key.String()] = w
	}
	return out
}

// TestSeriesMatchConstMetrics: every per-probe series writes exactly the
// message client_golang's const metrics wrote, created timestamps,
// bucket bounds and label order included, so the protobuf exposition
// is what it was (the golden file covers the text one). Each label
// slice ends with its series, so that appending to it cannot reach
// another series.
func TestSeriesMatchConstMetrics(t *testing.T) {
	m, err := New(prometheus.NewPedanticRegistry())
	if err != nil {
		t.Fatal(err)
	}
	m.SetProbes([]string{"fresh", "busy", "canceled", "custom"})
	for _, r := range []*results.Result{
		report("busy", "", 0, 1, 0),
		report("busy", "", 5*time.Millisecond, 1, 3),
		report("busy", results.CodeTimeout, 15*time.Second, 3, 0),
		report("busy", results.CodeServerError, 31*time.Second, 4, 0),
		report("busy", "", 250*time.Millisecond, 2, 7),
		report("canceled", results.CodeCanceled, time.Second, 1, 0),
		report("custom", "rule_a", 40*time.Millisecond, 1, 0),
		report("custom", "Not A Code!", 40*time.Millisecond, 1, 0),
		report("custom", results.CodeEmptySelection, 3*time.Second, 2, 0),
	} {
		m.RunFinished(r)
	}
	m.DriftDetected(&results.Drift{Probe: "busy"})

	c := &probeCollector{m: m, d: newProbeDescs(false), shared: newSharedMessages(m.builtin, results.DefaultLocation)}
	b := c.newBuilder()
	probes := m.snapshot()
	for i := range probes {
		p := &probes[i]
		ch := make(chan prometheus.Metric, 64)
		b.collectProbe(ch, p)
		close(ch)
		var ours []prometheus.Metric
		for s := range ch {
			ours = append(ours, s)
		}
		got, want := written(t, ours), written(t, referenceSeries(&c.d, p))
		for key, w := range want {
			g, ok := got[key]
			switch {
			case !ok:
				t.Errorf("%s: missing %s", p.name, key)
			case !proto.Equal(g, w):
				t.Errorf("%s: %s\n got %v\nwant %v", p.name, key, g, w)
			case len(g.Label) != cap(g.Label):
				t.Errorf("%s: %s: label slice has room for %d more", p.name, key, cap(g.Label)-len(g.Label))
			}
		}
		for key := range got {
			if _, ok := want[key]; !ok {
				t.Errorf("%s: unexpected %s", p.name, key)
			}
		}
	}
}

// TestCollectRefusesBadState: a probe state the metrics never record
// fails the scrape with a reason instead of panicking or serving it, and
// the other probes are still gathered.
func TestCollectRefusesBadState(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(p *probe)
		want  string
	}{
		{"probe name not UTF-8", func(p *probe) { p.name = "caf\xe9" }, "not valid UTF-8"},
		{"code not UTF-8", func(p *probe) { p.runs[0].code = "\xff" }, "not valid UTF-8"},
		{"outcome out of range", func(p *probe) { p.runs[0].outcome = 3 }, "no outcome"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			m, err := New(reg)
			if err != nil {
				t.Fatal(err)
			}
			m.RunFinished(report("good", "", time.Second, 1, 1))
			bad := newProbe("bad")
			tc.spoil(bad)
			m.probes["bad"] = bad

			mfs, err := reg.Gather()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Gather error = %v, want one saying %q", err, tc.want)
			}
			found := false
			for _, mf := range mfs {
				if mf.GetName() == "toolpulse_runs_total" && len(mf.GetMetric()) == 1 {
					found = true
				}
			}
			if !found {
				t.Error("the good probe's runs series is missing")
			}
		})
	}
}

// TestStreamedScrapeRefusesBadState: a probe state the registry would
// refuse fails a streamed scrape with HTTP 500 too, as the registry's
// handler does, rather than being written.
func TestStreamedScrapeRefusesBadState(t *testing.T) {
	reg := NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.RunFinished(report("good", "", time.Second, 1, 1))
	bad := newProbe("bad")
	bad.name = "caf\xe9"
	m.probes["bad"] = bad
	rec := httptest.NewRecorder()
	m.Handler(reg).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "not valid UTF-8") {
		t.Errorf("HTTP %d, want 500 saying why:\n%.300s", rec.Code, rec.Body)
	}
}
