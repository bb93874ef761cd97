package postgres_test

import (
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
	"github.com/toolpulse/toolpulse/runner"
	"github.com/toolpulse/toolpulse/web"
)

// The daemon, the web surface and the commands reach this store through
// the interfaces they declare, as they reach results/sqlite: a change to
// them or to the store's methods that breaks the wiring fails here first.
var (
	_ runner.Store      = (*postgres.Store)(nil)
	_ runner.Silences   = (*postgres.Store)(nil)
	_ web.Store         = (*postgres.Store)(nil)
	_ runner.LeaseStore = (*postgres.Store)(nil)
)

// fleetStore is *postgres.Store as a fleet instance's runner.FleetStore:
// the store cannot name runner.Outbox (it does not import runner), so
// FencedOutbox returns its own *postgres.Outbox, and this is the one-line
// adapter that hands it over as the interface.
type fleetStore struct{ *postgres.Store }

func (f fleetStore) FencedOutbox(fence results.Fence) runner.Outbox {
	return f.Store.FencedOutbox(fence)
}

var (
	_ runner.Outbox     = (*postgres.Outbox)(nil)
	_ runner.FleetStore = fleetStore{}
)
