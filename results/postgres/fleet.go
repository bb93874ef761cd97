package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
)

// Outbox is the alert outbox as the holder of one location's lease drains
// it (the method set of runner.Outbox; see Store.FencedOutbox). Each of
// its calls but NextAlertDue runs in a transaction that reads the lease
// row FOR SHARE and is refused, changing nothing, with an error wrapping
// results.ErrFenced (permanent, see Permanent) once the lease is at
// another epoch or has no row: a deposed leader can neither claim alerts
// nor record their deliveries, and a takeover waits for the call in
// flight to commit. It is safe for concurrent use.
//
// What it cannot exclude is a duplicate delivery: a leader that sent an
// alert and was deposed before MarkAlertDelivered committed leaves the
// alert pending, and the next leader sends it again. That is the one
// window, as in Alertmanager's HA: a duplicate rather than a lost alert.
type Outbox struct {
	s     *Store
	fence results.Fence
}

// FencedOutbox returns the outbox as the holder of f's lease drains it.
// The zero Fence claims no lease: the outbox is then the store's own,
// unfenced, whose DueAlerts still claims rows FOR UPDATE SKIP LOCKED but
// leaves their claimed_epoch alone.
func (s *Store) FencedOutbox(f results.Fence) *Outbox {
	return &Outbox{s: s, fence: f}
}

// claimDue claims up to $2 pending alerts due by $1, oldest first,
// skipping rows another transaction holds, for epoch $3 (0: no epoch, the
// claim is left as it was), and returns them whole. $4 is the fence's
// location: only the alerts of runs from it are claimed (”: all).
var claimDue = `WITH due AS (
    SELECT id FROM alerts
    WHERE state = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
      AND ` + ofLocation("$4") + `
    ORDER BY created_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE alerts SET claimed_epoch = coalesce(nullif($3::bigint, 0), alerts.claimed_epoch)
    FROM due WHERE alerts.id = due.id
    RETURNING alerts.*
)
SELECT ` + alertColumns + `
FROM claimed a LEFT JOIN drifts d ON d.id = a.drift_id
ORDER BY a.created_at, a.id`

