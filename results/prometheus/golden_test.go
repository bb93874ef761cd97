package prometheus_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/toolpulse/toolpulse/results"
	metrics "github.com/toolpulse/toolpulse/results/prometheus"

	"github.com/toolpulse/toolpulse/internal/testkit"
)

// goldenNames are the metrics the golden exposition covers: everything New
// registers except toolpulse_build_info, whose version label depends on
// how the test binary was built (TestBuildInfo covers it), and
// toolpulse_probe_info, which reports do not change (TestProbeInfo).
var goldenNames = map[string]bool{
	"toolpulse_runs_total":                 true,
	"toolpulse_run_duration_seconds":       true,
	"toolpulse_attempts_total":             true,
	"toolpulse_retried_runs_total":         true,
	"toolpulse_last_outcome":               true,
	"toolpulse_last_run_timestamp_seconds": true,
	"toolpulse_validated_items":            true,
	"toolpulse_drift_events_total":         true,
	"toolpulse_alerts_sent_total":          true,
	"toolpulse_alerts_failed_total":        true,
	"toolpulse_store_errors_total":         true,
	"toolpulse_results_dropped_total":      true,
}

// exposition returns the text exposition of the golden metrics of g, in
// the order Gather sorts them.
func exposition(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if !goldenNames[mf.GetName()] {
			continue
		}
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("encoding %s: %v", mf.GetName(), err)
		}
	}
	return buf.String()
}

// at returns r with its start moved by d from t0, so that the last-run
// timestamps of the golden file tell the runs apart.
func at(r *results.Result, d time.Duration) *results.Result {
	r.StartedAt = t0.Add(d)
	return r
}

