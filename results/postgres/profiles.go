package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
)

// upsertProfile saves a probe's profile over the reset it was learned
// after: when `baseline reset` reset the probe since (reset_at differs),
// the row is left alone, and the daemon learns afresh once it sees the
// reset (ProfileResets).
const upsertProfile = `INSERT INTO shape_profiles (probe, profile, answers, updated_at, reset_at)
VALUES ($1, $2::text::json, $3, $4, $5)
ON CONFLICT (probe) DO UPDATE SET
    profile    = excluded.profile,
    answers    = excluded.answers,
    updated_at = excluded.updated_at
WHERE shape_profiles.reset_at IS NOT DISTINCT FROM excluded.reset_at`

// queueProfile saves sh's profile update, if any, as key's profile: a
// probe's, or a step's (results.StepKey). at is the run's start.
func queueProfile(p *pipeline, key string, sh *results.Shape, at time.Time) {
	if u := sh.Profile; u != nil {
		p.exec("shape profile", upsertProfile, key, u.Data, u.Answers, dbTime(at), nullTime(u.ResetAt))
	}
}

// ShapeProfile returns probe's stored profile, and false when it has no
// row (it never had one, and was never reset). One primary-key search.
func (s *Store) ShapeProfile(ctx context.Context, probe string) (results.StoredProfile, bool, error) {
	p := results.StoredProfile{Probe: probe}
	var (
		data      *string
		updatedAt time.Time
		resetAt   *time.Time
	)
	err := s.pool.QueryRow(ctx,
		`SELECT profile::text, answers, updated_at, reset_at FROM shape_profiles WHERE probe = $1`, probe).
		Scan(&data, &p.Answers, &updatedAt, &resetAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return results.StoredProfile{}, false, nil
	}
	if err != nil {
		return results.StoredProfile{}, false, fmt.Errorf("postgres: shape profile of %s: %w", probe, ctxErr(ctx, err))
	}
	p.Data, p.UpdatedAt, p.ResetAt = str(data), updatedAt.UTC(), fromNull(resetAt)
	return p, true, nil
}

// ProfileResets returns the probes whose profile was reset at or after
// since, with the time of their latest reset. It reads the partial index
// on reset_at, so its cost follows the resets, not the probes.
func (s *Store) ProfileResets(ctx context.Context, since time.Time) (map[string]time.Time, error) {
	out, err := s.profileResets(ctx, since)
	if err != nil {
		return nil, fmt.Errorf("postgres: profile resets: %w", ctxErr(ctx, err))
	}
	return out, nil
}

func (s *Store) profileResets(ctx context.Context, since time.Time) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT probe, reset_at FROM shape_profiles WHERE reset_at >= $1 ORDER BY reset_at`, storedTime(since))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var (
			probe string
			at    time.Time
		)
		if err := rows.Scan(&probe, &at); err != nil {
			return nil, err
		}
		out[probe] = at.UTC()
	}
	return out, rows.Err()
}

// ResetProfile forgets probe's learned profile at at: the daemon notices
// within a few seconds and learns a new one from the next answers, as for
// a new probe. It returns whether the probe had a profile (or runs) to
// forget. Resetting twice is harmless.
func (s *Store) ResetProfile(ctx context.Context, probe string, at time.Time) (bool, error) {
	var had bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM shape_profiles WHERE probe = $1 AND profile IS NOT NULL)
		OR EXISTS (SELECT 1 FROM results WHERE probe = $1)`, probe).Scan(&had)
	if err != nil {
		return false, fmt.Errorf("postgres: reset profile of %s: %w", probe, ctxErr(ctx, err))
	}
	if err := s.resetProfile(ctx, probe, at); err != nil {
		return false, fmt.Errorf("postgres: reset profile of %s: %w", probe, markPermanent(ctxErr(ctx, err)))
	}
	return had, nil
}

// resetProfile empties probe's profile and its steps' (keyed
// results.StepKey: the range from "PROBE/" up to "PROBE0", '0' being the
// character after '/', compared byte by byte) and forgets its tool
// definitions (the baseline of definition drift, SPEC §10) in one
// transaction.
func (s *Store) resetProfile(ctx context.Context, probe string, at time.Time) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	t := dbTime(at)
	if _, err := tx.Exec(ctx, `INSERT INTO shape_profiles (probe, profile, answers, updated_at, reset_at)
VALUES ($1, NULL, 0, $2, $2)
ON CONFLICT (probe) DO UPDATE SET
    profile = NULL, answers = 0, updated_at = excluded.updated_at, reset_at = excluded.reset_at`,
		probe, t); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE shape_profiles
SET profile = NULL, answers = 0, updated_at = $1, reset_at = $1
WHERE probe COLLATE "C" >= $2 AND probe COLLATE "C" < $3`,
		t, results.StepKey(probe, ""), probe+"0"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM tool_definitions WHERE probe = $1`, probe); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// ToolDefinition returns the tool definition probe's latest MCP run
// listed (the latest last_seen_at), and false when the probe has none
// (it never listed its tool, or was reset since). One index search.
func (s *Store) ToolDefinition(ctx context.Context, probe string) (results.ToolDefinition, bool, error) {
	var d results.ToolDefinition
	err := s.pool.QueryRow(ctx, `SELECT fingerprint, definition::text FROM tool_definitions
WHERE probe = $1 ORDER BY last_seen_at DESC, first_seen_at DESC LIMIT 1`, probe).Scan(&d.Fingerprint, &d.Canonical)
	if errors.Is(err, pgx.ErrNoRows) {
		return results.ToolDefinition{}, false, nil
	}
	if err != nil {
		return results.ToolDefinition{}, false, fmt.Errorf("postgres: tool definition of %s: %w", probe, ctxErr(ctx, err))
	}
	return d, true, nil
}

// recentShapes is probe's shapes counted from since's hour on, most runs
// first: a range of shape_counts' primary key, and a shapes row each.
const recentShapes = `SELECT c.fingerprint, s.canonical, sum(c.runs)::bigint, max(c.last_seen)
FROM shape_counts c JOIN shapes s ON s.fingerprint = c.fingerprint
WHERE c.probe = $1 AND c.hour >= $2
GROUP BY c.fingerprint, s.canonical
ORDER BY sum(c.runs) DESC, max(c.last_seen) DESC, c.fingerprint
LIMIT $3`

// RecentShapes returns up to limit of the shapes probe's runs showed from
// since's UTC hour on, most runs first, each with its canonical text.
// Drift detection builds a probe's first profile from them.
func (s *Store) RecentShapes(ctx context.Context, probe string, since time.Time, limit int) ([]results.ShapeSeen, error) {
	out, err := s.recentShapes(ctx, probe, since, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: recent shapes of %s: %w", probe, ctxErr(ctx, err))
	}
	return out, nil
}

func (s *Store) recentShapes(ctx context.Context, probe string, since time.Time, limit int) ([]results.ShapeSeen, error) {
	rows, err := s.pool.Query(ctx, recentShapes, probe, hourOf(since), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []results.ShapeSeen
	for rows.Next() {
		var (
			sh   results.ShapeSeen
			last time.Time
		)
		if err := rows.Scan(&sh.Fingerprint, &sh.Canonical, &sh.Runs, &last); err != nil {
			return nil, err
		}
		sh.LastSeen = last.UTC()
		out = append(out, sh)
	}
	return out, rows.Err()
}
