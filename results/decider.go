package results

import "time"

// DeciderLease is the lease the fleet-wide decider holds (SPEC §13): one
// instance of the fleet, elected as each location elects its runner,
// decides the alerts of the probes that run from several locations. A
// location is lower-case letters, digits and '-', so no location can
// take this name.
const DeciderLease = "_decider"

// A LocationView is one location's part of a fleet-wide decision: the
// verdict of its runs by the probe's own thresholds, and its newest run.
type LocationView struct {
	Location string
	// Failing: its runs make it failing by the probe's thresholds. Never
	// set while Silent.
	Failing bool
	// Silent: it recorded no run for two intervals (plus a grace), so it
	// counts neither as passing nor as failing.
	Silent bool
	// Outcome and Code are its newest run's ("" when it never ran).
	Outcome Outcome
	Code    Code
	// LastRun is when its newest run started; zero when it never ran.
	LastRun time.Time
}

// A DecisionRecord is what the decider commits about one probe in one
// transaction: the probe's alert state and the alerts the decision calls
// for, with no run of its own (the runs were recorded by each location).
type DecisionRecord struct {
	// AlertState is the probe's new alert state; nil leaves it as stored.
	AlertState *AlertState
	Alerts     []Alert
	// Fence is the decider's lease (Location DeciderLease) under its
	// epoch; a store that keeps leases refuses the record (ErrFenced)
	// once a newer epoch holds it. The zero Fence claims none.
	Fence Fence
}
