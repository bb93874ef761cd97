package checks

import (
	"testing"
	"time"
)

// TestLoadHysteresis: the hysteresis keys load in notify and in each
// route; a route inherits them like failure_threshold, its own
// failure_threshold replaces an inherited window, and stable_for defaults
// to the window.
func TestLoadHysteresis(t *testing.T) {
	cfg, err := Load("testdata/valid-hysteresis.yaml", noEnv)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	tests := []struct {
		name      string
		labels    map[string]string
		successes int
		threshold int
		window    FailureWindow
		flapping  Flapping
	}{
		{name: "default", successes: 2, threshold: DefaultFailureThreshold, window: FailureWindow{Failures: 3, Runs: 5},
			flapping: Flapping{Changes: 4, Window: 30 * time.Minute, StableFor: 30 * time.Minute}},
		{name: "routes[0]", labels: map[string]string{"team": "search"}, successes: 2, threshold: 2,
			flapping: Flapping{Changes: 6, Window: time.Hour, StableFor: 20 * time.Minute}},
		{name: "routes[1]", labels: map[string]string{"team": "pay"}, successes: 3, threshold: DefaultFailureThreshold,
			window:   FailureWindow{Failures: 2, Runs: 2},
			flapping: Flapping{Changes: 4, Window: 30 * time.Minute, StableFor: 30 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cfg.Notify.Route(tt.labels)
			if r.Name != tt.name {
				t.Fatalf("route = %s, want %s", r.Name, tt.name)
			}
			n := r.Notify
			if n.Successes() != tt.successes || n.FailureThreshold != tt.threshold || n.FailureWindow != tt.window || n.Flapping != tt.flapping {
				t.Errorf("policy: successes %d, threshold %d, window %+v, flapping %+v; want %d, %d, %+v, %+v",
					n.Successes(), n.FailureThreshold, n.FailureWindow, n.Flapping, tt.successes, tt.threshold, tt.window, tt.flapping)
			}
		})
	}
}

// TestHysteresisDefaults: a config without the keys resolves on the first
// pass, counts consecutive failures and never calls a probe flapping.
func TestHysteresisDefaults(t *testing.T) {
	cfg, err := Parse("checks.yaml", []byte("version: 1\n"), t.TempDir(), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.Notify
	if n.Successes() != 1 || n.FailureWindow.Enabled() || n.Flapping.Enabled() {
		t.Errorf("defaults: successes %d, window %+v, flapping %+v; want 1 and both off", n.Successes(), n.FailureWindow, n.Flapping)
	}
}
