// Package sqlite is toolpulse's store: it keeps results, their attempts and
// response shapes, drift events, each probe's alert state and the alert
// outbox in one SQLite file that operators can query with the sqlite3
// shell. It is the only package that imports go-sqlite3; *Store implements
// runner.Store.
//
// The file runs in WAL mode with one writer connection and a separate pool
// of read-only connections, so readers (the store's own and an operator's
// sqlite3 session) never block a write. The schema is created and upgraded
// by numbered migrations embedded in the binary; SCHEMA.md documents it.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	// The driver registers itself as "sqlite3".
	_ "github.com/mattn/go-sqlite3"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/groupcommit"
)

// ErrNotFound is returned, wrapped, when what was asked for is not stored:
// no result with the operation id, no shape with the fingerprint, or no
// pending alert with the id. It is results.ErrNotFound, which callers
// that serve any store test for.
var ErrNotFound = results.ErrNotFound

// ErrDuplicate is returned, wrapped, by Record and RecordRun when a result
// with the same operation id is already stored. The stored rows are left as
// they were.
var ErrDuplicate = errors.New("duplicate operation_id")

// ErrFleetRecord is returned, wrapped, by RecordRun for a run record that
// only an instance of a fleet writes: fenced (it claims a lease) or a
// handover. A SQLite store has no leases, and its one instance leads
// alone.
var ErrFleetRecord = errors.New("a fenced or handover run record needs a store that keeps leases (postgres), not a SQLite file")

// ErrSchemaTooNew is returned, wrapped, by Open when the database was
// migrated by a newer toolpulse than this one. The file is left untouched.
var ErrSchemaTooNew = errors.New("database schema is newer than this toolpulse")

// writeParams are the connection settings of the single writer. go-sqlite3
// silently ignores a misspelt parameter, so Open reads the settings back
// (checkPragmas) instead of trusting this string. _stmt_cache_size keeps
// that many prepared statements per connection, by their SQL text: a run
// is recorded with the same few statements every time, and preparing
// them anew (parsing and planning) cost about as much CPU as running
// them.
const writeParams = "_journal_mode=WAL&_busy_timeout=5000&_synchronous=NORMAL&_foreign_keys=on&_txlock=immediate&_stmt_cache_size=32"

// busyTimeoutMS is writeParams' _busy_timeout: how long, in milliseconds, a
// write waits for a lock that another process holds before it fails with
// "database is locked".
const busyTimeoutMS = 5000

// readParams open connections that cannot write (mode=ro needs the file:
// prefix, which dsn always adds), with statements cached as the writer's
// are: the daemon's API and status page ask the same questions again and
// again.
const readParams = "mode=ro&_busy_timeout=5000&_foreign_keys=on&_stmt_cache_size=32"

// Store is toolpulse's SQLite database. It is safe for concurrent use; all
// writes go through one connection, one transaction at a time, and reads
// use their own pool so they never wait for a write. Runs are recorded by
// a goroutine of the store's own, which commits the runs recorded at the
// same time together (see RecordRun); Close stops it.
type Store struct {
	path   string
	writer *sql.DB
	reader *sql.DB
	gc     *groupcommit.Queue // nil until Open has succeeded
}

// Open opens the store at path, creating the file and its parent directory
// if needed, applies every pending migration and checks that the connection
// settings took effect. It fails with ErrSchemaTooNew if the file was
// migrated by a newer toolpulse, and refuses a non-empty SQLite file that
// is not a toolpulse database.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: open: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o750); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: create directory: %w", path, err)
	}

	s := &Store{path: abs}
	if err := s.open(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// The writer's transactions outlive any caller's context: a run a
	// caller was told is being written is written, whatever that caller
	// does.
	s.gc = groupcommit.New()
	writerCtx := context.WithoutCancel(ctx)
	go s.gc.Run(func(batch []*groupcommit.Request) { s.commitBatch(writerCtx, batch) })
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	var err error
	if s.writer, err = sql.Open("sqlite3", dsn(s.path, writeParams)); err != nil {
		return err
	}
	// One connection: SQLite allows one writer at a time anyway, and
	// queueing in database/sql (which honours ctx) is better than
	// "database is locked" from concurrent BEGINs.
	s.writer.SetMaxOpenConns(1)
	s.writer.SetMaxIdleConns(1)
	s.writer.SetConnMaxLifetime(0)
	s.writer.SetConnMaxIdleTime(0)
	if err := s.writer.PingContext(ctx); err != nil {
		return err
	}
	if err := checkPragmas(ctx, s.writer); err != nil {
		return err
	}
	if err := migrate(ctx, s.writer, embedded); err != nil {
		return err
	}

	// The reader pool opens only once the file exists and is in WAL mode:
	// a read-only connection can create neither.
	if s.reader, err = sql.Open("sqlite3", dsn(s.path, readParams)); err != nil {
		return err
	}
	s.reader.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	return s.reader.PingContext(ctx)
}

// dsn returns a go-sqlite3 URI for path. The path is percent-encoded so
// that a space, '?', '#' or '%' in it is part of the file name rather than
// the start of the query or fragment.
func dsn(path, params string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter: file:/C:/...
	}
	u := url.URL{Path: p}
	return "file:" + u.EscapedPath() + "?" + params
}

// checkPragmas reads back the settings writeParams asked for.
func checkPragmas(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, want wal", mode)
	}
	var fk int
	if err := db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
		return fmt.Errorf("read foreign_keys: %w", err)
	}
	if fk != 1 {
		return fmt.Errorf("foreign_keys is %d, want 1", fk)
	}
	return nil
}

// Close closes the store. It first refuses new runs (RecordRun then fails
// with ErrClosed), commits the runs already waiting and waits for the
// store's writer goroutine to return. The writer connection closes last,
// so that it checkpoints the write-ahead log into the main file. Calling
// Close again does nothing.
func (s *Store) Close() error {
	if s.gc != nil {
		s.gc.Close()
	}
	var errs []error
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	if s.writer != nil {
		errs = append(errs, s.writer.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close %s: %w", s.path, err)
	}
	return nil
}
