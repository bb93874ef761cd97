package postgres_test

import (
	"context"
	"testing"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/internal/storetest"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// TestContract holds the store to what every toolpulse store must do, each
// behaviour on a database of its own.
func TestContract(t *testing.T) {
	pgtest.Server(t)
	storetest.Run(t, storetest.Impl{
		Open: func(t *testing.T) storetest.Store {
			return openStore(t, pgtest.Database(t))
		},
		ErrNotFound:  postgres.ErrNotFound,
		ErrDuplicate: postgres.ErrDuplicate,
	})
}

// openStore opens the store at dsn, closed when t ends.
func openStore(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
