package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// dominantShape sums a probe's hourly buckets from since's hour on. The
// primary key (probe, hour, fingerprint) makes it a range search over at
// most 25 hours of buckets, whatever the number of results.
const dominantShape = `SELECT fingerprint, sum(runs) AS runs
FROM shape_counts
WHERE probe = ? AND hour >= ?
GROUP BY fingerprint
ORDER BY runs DESC, max(last_seen) DESC, fingerprint
LIMIT 1`

// DominantShape returns the fingerprint seen most often for probe in runs
// started at or after since, and how many runs had it; "" and 0 when there
// are none. Of fingerprints seen equally often it returns the one seen
// most recently.
//
// The window is hour-granular: it counts from the start of since's UTC
// hour, so it may include up to an hour of runs before since (a 24 h window
// spans 24 to 25 hours). It reads the hourly shape_counts table, never the
// results rows, so its cost does not grow with the probe's run rate.
func (s *Store) DominantShape(ctx context.Context, probe string, since time.Time) (fingerprint string, count int, err error) {
	err = s.reader.QueryRowContext(ctx, dominantShape, probe, hourOf(since)).Scan(&fingerprint, &count)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("sqlite: dominant shape of %s: %w", probe, err)
	}
	return fingerprint, count, nil
}

// ShapeText returns the canonical shape text of fingerprint, or an error
// wrapping ErrNotFound when no run with that shape was ever recorded.
func (s *Store) ShapeText(ctx context.Context, fingerprint string) (string, error) {
	var text string
	err := s.reader.QueryRowContext(ctx, `SELECT canonical FROM shapes WHERE fingerprint = ?`, fingerprint).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("sqlite: shape %s: %w", fingerprint, err)
	}
	return text, nil
}

// lastDriftAt is answered from the index (probe, current, detected_at)
// alone.
const lastDriftAt = `SELECT max(detected_at) FROM drifts WHERE probe = ? AND current = ?`

// LastDriftAt returns when a drift of probe to fingerprint (its current
// fingerprint) was last recorded, and false when never.
func (s *Store) LastDriftAt(ctx context.Context, probe, fingerprint string) (time.Time, bool, error) {
	var at sql.NullString
	err := s.reader.QueryRowContext(ctx, lastDriftAt, probe, fingerprint).Scan(&at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("sqlite: last drift of %s to %s: %w", probe, fingerprint, err)
	}
	t, err := parseNullTime(at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("sqlite: last drift of %s to %s: %w", probe, fingerprint, err)
	}
	return t, at.Valid, nil
}
