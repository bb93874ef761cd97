package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
	"github.com/toolpulse/toolpulse/results/sqlite"
	"github.com/toolpulse/toolpulse/runner"
	"github.com/toolpulse/toolpulse/web"
)

// store is what the commands, the daemon (runner.Deps) and the HTTP
// surface (web.Deps) need of a store, whichever storage.driver names:
// openStore returns one. Its errors mean toolpulse could not do its job,
// and wrap results.ErrNotFound when what was asked for is not stored.
type store interface {
	runner.Store    // the daemon's writes and the reads its recorder needs
	runner.Silences // the daemon reads operators' silences
	web.Store       // the status page and the API

	// Record stores one result without drift or alerts (check).
	Record(ctx context.Context, r results.Result) error
	// FiringAlerts returns what receiver was last told of each failure
	// still firing (a new Alertmanager receiver re-posts them).
	FiringAlerts(ctx context.Context, receiver string) ([]results.Alert, error)
	// Stats sums up each probe's runs started in [since, until) (stats,
	// demo).
	Stats(ctx context.Context, since, until time.Time, locations ...string) ([]results.ProbeStats, error)
	// Prune deletes what is older than before (retention).
	Prune(ctx context.Context, before time.Time, batch int) (int, error)
	// LatestPassSamples returns the sample of each probe's latest pass
	// (test --from-db).
	LatestPassSamples(ctx context.Context, probes []string) (map[string]results.PassSample, error)
	// ResetProfile forgets probe's learned shapes (baseline reset).
	ResetProfile(ctx context.Context, probe string, at time.Time) (bool, error)
	// AddSilence and ExpireSilence are silence add and silence expire.
	AddSilence(ctx context.Context, s results.Silence) (int64, error)
	ExpireSilence(ctx context.Context, id int64, now time.Time) error
	// Ping checks that the store answers and can be written (/healthz).
	Ping(ctx context.Context) error
	Close() error
}

var _ store = (*sqlite.Store)(nil)

// storeUse is what a command opens the store for, which decides what it
// checks first.
type storeUse int

const (
	// storeDaemon: the daemon, which refuses a store it cannot write
	// before creating or migrating anything (a setup to fix, exit 70),
	// rather than queueing every run from the start.
	storeDaemon storeUse = iota
	// storeRecord: check, which creates the store if there is none.
	storeRecord
	// storeRead: the commands that read the store, and those that change
	// what the daemon does through it (silence, baseline reset): the store
	// must exist (exit 66 otherwise); opening it would create an empty
	// one that no daemon reads.
	storeRead
)

// openStore opens the store storage names, for use. Every command opens
// its store here, so that a driver is one case of this switch.
func openStore(ctx context.Context, storage checks.Storage, use storeUse) (store, error) {
	switch storage.Driver {
	case checks.DriverSQLite, "":
		return openSQLite(ctx, storage.Path, use)
	case checks.DriverPostgres:
		s, err := postgres.Open(ctx, storage.DSN.Reveal())
		if err != nil {
			return nil, softwareError(err)
		}
		return s, nil
	}
	return nil, &exitError{code: exitConfig, err: fmt.Errorf("unknown storage.driver %q", storage.Driver)}
}

func openSQLite(ctx context.Context, path string, use storeUse) (store, error) {
	switch use {
	case storeDaemon:
		if err := sqlite.CheckWritable(path); err != nil {
			return nil, softwareError(err)
		}
	case storeRead:
		if _, err := os.Stat(path); err != nil {
			// Not toolpulse failing (70): its input is missing, and opening
			// it would create an empty database instead.
			var msg string
			if errors.Is(err, fs.ErrNotExist) {
				msg = fmt.Sprintf("no database at %s: nothing has been recorded there yet (run `toolpulse check` or `toolpulse run`, or pass --db FILE)", path)
			} else {
				msg = fmt.Sprintf("cannot read the database at %s: %v", path, err)
			}
			return nil, &exitError{code: exitNoInput, err: errors.New(msg)}
		}
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, softwareError(err)
	}
	return s, nil
}

// dbStorage is the store --db names: a postgres:// (or postgresql://) URL
// is a Postgres database, anything else a SQLite file. Retention is
// base's, the config's.
func dbStorage(db string, base checks.Storage) checks.Storage {
	s := checks.Storage{Retention: base.Retention}
	lower := strings.ToLower(db)
	if strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://") {
		s.Driver, s.DSN = checks.DriverPostgres, checks.Secret(db)
	} else {
		s.Driver, s.Path = checks.DriverSQLite, db
	}
	return s
}

// storeName says where storage keeps results, for logs: the SQLite file,
// or "postgres" (the DSN holds a password).
func storeName(storage checks.Storage) string {
	if storage.Driver == checks.DriverPostgres {
		return checks.DriverPostgres
	}
	return storage.Path
}