// DueAlerts is Store.DueAlerts under o's fence: it returns up to limit
// pending alerts due by now, oldest first, and claims them for the
// fence's epoch (alerts.claimed_epoch), in one transaction that holds
// their rows FOR UPDATE: rows another transaction holds, as a concurrent
// DueAlerts does, are skipped, not waited for. Claimed rows stay pending
// until marked, so a later DueAlerts returns them again, as the store's
// own does.
func (o *Outbox) DueAlerts(ctx context.Context, now time.Time, limit int) ([]results.Alert, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("postgres: due alerts: %w", err)
	}
	if limit <= 0 {
		return nil, nil
	}
	var alerts []results.Alert
	err := o.s.fenced(ctx, o.fence, func(tx pgx.Tx) error {
		var err error
		alerts, err = o.s.queryAlerts(ctx, tx, claimDue, dbTime(now), limit, o.fence.Epoch, o.fence.Location)
		if err == nil && o.s.hooks.claimed != nil {
			o.s.hooks.claimed()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: due alerts: %w", ctxErr(ctx, err))
	}
	return alerts, nil
}

// ofLocation is the condition that keeps the alerts of runs from the
// location in parameter p, or every alert when it is ”. Each location's
// leader drains the one outbox (SPEC §13) and delivers the alerts of its
// own location's runs only: two leaders never see the same pending alert,
// so neither sends it twice. The fleet-wide decider's alerts name its
// lease (alerts.decider), which no location has: its own outbox,
// fenced by that lease, delivers them. An alert whose run is no longer
// stored goes with the default location, as a run without one does.
func ofLocation(p string) string {
	return `(` + p + `::text = '' OR coalesce(alerts.decider,
        (SELECT r.location FROM results r WHERE r.operation_id = alerts.operation_id), 'default') = ` + p + `)`
}

// nextAlertDueOf is nextAlertDue of the alerts of location $1's runs.
var nextAlertDueOf = `SELECT min(coalesce(next_attempt_at, created_at))
FROM alerts WHERE state = 'pending' AND ` + ofLocation("$1")

// NextAlertDue is Store.NextAlertDue of the alerts o delivers (those of
// its location's runs): a read, not fenced.
func (o *Outbox) NextAlertDue(ctx context.Context) (time.Time, bool, error) {
	if o.fence.Location == "" {
		return o.s.NextAlertDue(ctx)
	}
	var at *time.Time
	if err := o.s.pool.QueryRow(ctx, nextAlertDueOf, o.fence.Location).Scan(&at); err != nil {
		return time.Time{}, false, fmt.Errorf("postgres: next alert due: %w", ctxErr(ctx, err))
	}
	return fromNull(at), at != nil, nil
}

// PendingGroup is Store.PendingGroup under o's fence: it claims the
// group's pending alerts for the fence's epoch, all of them in one
// transaction that holds their rows FOR UPDATE, waiting for rows another
// transaction holds rather than skipping them, so that a group is never
// split between two claims.
func (o *Outbox) PendingGroup(ctx context.Context, key string) (results.AlertGroup, error) {
	var g results.AlertGroup
	err := o.s.fenced(ctx, o.fence, func(tx pgx.Tx) error {
		var err error
		g, err = o.s.pendingGroup(ctx, tx, claimGroup, key, o.fence.Epoch)
		return err
	})
	if err != nil {
		return results.AlertGroup{Key: key}, fmt.Errorf("postgres: pending group %s: %w", key, ctxErr(ctx, err))
	}
	return g, nil
}

// MarkAlertDelivered is Store.MarkAlertDelivered under o's fence.
func (o *Outbox) MarkAlertDelivered(ctx context.Context, id int64, at time.Time) error {
	return o.mark(ctx, id, "delivered", func(tx pgx.Tx) error {
		return o.s.markAlertDelivered(ctx, tx, id, at)
	})
}

// MarkAlertRetry is Store.MarkAlertRetry under o's fence.
func (o *Outbox) MarkAlertRetry(ctx context.Context, id int64, tries int, next time.Time, lastErr string) error {
	return o.mark(ctx, id, "for retry", func(tx pgx.Tx) error {
		return o.s.markAlertRetry(ctx, tx, id, tries, next, lastErr)
	})
}

// MarkAlertFailed is Store.MarkAlertFailed under o's fence.
func (o *Outbox) MarkAlertFailed(ctx context.Context, id int64, tries int, lastErr string) error {
	return o.mark(ctx, id, "failed", func(tx pgx.Tx) error {
		return o.s.markAlertFailed(ctx, tx, id, tries, lastErr)
	})
}

// mark runs one outbox update under o's fence. The update's own errors
// say what they are about already.
func (o *Outbox) mark(ctx context.Context, id int64, what string, update func(pgx.Tx) error) error {
	var own error
	err := o.s.fenced(ctx, o.fence, func(tx pgx.Tx) error {
		own = update(tx)
		return own
	})
	if err != nil && err != own {
		return fmt.Errorf("postgres: mark alert %d %s: %w", id, what, ctxErr(ctx, err))
	}
	return err
}

// fenced runs fn in a transaction that first reads f's lease row FOR
// SHARE, when f claims a lease, and commits what fn did only if the lease
// is at f's epoch; otherwise it returns the refusal (results.ErrFenced)
// without running fn.
func (s *Store) fenced(ctx context.Context, f results.Fence, fn func(pgx.Tx) error) error {
	if f.Epoch < 0 || (f.Fenced() && f.Location == "") {
		return refuse(fmt.Errorf("invalid fence %+v", f))
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if f.Fenced() {
		epochs, err := lockLeases(ctx, tx, []string{f.Location})
		if err != nil {
			return err
		}
		if err := fenceError(f, epochs); err != nil {
			return err
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// heartbeat records a node's heartbeat at the database's clock.
const heartbeat = `INSERT INTO fleet_nodes (node, location, started_at, heartbeat_at, version)
VALUES ($1, $2, $3, now(), $4)
ON CONFLICT (node) DO UPDATE SET
    location     = excluded.location,
    started_at   = excluded.started_at,
    heartbeat_at = excluded.heartbeat_at,
    version      = excluded.version`

// Heartbeat records that n is alive: its fleet_nodes row, keyed by
// n.Node, gets n's location ("" reads as results.DefaultLocation),
// version and start, and heartbeat_at the database's now(), so that
// every node's last heartbeat is judged by one clock. n.LastSeen is
// ignored.
func (s *Store) Heartbeat(ctx context.Context, n results.FleetNode) error {
	if n.Node == "" {
		return errors.New("postgres: heartbeat: no node name")
	}
	if n.Started.IsZero() {
		return fmt.Errorf("postgres: heartbeat of %s: zero start time", n.Node)
	}
	location := n.Location
	if location == "" {
		location = results.DefaultLocation
	}
	if _, err := s.pool.Exec(ctx, heartbeat, n.Node, location, dbTime(n.Started), n.Version); err != nil {
		return fmt.Errorf("postgres: heartbeat of %s: %w", n.Node, ctxErr(ctx, err))
	}
	return nil
}

// Fleet returns what the database knows of the instances sharing it, from
// one snapshot: every location's lease (by location; a released one has
// no holder and a zero Expires), every node that sent a heartbeat (by
// name), and the database's now(), against which Expires and LastSeen are
// to be judged.
func (s *Store) Fleet(ctx context.Context) (results.Fleet, error) {
	f, err := s.fleet(ctx)
	if err != nil {
		return results.Fleet{}, fmt.Errorf("postgres: fleet: %w", ctxErr(ctx, err))
	}
	return f, nil
}

func (s *Store) fleet(ctx context.Context) (results.Fleet, error) {
	var f results.Fleet
	tx, err := s.pool.BeginTx(ctx, snapshot)
	if err != nil {
		return f, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&f.Now); err != nil {
		return f, err
	}
	f.Now = f.Now.UTC()
	rows, err := tx.Query(ctx, `SELECT location, coalesce(holder, ''), epoch, expires_at FROM fleet ORDER BY location`)
	if err != nil {
		return f, err
	}
	for rows.Next() {
		var l results.Lease
		var expires *time.Time
		if err := rows.Scan(&l.Location, &l.Holder, &l.Epoch, &expires); err != nil {
			rows.Close()
			return f, err
		}
		l.Expires = fromNull(expires)
		f.Leases = append(f.Leases, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return f, err
	}
	rows, err = tx.Query(ctx, `SELECT node, location, version, started_at, heartbeat_at FROM fleet_nodes ORDER BY node`)
	if err != nil {
		return f, err
	}
	defer rows.Close()
	for rows.Next() {
		var n results.FleetNode
		if err := rows.Scan(&n.Node, &n.Location, &n.Version, &n.Started, &n.LastSeen); err != nil {
			return f, err
		}
		n.Started, n.LastSeen = n.Started.UTC(), n.LastSeen.UTC()
		f.Nodes = append(f.Nodes, n)
	}
	return f, rows.Err()
}

// RecordDecision commits what the fleet-wide decider decided about one
// probe (SPEC §13), with no run of its own: the probe's alert state, when
// set, and its alerts, in one transaction, which is refused with an error
// wrapping results.ErrFenced unless the decider's lease (rec.Fence) is
// still held under its epoch when it commits. On success each of
// rec.Alerts gets its ID. The alerts are stored with the fence's epoch
// and keep their Decider, which gives them to the decider's outbox.
func (s *Store) RecordDecision(ctx context.Context, rec *results.DecisionRecord) error {
	if rec == nil {
		return errors.New("postgres: record decision: nil record")
	}
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("postgres: record decision about %s: %w", rec.Probe, refuse(err))
	}
	var ids []int64
	err := s.fenced(ctx, rec.Fence, func(tx pgx.Tx) error {
		var p pipeline
		if st := rec.AlertState; st != nil {
			if err := queueAlertState(&p, st, rec.At, rec.Fence.Epoch); err != nil {
				return err
			}
		}
		var err error
		if ids, err = queueAlerts(&p, rec.Alerts, rec.Fence.Epoch, func(*results.Alert) *int64 { return nil }); err != nil {
			return err
		}
		return p.send(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("postgres: record decision about %s: %w", rec.Probe, markPermanent(ctxErr(ctx, err)))
	}
	for i, id := range ids {
		rec.Alerts[i].ID = id
	}
	return nil
}
