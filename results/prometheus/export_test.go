package prometheus

import "time"

// SetFleetClock replaces the clock toolpulse_fleet_nodes's cache is judged
// by, for tests.
func SetFleetClock(m *Metrics, now func() time.Time) {
	m.fleet.mu.Lock()
	m.fleet.now = now
	m.fleet.mu.Unlock()
}

// SetFlappingClock replaces the clock toolpulse_probe_flapping's cache is
// judged by, for tests.
func SetFlappingClock(m *Metrics, now func() time.Time) {
	m.flapping.mu.Lock()
	m.flapping.now = now
	m.flapping.mu.Unlock()
}
