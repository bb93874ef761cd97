package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mattn/go-sqlite3"

	"github.com/toolpulse/toolpulse/results"
)

const upsertShape = `INSERT INTO shapes (fingerprint, canonical, first_seen, last_seen, seen_count)
VALUES (?, ?, ?, ?, 1)
ON CONFLICT (fingerprint) DO UPDATE SET
    first_seen = min(first_seen, excluded.first_seen),
    last_seen  = max(last_seen, excluded.last_seen),
    seen_count = seen_count + 1`

const insertResult = `INSERT INTO results (
    operation_id, probe, started_at, duration_ms, outcome, code, message, retryable,
    attempts, http_status, selected_count, validated_count, shape_fingerprint,
    consumer, consumer_version, rule_hash, response_sample
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const insertAttempt = `INSERT INTO attempts (
    operation_id, number, started_at, duration_ms, http_status, code, message, wait_ms
) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

// Record stores r with every attempt, and counts its shape as seen, in one
// transaction: either all of it is stored or none of it. It fails with
// ErrDuplicate (wrapped) if r.OperationID is already stored, and leaves the
// stored result unchanged. A result that breaks the domain's invariants (a
// pass with an error, a failure without a code) is refused, not repaired.
//
// Durations are stored in whole milliseconds and times with millisecond
// precision. The response sample is stored only for runs that did not pass
// and received a response. Shape.Baseline and Shape.Drift are not stored
// here: drift events have their own table.
//
// Record stops waiting when ctx is done; a caller that must not lose a
// result during shutdown passes a context that is not cancelled with it.
func (s *Store) Record(ctx context.Context, r results.Result) error {
	if err := validate(&r); err != nil {
		return fmt.Errorf("sqlite: record %s: invalid result: %w", r.OperationID, err)
	}
	if err := s.record(ctx, &r); err != nil {
		return fmt.Errorf("sqlite: record %s: %w", r.OperationID, err)
	}
	return nil
}

func (s *Store) record(ctx context.Context, r *results.Result) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()

	startedAt := results.FormatTime(r.StartedAt)
	var fingerprint sql.NullString
	if r.Shape != nil {
		fingerprint = sql.NullString{String: r.Shape.Fingerprint, Valid: true}
		if _, err := tx.ExecContext(ctx, upsertShape,
			r.Shape.Fingerprint, r.Shape.Canonical, startedAt, startedAt); err != nil {
			return fmt.Errorf("shape %s: %w", r.Shape.Fingerprint, err)
		}
	}

	var code, message, sample sql.NullString
	retryable := false
	if r.Error != nil {
		code = sql.NullString{String: string(r.Error.Code), Valid: true}
		message = sql.NullString{String: r.Error.Message, Valid: true}
		retryable = r.Error.Retryable
		// No response, no body: NULL rather than an empty sample, so that
		// "the body was empty" stays distinguishable.
		sample = sql.NullString{String: r.ResponseSample, Valid: r.HTTPStatus != 0 || r.ResponseSample != ""}
	}
	_, err = tx.ExecContext(ctx, insertResult,
		r.OperationID, r.Probe, startedAt, r.Duration.Milliseconds(), string(r.Outcome),
		code, message, retryable,
		len(r.Attempts), nullInt(r.HTTPStatus), r.SelectedCount, r.ValidatedCount, fingerprint,
		r.Consumer.Name, r.Consumer.Version, r.Consumer.RuleHash, sample)
	if err != nil {
		var se sqlite3.Error
		if errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique {
			return ErrDuplicate
		}
		return err
	}

	for _, a := range r.Attempts {
		_, err := tx.ExecContext(ctx, insertAttempt,
			r.OperationID, a.Number, results.FormatTime(a.StartedAt), a.Duration.Milliseconds(),
			nullInt(a.HTTPStatus), nullString(string(a.Code)), nullString(a.Message), a.Wait.Milliseconds())
		if err != nil {
			return fmt.Errorf("attempt %d: %w", a.Number, err)
		}
	}
	return tx.Commit()
}

// validate checks what the schema relies on, so that a bug upstream reads
// as a sentence rather than as a CHECK constraint failure.
func validate(r *results.Result) error {
	switch {
	case r.OperationID == "":
		return errors.New("empty operation_id")
	case r.Probe == "":
		return errors.New("empty probe")
	case !r.Outcome.Valid():
		return fmt.Errorf("unknown outcome %q", r.Outcome)
	case r.StartedAt.IsZero():
		return errors.New("zero started_at")
	case r.Duration < 0:
		return fmt.Errorf("negative duration %s", r.Duration)
	case r.Outcome == results.Pass && r.Error != nil:
		return fmt.Errorf("outcome pass with error %q", r.Error.Code)
	case r.Outcome != results.Pass && r.Error == nil:
		return fmt.Errorf("outcome %s without an error", r.Outcome)
	case r.Error != nil && r.Error.Code == "":
		return fmt.Errorf("outcome %s with an empty code", r.Outcome)
	case r.Shape != nil && (r.Shape.Fingerprint == "" || r.Shape.Canonical == ""):
		return errors.New("shape without fingerprint or canonical text")
	}
	for i, a := range r.Attempts {
		switch {
		case a.Number < 1:
			return fmt.Errorf("attempt %d: number %d, want 1 or more", i, a.Number)
		case a.StartedAt.IsZero():
			return fmt.Errorf("attempt %d: zero started_at", a.Number)
		case a.Duration < 0 || a.Wait < 0:
			return fmt.Errorf("attempt %d: negative duration or wait", a.Number)
		}
	}
	return nil
}

func nullInt(v int) sql.NullInt64 {
	return sql.NullInt64{Int64: int64(v), Valid: v != 0}
}

func nullString(v string) sql.NullString {
	return sql.NullString{String: v, Valid: v != ""}
}
