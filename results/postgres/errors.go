package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolpulse/toolpulse/results"
)

// Store errors come in two kinds, and the daemon treats them differently,
// as it does for results/sqlite.
//
// A fault of the store (the server down or restarting, a connection cut,
// a lock timeout, the disk full, a read-only standby) is the same for
// every write: the daemon holds its runs in memory and retries until the
// fault clears. A refusal of one write (a constraint the record breaks, a
// value out of range or too big, an operation id already stored, a fence
// a newer epoch holds: results.ErrFenced) is about that record: retrying
// it gives the same answer, and holding it would stop every run queued
// behind it.
//
// An error Postgres does not classify, or one that is not Postgres's,
// counts as a fault: wrongly holding a run costs a slot of a bounded
// queue, wrongly dropping it loses it.

// Permanent reports whether err refuses one record for good: retrying the
// same write cannot succeed, whatever happens to the store. It is false for
// nil and for faults that may clear.
func Permanent(err error) bool {
	if err == nil {
		return false
	}
	var r *refusal
	if errors.As(err, &r) || errors.Is(err, ErrDuplicate) || errors.Is(err, results.ErrFenced) {
		return true
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) < 2 {
		return false
	}
	switch pe.Code[:2] {
	case "22", // data exception: a value out of range, of the wrong form, a NUL in text
		"23", // integrity constraint violation: NOT NULL, CHECK, UNIQUE, FOREIGN KEY
		"54": // program limit exceeded: a value or row too big
		return true
	}
	return false
}

// refusal marks an error Permanent says is final. Its Permanent method is
// what the runner's write queue looks for (with errors.As), so that the
// runner need not import this package.
type refusal struct{ err error }

func (e *refusal) Error() string   { return e.err.Error() }
func (e *refusal) Unwrap() error   { return e.err }
func (e *refusal) Permanent() bool { return true }

// markPermanent returns err, wrapped so that it has a Permanent() bool
// method returning true when Permanent(err) holds, and unchanged
// otherwise.
func markPermanent(err error) error {
	if !Permanent(err) {
		return err
	}
	var r *refusal
	if errors.As(err, &r) {
		return err
	}
	return &refusal{err: err}
}

// refuse marks err, a record that breaks the domain's invariants, as final.
func refuse(err error) error {
	if err == nil {
		return nil
	}
	return &refusal{err: err}
}

// uniqueViolation reports whether err is Postgres refusing a duplicate
// key of constraint.
func uniqueViolation(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == constraint
}

// ctxErr is err, or ctx's error if ctx ended: pgx then cancels the
// statement, and what it returns does not always say why.
func ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return errors.Join(ctx.Err(), err)
	}
	return err
}
