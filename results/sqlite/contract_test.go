package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/toolpulse/toolpulse/internal/storetest"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// TestContract holds the store to what every toolpulse store must do, on
// a real file in t.TempDir().
func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Impl{
		Open: func(t *testing.T) storetest.Store {
			return openStore(t, filepath.Join(t.TempDir(), "toolpulse.db"))
		},
		ErrNotFound:  sqlite.ErrNotFound,
		ErrDuplicate: sqlite.ErrDuplicate,
	})
}
