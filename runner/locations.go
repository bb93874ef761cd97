package runner

import (
	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// Named locations (SPEC §13, docs/locations.md): an instance runs in one
// location, and runs (when it leads that location's lease) exactly the
// probes that run from it. Every run records the location.
//
// A probe that runs from more than one location is recorded from each of
// them and shown per location, but no location's leader decides alerts
// about it: each location sees only its own runs, and K of N is a
// decision about all of them. Its runs leave its alert state alone (no
// state is written for it from a location) and enqueue no alert, drift
// alerts included: the probe's alert state is the fleet-wide decider's
// (decider.go), which reads each location's runs from the store. A probe
// that runs from one location alerts as every probe does, from that
// location's leader.

// localProbes are cfg's probes that run from location, in config order.
func localProbes(cfg *checks.Config, location string) []*checks.Probe {
	var out []*checks.Probe
	for _, p := range cfg.Probes {
		if p.RunsFrom(location) {
			out = append(out, p)
		}
	}
	return out
}

// fleetWide are the names of cfg's probes that run from more than one
// location: the fleet-wide decider decides their alerts.
func fleetWide(cfg *checks.Config) map[string]bool {
	out := map[string]bool{}
	for _, p := range cfg.Probes {
		if len(p.Locations) > 1 {
			out[p.Name] = true
		}
	}
	return out
}

// sayWhere logs, at start and after a reload, that the instance's location
// runs no probe while the config has some: it will run nothing, and the
// config's locations are where its probes run.
func (d *Daemon) sayWhere(cfg *checks.Config, local int) {
	if local > 0 || len(cfg.Probes) == 0 {
		return
	}
	d.logger.Warn("locations: no probe runs from this instance's location; it runs nothing",
		"location", d.location, "probe_locations", cfg.Locations())
}

// idle reports whether the instance runs nothing because no probe of
// its config runs from its location. d.mu must be held.
func (d *Daemon) idleLocked() bool { return len(d.probes) == 0 && len(d.cfg.Probes) > 0 }

// storedLocation is d's location as a Result holds it (see
// results.Result.Location).
func (d *Daemon) storedLocation() string { return results.ResultLocation(d.location) }

// keepForDecider is the decide stage of a run of a fleet-wide probe: the
// alert state stays as it was, unwritten, and the run enqueues no alert.
func keepForDecider(run *recording) {
	run.next, run.known, run.alerts = run.state, true, nil
}
