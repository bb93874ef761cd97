package sqlite_test

import (
	"github.com/toolpulse/toolpulse/results/sqlite"
	"github.com/toolpulse/toolpulse/runner"
)

// The daemon's storage is this store: a change to runner.Store or to the
// store's methods that breaks the wiring in cmd fails here first.
var _ runner.Store = (*sqlite.Store)(nil)
