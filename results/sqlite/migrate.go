package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// Migrations are files named NNNN_what.sql, numbered from 0001 without gaps.
// A migration that has shipped is never edited: databases in the field have
// run it. A schema change is a new file. Each file runs in its own
// transaction together with its schema_migrations row, so it applies whole
// or not at all. Inside a transaction PRAGMA foreign_keys is a no-op: a
// migration that rebuilds a table must keep referential integrity itself.
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

// createSchemaMigrations is laid out as the migrations are, because the
// sqlite3 shell's .schema prints it as written.
const createSchemaMigrations = `CREATE TABLE schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT    NOT NULL
)`

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

// migrate brings the database up to the last migration of fsys. It never
// drops or rewrites data, and refuses a database that a newer toolpulse has
// migrated further than fsys goes.
func migrate(ctx context.Context, db *sql.DB, fsys fs.FS) error {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	if err := bootstrap(ctx, db); err != nil {
		return err
	}
	latest := ms[len(ms)-1].version
	current, err := schemaVersion(ctx, db, latest)
	if err != nil {
		return err
	}
	for _, m := range ms[current:] {
		if err := apply(ctx, db, m, latest); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}

// bootstrap creates schema_migrations in an empty database. A database that
// has tables but no schema_migrations is some other program's file, and
// migrating it would mix toolpulse's tables into it.
func bootstrap(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("bootstrap schema_migrations: %w", err)
	}
	defer tx.Rollback()
	var have, others int
	err = tx.QueryRowContext(ctx, `SELECT
		    count(*) FILTER (WHERE type = 'table' AND name = 'schema_migrations'),
		    count(*) FILTER (WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\')
		FROM sqlite_master`).Scan(&have, &others)
	if err != nil {
		return fmt.Errorf("bootstrap schema_migrations: %w", err)
	}
	if have == 1 {
		return nil
	}
	if others > 0 {
		return errors.New("not a toolpulse database: it has tables but no schema_migrations table")
	}
	if _, err := tx.ExecContext(ctx, createSchemaMigrations); err != nil {
		return fmt.Errorf("bootstrap schema_migrations: %w", err)
	}
	return tx.Commit()
}

// schemaVersion returns the highest applied migration, after checking that
// versions 1..N are all there and N is not past latest.
func schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, latest int) (int, error) {
	var n, top int
	err := q.QueryRowContext(ctx, `SELECT count(*), coalesce(max(version), 0) FROM schema_migrations`).Scan(&n, &top)
	if err != nil {
		return 0, fmt.Errorf("read schema_migrations: %w", err)
	}
	if top > latest {
		return 0, fmt.Errorf("%w: the database is at schema version %d, this toolpulse knows up to %d; run a newer toolpulse (the file was not changed)", ErrSchemaTooNew, top, latest)
	}
	if n != top {
		return 0, fmt.Errorf("schema_migrations is inconsistent: %d rows for versions up to %d", n, top)
	}
	return top, nil
}

// apply runs one migration in its own transaction. It re-reads the version
// inside the transaction (BEGIN IMMEDIATE holds the write lock), so two
// processes opening a new file at once apply each migration exactly once.
func apply(ctx context.Context, db *sql.DB, m migration, latest int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	current, err := schemaVersion(ctx, tx, latest)
	if err != nil {
		return err
	}
	if current >= m.version {
		return nil // another process got there first
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
		m.version, results.FormatTime(time.Now()))
	if err != nil {
		return err
	}
	return tx.Commit()
}
