package prometheus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	metrics "github.com/toolpulse/toolpulse/results/prometheus"
)

// TestProbeFlapping: toolpulse_probe_flapping reads 1 for a flapping
// probe and 0 for every other configured one, from the store's alert
// states, read once per cache period; it is absent, the failure counted,
// while the store cannot answer.
func TestProbeFlapping(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetProbes([]string{"search", "weather"})
	if _, ok := value(t, reg, "toolpulse_probe_flapping", map[string]string{"probe": "search"}); ok {
		t.Error("toolpulse_probe_flapping has a series before WatchAlertStates")
	}
	var (
		reads int
		err   error
	)
	states := map[string]results.AlertState{"search": {Probe: "search", Flapping: true}, "gone": {Probe: "gone", Flapping: true}}
	m.WatchAlertStates(func(ctx context.Context) (map[string]results.AlertState, error) {
		reads++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the alert states are read without a deadline")
		}
		return states, err
	})
	local := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	metrics.SetFlappingClock(m, func() time.Time { return local })
	for probe, want := range map[string]float64{"search": 1, "weather": 0} {
		if got, ok := value(t, reg, "toolpulse_probe_flapping", map[string]string{"probe": probe}); !ok || got != want {
			t.Errorf("toolpulse_probe_flapping{probe=%q} = %v (present %v), want %v", probe, got, ok, want)
		}
	}
	if _, ok := value(t, reg, "toolpulse_probe_flapping", map[string]string{"probe": "gone"}); ok {
		t.Error("a probe no longer configured has a toolpulse_probe_flapping series")
	}
	if reads != 1 {
		t.Errorf("%d reads within the cache period, want 1", reads)
	}
	local = local.Add(5 * time.Second)
	err = errors.New("database is locked")
	if _, ok := value(t, reg, "toolpulse_probe_flapping", map[string]string{"probe": "search"}); ok {
		t.Error("toolpulse_probe_flapping is present while the store cannot answer")
	}
	if got, _ := value(t, reg, "toolpulse_store_errors_total", map[string]string{"op": "alert_state"}); got != 1 {
		t.Errorf("toolpulse_store_errors_total{op=alert_state} = %v, want 1", got)
	}
}
