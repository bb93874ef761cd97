package prometheus_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolpulse/toolpulse/results"
	metrics "github.com/toolpulse/toolpulse/results/prometheus"
)

// TestLocationLabel: an instance that names a location labels every
// per-probe series with it, in its place among the labels, on a pedantic
// registry; process-wide series and toolpulse_probe_info do not carry it.
func TestLocationLabel(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.NewAt(reg, "eu-west")
	if err != nil {
		t.Fatal(err)
	}
	m.RunFinished(run("search", "", 125*time.Millisecond, 1, 3))
	m.RunFinished(run("search", results.CodeTimeout, 2500*time.Millisecond, 2, 0))
	m.DriftDetected(&results.Drift{Probe: "search", Kind: results.DriftResponse})
	m.SetLeader(true)
	gatherAndCompare(t, reg, `
# HELP toolpulse_runs_total Probe runs by outcome and code (code "none" on pass).
# TYPE toolpulse_runs_total counter
toolpulse_runs_total{code="none",location="eu-west",outcome="pass",probe="search"} 1
toolpulse_runs_total{code="timeout",location="eu-west",outcome="unavailable",probe="search"} 1
# HELP toolpulse_attempts_total HTTP attempts made by probe runs, first attempts and retries.
# TYPE toolpulse_attempts_total counter
toolpulse_attempts_total{location="eu-west",probe="search"} 3
# HELP toolpulse_drift_events_total Drift events: of the response's shape (kind response) or of an MCP tool's definition (kind definition).
# TYPE toolpulse_drift_events_total counter
toolpulse_drift_events_total{kind="definition",location="eu-west",probe="search"} 0
toolpulse_drift_events_total{kind="response",location="eu-west",probe="search"} 1
# HELP toolpulse_last_outcome 1 for the outcome of the probe's last run, 0 for the other two.
# TYPE toolpulse_last_outcome gauge
toolpulse_last_outcome{location="eu-west",outcome="contract_error",probe="search"} 0
toolpulse_last_outcome{location="eu-west",outcome="pass",probe="search"} 0
toolpulse_last_outcome{location="eu-west",outcome="unavailable",probe="search"} 1
# HELP toolpulse_fleet_leader 1 while this instance leads its location (schedules probes and delivers alerts), 0 while it stands by. A single instance on SQLite always leads.
# TYPE toolpulse_fleet_leader gauge
toolpulse_fleet_leader 1
`, "toolpulse_runs_total", "toolpulse_attempts_total", "toolpulse_drift_events_total", "toolpulse_last_outcome", "toolpulse_fleet_leader")
	if _, err := reg.Gather(); err != nil {
		t.Errorf("Gather: %v", err)
	}
}
