package prometheus_test

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestProbeInMaintenance: toolpulse_probe_in_maintenance has no series
// until the daemon watches the config, then one per covered probe, 1
// while a window is on, following what the watch says at each scrape.
func TestProbeInMaintenance(t *testing.T) {
	m, reg := newMetrics(t)
	if _, ok := value(t, reg, "toolpulse_probe_in_maintenance", map[string]string{"probe": "search"}); ok {
		t.Fatal("a series before WatchMaintenance")
	}
	var on atomic.Bool
	m.WatchMaintenance(func(time.Time) map[string]bool { return map[string]bool{"search": on.Load(), "weather": false} })
	for _, want := range []bool{false, true, false} {
		on.Store(want)
		wantV := 0.0
		if want {
			wantV = 1
		}
		if got, ok := value(t, reg, "toolpulse_probe_in_maintenance", map[string]string{"probe": "search"}); !ok || got != wantV {
			t.Errorf("search, window on %v: %v (present %v), want %v", want, got, ok, wantV)
		}
		if got, ok := value(t, reg, "toolpulse_probe_in_maintenance", map[string]string{"probe": "weather"}); !ok || got != 0 {
			t.Errorf("weather: %v (present %v), want 0", got, ok)
		}
	}
	if _, ok := value(t, reg, "toolpulse_probe_in_maintenance", map[string]string{"probe": "tracker"}); ok {
		t.Error("a series for a probe no window covers")
	}
}
