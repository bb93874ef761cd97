package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

const selectResult = `SELECT
    r.probe, r.started_at, r.duration_ms, r.outcome, r.code, r.message, r.retryable,
    r.http_status, r.selected_count, r.validated_count, r.shape_fingerprint, s.canonical,
    r.consumer, r.consumer_version, r.rule_hash, r.response_sample
FROM results r LEFT JOIN shapes s ON s.fingerprint = r.shape_fingerprint
WHERE r.operation_id = ?`

const selectAttempts = `SELECT number, started_at, duration_ms, http_status, code, message, wait_ms
FROM attempts WHERE operation_id = ? ORDER BY number`

// Result returns the stored result of one operation with its attempts and
// shape, or an error wrapping ErrNotFound when there is none. What comes
// back is what Record stored: durations in whole milliseconds, times in UTC
// to the millisecond, and no drift lines on the shape.
func (s *Store) Result(ctx context.Context, operationID string) (results.Result, error) {
	r, err := s.result(ctx, operationID)
	if err != nil {
		return results.Result{}, fmt.Errorf("sqlite: result %s: %w", operationID, err)
	}
	return r, nil
}

func (s *Store) result(ctx context.Context, operationID string) (results.Result, error) {
	// One read transaction: the row and its attempts come from one snapshot
	// even if retention deletes the operation meanwhile.
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return results.Result{}, err
	}
	defer tx.Rollback()

	r := results.Result{OperationID: operationID}
	var (
		startedAt              string
		durationMS             int64
		outcome                string
		code, message, sample  sql.NullString
		fingerprint, canonical sql.NullString
		retryable              bool
		httpStatus             sql.NullInt64
	)
	err = tx.QueryRowContext(ctx, selectResult, operationID).Scan(
		&r.Probe, &startedAt, &durationMS, &outcome, &code, &message, &retryable,
		&httpStatus, &r.SelectedCount, &r.ValidatedCount, &fingerprint, &canonical,
		&r.Consumer.Name, &r.Consumer.Version, &r.Consumer.RuleHash, &sample)
	if errors.Is(err, sql.ErrNoRows) {
		return results.Result{}, ErrNotFound
	}
	if err != nil {
		return results.Result{}, err
	}
	if r.StartedAt, err = parseTime(startedAt); err != nil {
		return results.Result{}, err
	}
	r.Duration = time.Duration(durationMS) * time.Millisecond
	r.Outcome = results.Outcome(outcome)
	r.HTTPStatus = int(httpStatus.Int64)
	r.ResponseSample = sample.String
	if code.Valid {
		r.Error = &results.Error{Code: results.Code(code.String), Message: message.String, Retryable: retryable}
	}
	if fingerprint.Valid {
		r.Shape = &results.Shape{Fingerprint: fingerprint.String, Canonical: canonical.String}
	}

	rows, err := tx.QueryContext(ctx, selectAttempts, operationID)
	if err != nil {
		return results.Result{}, fmt.Errorf("attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			a                   results.Attempt
			started             string
			durationMS, waitMS  int64
			status              sql.NullInt64
			attemptCode, attMsg sql.NullString
		)
		if err := rows.Scan(&a.Number, &started, &durationMS, &status, &attemptCode, &attMsg, &waitMS); err != nil {
			return results.Result{}, fmt.Errorf("attempts: %w", err)
		}
		if a.StartedAt, err = parseTime(started); err != nil {
			return results.Result{}, fmt.Errorf("attempt %d: %w", a.Number, err)
		}
		a.Duration = time.Duration(durationMS) * time.Millisecond
		a.Wait = time.Duration(waitMS) * time.Millisecond
		a.HTTPStatus = int(status.Int64)
		a.Code = results.Code(attemptCode.String)
		a.Message = attMsg.String
		r.Attempts = append(r.Attempts, a)
	}
	if err := rows.Err(); err != nil {
		return results.Result{}, fmt.Errorf("attempts: %w", err)
	}
	return r, nil
}

// parseNullTime reads a nullable time column; NULL is the zero time.
func parseNullTime(s sql.NullString) (time.Time, error) {
	if !s.Valid {
		return time.Time{}, nil
	}
	return parseTime(s.String)
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(results.TimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}