// TestExpositionGolden drives every kind of report through the metrics,
// with reloads in between, and compares the scrape at each checkpoint
// with testdata/exposition.golden. The golden file is the contract: it
// was first written by the implementation built on client_golang vectors,
// and any storage behind the metrics must reproduce it byte for byte.
func TestExpositionGolden(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	checkpoint := func(name string) {
		fmt.Fprintf(&out, "### %s\n", name)
		out.WriteString(exposition(t, reg))
	}

	checkpoint("fresh")
	m.SetReceivers([]string{"default/slack", "routes[0]/webhook"})

	// Before SetProbes every probe is accepted.
	m.RunFinished(at(run("alpha", "", 5*time.Millisecond, 1, 3), 0))
	m.DriftDetected(&results.Drift{Probe: "zeta"})
	m.RunFinished(at(run("epsilon", results.CodeServerError, 31*time.Second, 4, 0), time.Minute))
	checkpoint("before SetProbes")

	// The first reload drops zeta and lists two probes that never ran.
	m.SetProbes([]string{"alpha", "beta", "gamma", "delta", "epsilon"})
	checkpoint("after the first SetProbes")

	// alpha: durations on and around bucket bounds, sums that do not add
	// up exactly in binary, validated items that come and go.
	alpha := []struct {
		code      results.Code
		d         time.Duration
		attempts  int
		validated int
	}{
		{"", 0, 1, 0},
		{"", 100 * time.Millisecond, 1, 2},
		{"", 200 * time.Millisecond, 2, 4},
		{results.CodeTooFewResults, 300 * time.Millisecond, 1, 1},
		{"", 10*time.Millisecond + time.Nanosecond, 1, 0},
		{results.CodeTimeout, 15 * time.Second, 3, 0},
		{"", 30 * time.Second, 2, 9},
		{results.CodeCanceled, time.Hour, 1, 0},
	}
	for i, s := range alpha {
		m.RunFinished(at(run("alpha", s.code, s.d, s.attempts, s.validated), time.Duration(i+1)*time.Second))
	}

	// beta: more custom codes than the cap, a repeat of an admitted one,
	// built-in codes of both outcomes, strings that are not codes.
	for i := range metrics.MaxCustomCodes + 3 {
		m.RunFinished(at(run("beta", results.Code(fmt.Sprintf("rule_%02d", i)), 40*time.Millisecond, 1, 0), time.Duration(i)*time.Millisecond))
	}
	m.RunFinished(at(run("beta", "rule_07", 2*time.Second, 1, 0), 2*time.Minute))
	m.RunFinished(at(run("beta", results.CodeInvalidJSON, 700*time.Millisecond, 1, 0), 3*time.Minute))
	m.RunFinished(at(run("beta", results.CodeRateLimited, 6*time.Second, 5, 0), 4*time.Minute))
	m.RunFinished(at(run("beta", "Not A Code!", time.Second, 1, 0), 5*time.Minute))
	m.RunFinished(at(run("beta", "none", time.Second, 1, 0), 6*time.Minute))
	m.RunFinished(at(run("beta", "", 1500*time.Millisecond, 2, 0), 7*time.Minute))
	m.RunFinished(at(run("beta", results.CodeCanceled, time.Millisecond, 1, 0), 8*time.Minute))

	// gamma: only canceled runs, so no last-outcome gauges yet, and drift.
	m.RunFinished(at(run("gamma", results.CodeCanceled, 3*time.Second, 1, 0), 0))
	m.RunFinished(at(run("gamma", results.CodeCanceled, 2*time.Second, 2, 0), time.Second))
	m.DriftDetected(&results.Drift{Probe: "gamma", Baseline: "a", Current: "b"})
	m.DriftDetected(&results.Drift{Probe: "gamma", Baseline: "b", Current: "c"})

	// epsilon passes, is dropped by a reload, then reports late.
	m.RunFinished(at(run("epsilon", "", 50*time.Millisecond, 1, 1), 2*time.Minute))

	// Ignored reports.
	m.RunFinished(nil)
	m.DriftDetected(nil)
	m.RunFinished(&results.Result{Probe: "alpha", Outcome: "exploded"})
	m.RunFinished(run("unlisted", "", time.Second, 1, 1))
	m.DriftDetected(&results.Drift{Probe: "unlisted"})

	// Process-wide series, including a kind without pre-created series.
	m.AlertDelivered(&results.Alert{Kind: results.AlertFiring, Receiver: "default/slack"})
	m.AlertDelivered(&results.Alert{Kind: results.AlertResolved, Receiver: "routes[0]/webhook"})
	m.AlertDelivered(&results.Alert{Kind: "unheard_of", Receiver: "default/slack"})
	m.AlertFailed(&results.Alert{Kind: results.AlertDrift, Receiver: "default/slack"}, false)
	m.AlertFailed(&results.Alert{Kind: results.AlertDrift, Receiver: "default/slack"}, true)
	m.AlertFailed(&results.Alert{Kind: "unheard_of", Receiver: "routes[1]/alertmanager"}, true)
	m.StoreError("record_run")
	m.StoreError("prune")
	m.ResultsDropped(7)
	checkpoint("after the runs")

	m.SetProbes([]string{"alpha", "beta", "gamma", "delta"})
	m.RunFinished(at(run("epsilon", results.CodeInvalidJSON, time.Second, 2, 0), 9*time.Minute))
	m.DriftDetected(&results.Drift{Probe: "epsilon"})
	checkpoint("after epsilon was removed")

	// epsilon comes back from scratch; alpha passes after the cancel.
	m.SetProbes([]string{"alpha", "beta", "gamma", "delta", "epsilon"})
	m.RunFinished(at(run("epsilon", results.CodeEmptySelection, 20*time.Millisecond, 1, 0), 10*time.Minute))
	m.RunFinished(at(run("alpha", "", 250*time.Millisecond, 1, 11), 11*time.Minute))
	checkpoint("after epsilon came back")

	golden := filepath.Join("testdata", "exposition.golden")
	if testkit.Update() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("exposition differs from %s (-want +got):\n%s", golden, lineDiff(string(want), got))
	}
}

// lineDiff lists, per checkpoint, the lines only in want (-) and only in
// got (+): enough to see which series changed where.
func lineDiff(want, got string) string {
	ws, gs := sections(want), sections(got)
	var b strings.Builder
	for i := 0; i < max(len(ws), len(gs)); i++ {
		var w, g []string
		if i < len(ws) {
			w = ws[i]
		}
		if i < len(gs) {
			g = gs[i]
		}
		only := func(a, other []string, sign string) {
			n := map[string]int{}
			for _, l := range other {
				n[l]++
			}
			for _, l := range a {
				if n[l] > 0 {
					n[l]--
					continue
				}
				fmt.Fprintf(&b, "%s%s\n", sign, l)
			}
		}
		before := b.Len()
		only(w, g, "-")
		only(g, w, "+")
		if b.Len() > before {
			head := "(checkpoint missing)"
			if len(w) > 0 {
				head = w[0]
			}
			b.WriteString("  in " + head + "\n")
		}
	}
	if b.Len() == 0 {
		return "(same lines, different order)"
	}
	return b.String()
}

// sections splits a golden exposition into its checkpoints, each starting
// with its "### name" line.
func sections(s string) [][]string {
	var out [][]string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "### ") || len(out) == 0 {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], l)
	}
	return out
}
