package prometheus

import "time"

// SetFleetClock replaces the clock toolpulse_fleet_nodes's cache is judged
// by, for tests.
func SetFleetClock(m *Metrics, now func() time.Time) {
	m.fleet.mu.Lock()
	m.fleet.now = now
	m.fleet.mu.Unlock()
}
