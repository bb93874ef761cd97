package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
)

// AddSilence stores s and returns its id; s.ID is ignored. It refuses
// silences that match nothing or end before they start.
func (s *Store) AddSilence(ctx context.Context, sl results.Silence) (int64, error) {
	if sl.Matchers.Empty() {
		return 0, errors.New("postgres: add silence: no probe and no label to match")
	}
	if !sl.EndsAt.After(sl.StartsAt) {
		return 0, fmt.Errorf("postgres: add silence: ends at %v, not after its start %v", sl.EndsAt, sl.StartsAt)
	}
	m, err := json.Marshal(sl.Matchers)
	if err != nil {
		return 0, fmt.Errorf("postgres: add silence: %w", err)
	}
	var id int64
	err = s.pool.QueryRow(ctx, `INSERT INTO silences
		(matchers, starts_at, ends_at, reason, created_at, expired_at) VALUES ($1::text::json, $2, $3, $4, $5, $6)
		RETURNING id`,
		string(m), dbTime(sl.StartsAt), dbTime(sl.EndsAt), sl.Reason, dbTime(sl.CreatedAt), nullTime(sl.ExpiredAt)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("postgres: add silence: %w", ctxErr(ctx, err))
	}
	return id, nil
}

// Silences returns the silences that have not ended or been expired at
// now, including those that start later, in id order; with includeExpired
// every stored silence.
func (s *Store) Silences(ctx context.Context, now time.Time, includeExpired bool) ([]results.Silence, error) {
	out, err := s.silences(ctx, now, includeExpired)
	if err != nil {
		return nil, fmt.Errorf("postgres: silences: %w", ctxErr(ctx, err))
	}
	return out, nil
}

func (s *Store) silences(ctx context.Context, now time.Time, includeExpired bool) ([]results.Silence, error) {
	query := `SELECT id, matchers::text, starts_at, ends_at, reason, created_at, expired_at FROM silences`
	var args []any
	if !includeExpired {
		query += ` WHERE ends_at > $1 AND (expired_at IS NULL OR expired_at > $1)`
		args = append(args, dbTime(now))
	}
	rows, err := s.pool.Query(ctx, query+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []results.Silence
	for rows.Next() {
		var (
			sl                    results.Silence
			matchers              string
			starts, ends, created time.Time
			expired               *time.Time
		)
		if err := rows.Scan(&sl.ID, &matchers, &starts, &ends, &sl.Reason, &created, &expired); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(matchers), &sl.Matchers); err != nil {
			return nil, fmt.Errorf("silence %d: matchers: %w", sl.ID, err)
		}
		sl.StartsAt, sl.EndsAt, sl.CreatedAt, sl.ExpiredAt = starts.UTC(), ends.UTC(), created.UTC(), fromNull(expired)
		out = append(out, sl)
	}
	return out, rows.Err()
}

// ExpireSilence ends silence id at now. Expiring a silence that has
// already ended or been expired does nothing, and keeps its first
// expired_at: the operator's intent, "no longer silenced", already holds.
// It fails with an error wrapping ErrNotFound when no silence has that id.
func (s *Store) ExpireSilence(ctx context.Context, id int64, now time.Time) error {
	at := dbTime(now)
	tag, err := s.pool.Exec(ctx, `UPDATE silences SET expired_at = $1
		WHERE id = $2 AND expired_at IS NULL AND ends_at > $1`, at, id)
	if err != nil {
		return fmt.Errorf("postgres: expire silence %d: %w", id, ctxErr(ctx, err))
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	var one int
	switch err := s.pool.QueryRow(ctx, `SELECT 1 FROM silences WHERE id = $1`, id).Scan(&one); {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("postgres: expire silence %d: no silence with that id: %w", id, ErrNotFound)
	case err != nil:
		return fmt.Errorf("postgres: expire silence %d: %w", id, ctxErr(ctx, err))
	}
	return nil
}
