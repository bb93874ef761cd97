package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// AddSilence stores s and returns its id; s.ID is ignored. It refuses
// silences that match nothing or end before they start.
func (s *Store) AddSilence(ctx context.Context, sl results.Silence) (int64, error) {
	if sl.Matchers.Empty() {
		return 0, errors.New("sqlite: add silence: no probe and no label to match")
	}
	if !sl.EndsAt.After(sl.StartsAt) {
		return 0, fmt.Errorf("sqlite: add silence: ends at %v, not after its start %v", sl.EndsAt, sl.StartsAt)
	}
	m, err := json.Marshal(sl.Matchers)
	if err != nil {
		return 0, fmt.Errorf("sqlite: add silence: %w", err)
	}
	res, err := s.writer.ExecContext(ctx, `INSERT INTO silences
		(matchers, starts_at, ends_at, reason, created_at, expired_at) VALUES (?, ?, ?, ?, ?, ?)`,
		string(m), results.FormatTime(sl.StartsAt), results.FormatTime(sl.EndsAt), sl.Reason,
		results.FormatTime(sl.CreatedAt), nullTime(sl.ExpiredAt))
	if err != nil {
		return 0, fmt.Errorf("sqlite: add silence: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("sqlite: add silence: %w", err)
	}
	return id, nil
}

// Silences returns the silences that have not ended or been expired at
// now, including those that start later, in id order; with includeExpired
// every stored silence.
func (s *Store) Silences(ctx context.Context, now time.Time, includeExpired bool) ([]results.Silence, error) {
	query := `SELECT id, matchers, starts_at, ends_at, reason, created_at, expired_at FROM silences`
	var args []any
	if !includeExpired {
		at := results.FormatTime(now)
		query += ` WHERE ends_at > ? AND (expired_at IS NULL OR expired_at > ?)`
		args = append(args, at, at)
	}
	rows, err := s.reader.QueryContext(ctx, query+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: silences: %w", err)
	}
	defer rows.Close()
	var out []results.Silence
	for rows.Next() {
		var (
			sl                              results.Silence
			matchers, starts, ends, created string
			expired                         sql.NullString
		)
		if err := rows.Scan(&sl.ID, &matchers, &starts, &ends, &sl.Reason, &created, &expired); err != nil {
			return nil, fmt.Errorf("sqlite: silences: %w", err)
		}
		if err := json.Unmarshal([]byte(matchers), &sl.Matchers); err != nil {
			return nil, fmt.Errorf("sqlite: silence %d: matchers: %w", sl.ID, err)
		}
		for _, f := range []struct {
			dst *time.Time
			src sql.NullString
		}{
			{&sl.StartsAt, sql.NullString{String: starts, Valid: true}},
			{&sl.EndsAt, sql.NullString{String: ends, Valid: true}},
			{&sl.CreatedAt, sql.NullString{String: created, Valid: true}},
			{&sl.ExpiredAt, expired},
		} {
			if *f.dst, err = parseNullTime(f.src); err != nil {
				return nil, fmt.Errorf("sqlite: silence %d: %w", sl.ID, err)
			}
		}
		out = append(out, sl)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: silences: %w", err)
	}
	return out, nil
}

// ExpireSilence ends silence id at now. Expiring a silence that has
// already ended or been expired does nothing, and keeps its first
// expired_at: the operator's intent, "no longer silenced", already holds.
// It fails with an error wrapping ErrNotFound when no silence has that id.
func (s *Store) ExpireSilence(ctx context.Context, id int64, now time.Time) error {
	at := results.FormatTime(now)
	res, err := s.writer.ExecContext(ctx, `UPDATE silences SET expired_at = ?
		WHERE id = ? AND expired_at IS NULL AND ends_at > ?`, at, id, at)
	if err != nil {
		return fmt.Errorf("sqlite: expire silence %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: expire silence %d: %w", id, err)
	} else if n > 0 {
		return nil
	}
	var one int
	switch err := s.reader.QueryRowContext(ctx, `SELECT 1 FROM silences WHERE id = ?`, id).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlite: expire silence %d: no silence with that id: %w", id, ErrNotFound)
	case err != nil:
		return fmt.Errorf("sqlite: expire silence %d: %w", id, err)
	}
	return nil
}
