package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrations are files named NNNN_what.sql, numbered from 0001 without gaps.
// A migration that has shipped is never edited: databases in the field have
// run it. A schema change is a new file.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// embedded holds the migrations this binary ships, at its root.
var embedded = func() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err) // a constant, valid path
	}
	return sub
}()

const createSchemaMigrations = `CREATE TABLE schema_migrations (
    version    integer     PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

// migrationLock is the key of the transaction-level advisory lock that
// serialises migrations: instances starting at once take turns, and each
// finds the work of those before it done. It is released with the
// transaction, whatever happens to the connection.
const migrationLock int64 = 0x746f6f6c70756c73 // "toolpuls"

var migrationName = regexp.MustCompile(`^([0-9]{4})_[a-z0-9_]+\.sql$`)

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads every *.sql file of fsys and checks that they are
// numbered 1, 2, 3... in order.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries { // ReadDir sorts by name
		if e.IsDir() {
			continue
		}
		match := migrationName.FindStringSubmatch(e.Name())
		if match == nil {
			return nil, fmt.Errorf("migration %s: name must look like 0001_what.sql", e.Name())
		}
		v, _ := strconv.Atoi(match[1]) // four digits always parse
		if want := len(ms) + 1; v != want {
			return nil, fmt.Errorf("migration %s: version %d, want %d (versions start at 1 and have no gaps or repeats)", e.Name(), v, want)
		}
		text, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(text)})
	}
	if len(ms) == 0 {
		return nil, errors.New("no migrations")
	}
	return ms, nil
}

// migrate brings the database up to the last migration of fsys, in one
// transaction that holds migrationLock: either every pending migration
// applies or none does. It never drops or rewrites data, refuses a
// database that a newer toolpulse has migrated further than fsys goes
// (rolling back, so nothing changes), and refuses a database whose
// schema has tables but no schema_migrations.
func migrate(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS) error {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].version
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	if err := bootstrap(ctx, tx); err != nil {
		return err
	}
	current, err := schemaVersion(ctx, tx, latest)
	if err != nil {
		return err
	}
	if current == latest {
		return nil // the deferred rollback releases the lock
	}
	for _, m := range ms[current:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, m.version); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

// bootstrap creates schema_migrations in a database whose current schema
// is empty. A schema that has tables but no schema_migrations is some
// other program's, and migrating it would mix toolpulse's tables into it.
func bootstrap(ctx context.Context, tx pgx.Tx) error {
	var have bool
	var others int
	err := tx.QueryRow(ctx, `SELECT
    to_regclass('schema_migrations') IS NOT NULL,
    (SELECT count(*) FROM pg_catalog.pg_class c
     WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'v', 'p'))`).Scan(&have, &others)
	if err != nil {
		return fmt.Errorf("bootstrap schema_migrations: %w", err)
	}
	if have {
		return nil
	}
	if others > 0 {
		return errors.New("not a toolpulse database: its schema has tables but no schema_migrations table")
	}
	if _, err := tx.Exec(ctx, createSchemaMigrations); err != nil {
		return fmt.Errorf("bootstrap schema_migrations: %w", err)
	}
	return nil
}

// schemaVersion returns the highest applied migration, after checking that
// versions 1..N are all there and N is not past latest.
func schemaVersion(ctx context.Context, tx pgx.Tx, latest int) (int, error) {
	var n, top int
	err := tx.QueryRow(ctx, `SELECT count(*), coalesce(max(version), 0) FROM schema_migrations`).Scan(&n, &top)
	if err != nil {
		return 0, fmt.Errorf("read schema_migrations: %w", err)
	}
	if top > latest {
		return 0, fmt.Errorf("%w: the database is at schema version %d, this toolpulse knows up to %d; run a newer toolpulse (the database was not changed)", ErrSchemaTooNew, top, latest)
	}
	if n != top {
		return 0, fmt.Errorf("schema_migrations is inconsistent: %d rows for versions up to %d", n, top)
	}
	return top, nil
}
