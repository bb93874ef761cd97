package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
)

// acquireLease takes location's lease for $2 until $3 milliseconds from
// the database's now, when it is free, lapsed or already $2's. A new
// holder, or a holder whose lease had lapsed, raises the epoch: writes
// tagged with the one before are refused from then on.
const acquireLease = `INSERT INTO fleet AS f (location, holder, epoch, expires_at, renewed_at)
VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond', now())
ON CONFLICT (location) DO UPDATE SET
	holder = EXCLUDED.holder,
	epoch = CASE WHEN f.holder = EXCLUDED.holder AND f.expires_at > now() THEN f.epoch ELSE f.epoch + 1 END,
	expires_at = EXCLUDED.expires_at,
	renewed_at = now()
WHERE f.holder IS NULL OR f.holder = EXCLUDED.holder OR f.expires_at IS NULL OR f.expires_at <= now()
RETURNING holder, epoch, expires_at`

const readLease = `SELECT coalesce(holder, ''), epoch, coalesce(expires_at, 'epoch'::timestamptz) FROM fleet WHERE location = $1`

// releaseLease ends $2's lease of epoch $3 now; the epoch stays, so the
// next holder's is higher.
const releaseLease = `UPDATE fleet SET holder = NULL, expires_at = NULL WHERE location = $1 AND holder = $2 AND epoch = $3`

// AcquireLease makes node the holder of location's lease until ttl from
// the database's clock, when the lease is free, lapsed or already node's,
// and returns the lease as it stands afterwards, whoever holds it.
func (s *Store) AcquireLease(ctx context.Context, location, node string, ttl time.Duration) (results.Lease, error) {
	l := results.Lease{Location: location}
	err := s.pool.QueryRow(ctx, acquireLease, location, node, ttl.Milliseconds()).Scan(&l.Holder, &l.Epoch, &l.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another node holds it: say who, and until when.
		err = s.pool.QueryRow(ctx, readLease, location).Scan(&l.Holder, &l.Epoch, &l.Expires)
	}
	if err != nil {
		return results.Lease{}, fmt.Errorf("postgres: acquire lease: %w", err)
	}
	l.Expires = l.Expires.UTC()
	return l, nil
}

// ReleaseLease ends node's lease of epoch now; a lease another node holds,
// or node holds under another epoch, is left as it is.
func (s *Store) ReleaseLease(ctx context.Context, location, node string, epoch int64) error {
	if _, err := s.pool.Exec(ctx, releaseLease, location, node, epoch); err != nil {
		return fmt.Errorf("postgres: release lease: %w", err)
	}
	return nil
}
