// Package postgres is toolpulse's store for a fleet (SPEC §12): the same
// results, attempts, shapes, drift events, alert state, outbox, silences
// and profiles as results/sqlite, kept in a Postgres database that
// several instances share. It is the only package that imports pgx;
// *Store has the method set of *sqlite.Store, with the same semantics, so
// that the daemon (runner.Store, runner.Silences), the web surface and the
// commands use either, and it passes the same contract suite
// (internal/storetest).
//
// The schema is created by numbered migrations embedded in the binary,
// applied under a lock so that instances starting together migrate once.
// Runs are recorded by a writer goroutine of the store's own that commits
// the runs recorded at the same time together (group commit); every other
// statement runs on the connection pool.
//
// For a fleet it also keeps each location's lease (AcquireLease), the
// instances' heartbeats (Heartbeat, Fleet), and the fences: a write that
// claims a lease's epoch (a fenced RunRecord, FencedOutbox's claims and
// marks) is refused with results.ErrFenced once a newer epoch holds the
// lease, and a takeover waits for such a write in flight to commit.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/groupcommit"
)

// ErrNotFound is returned, wrapped, when what was asked for is not stored:
// no result with the operation id, no pending alert with the id, no
// silence with the id. It is results.ErrNotFound, which callers that
// work with either store check.
var ErrNotFound = results.ErrNotFound

// ErrDuplicate is returned, wrapped, by Record and RecordRun when a result
// with the same operation id is already stored. The stored rows are left as
// they were.
var ErrDuplicate = errors.New("duplicate operation_id")

// ErrSchemaTooNew is returned, wrapped, by Open when the database was
// migrated by a newer toolpulse than this one. The database is left
// untouched.
var ErrSchemaTooNew = errors.New("database schema is newer than this toolpulse")

// Store is toolpulse's Postgres database. It is safe for concurrent use.
// Runs are recorded by a goroutine of the store's own, which commits the
// runs recorded at the same time together (see RecordRun); Close stops it.
type Store struct {
	pool *pgxpool.Pool
	gc   *groupcommit.Queue // nil until Open has succeeded

	closeOnce sync.Once
	hooks     hooks
}

// hooks let a test stop the store at a given point of a transaction; nil
// ones are skipped. Set them before the store is used.
type hooks struct {
	// fencesLocked runs in the writer's transaction once it holds the
	// share locks of its batch's fences, before it writes the batch.
	fencesLocked func()
	// claimed runs in DueAlerts' transaction once it has claimed its
	// rows, before it commits.
	claimed func()
}

// Open connects to the database dsn names (a postgres:// URL or a
// key=value string, as libpq takes), applies every pending migration and
// starts the writer. It fails with ErrSchemaTooNew if the database was
// migrated by a newer toolpulse, and refuses a database that has tables
// of its own but no schema_migrations (another program's). The error
// never contains the DSN, which may hold a password.
func Open(ctx context.Context, dsn string) (*Store, error) {
	if dsn == "" {
		return nil, errors.New("postgres: open: empty DSN")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors may quote the DSN: say only that it is bad.
		return nil, errors.New("postgres: open: the DSN does not parse (want postgres://user@host:port/database?sslmode=... or key=value pairs)")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", target(cfg), err)
	}
	s := &Store{pool: pool}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", target(cfg), err)
	}
	if err := migrate(ctx, pool, embedded); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", target(cfg), err)
	}
	// The writer's transactions outlive any caller's context: a run a
	// caller was told is being written is written, whatever that caller
	// does.
	s.gc = groupcommit.New()
	writerCtx := context.WithoutCancel(ctx)
	go s.gc.Run(func(batch []*groupcommit.Request) { s.commitBatch(writerCtx, batch) })
	return s, nil
}

// target names the database of cfg for errors, without its password.
func target(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("database %q on %s:%d as %q", c.Database, c.Host, c.Port, c.User)
}

// Close closes the store. It first refuses new runs (RecordRun then fails
// with ErrClosed), commits the runs already waiting and waits for the
// store's writer goroutine to return, then closes the pool. Calling Close
// again does nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.gc != nil {
			s.gc.Close()
		}
		s.pool.Close()
	})
	return nil
}
