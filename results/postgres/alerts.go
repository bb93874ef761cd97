package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolpulse/toolpulse/results"
)

const selectAlertStates = `SELECT probe, consecutive_failures, failing_since, firing, last_notified_at,
    notified::text, modes::text, announced::text, receivers::text, silenced_at,
    failing, consecutive_passes, window_bits, window_runs, flapping, flapping_since, verdict_changes,
    silent_locations
FROM alert_state`

// AlertStates returns the persisted alert state of every probe, keyed by
// probe name; an empty map when no state was ever recorded. Zero times
// (not failing, never notified) are stored as NULL and come back zero.
func (s *Store) AlertStates(ctx context.Context) (map[string]results.AlertState, error) {
	out, err := s.alertStates(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: alert states: %w", ctxErr(ctx, err))
	}
	return out, nil
}

func (s *Store) alertStates(ctx context.Context) (map[string]results.AlertState, error) {
	rows, err := s.pool.Query(ctx, selectAlertStates)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]results.AlertState{}
	for rows.Next() {
		var (
			st                            results.AlertState
			since, lastNotified, silenced *time.Time
			notified, modes, announced    *string
			receivers                     *string
			window                        int64
			flappingSince                 *time.Time
			changes                       []time.Time
			silent                        *string
		)
		if err := rows.Scan(&st.Probe, &st.ConsecutiveFailures, &since, &st.Firing, &lastNotified,
			&notified, &modes, &announced, &receivers, &silenced,
			&st.Failing, &st.ConsecutivePasses, &window, &st.WindowRuns, &st.Flapping, &flappingSince, &changes,
			&silent); err != nil {
			return nil, err
		}
		st.Window, st.FlappingSince = uint64(window), fromNull(flappingSince)
		for _, t := range changes {
			st.VerdictChanges = append(st.VerdictChanges, t.UTC())
		}
		var err1, err2, err3, err4, err5 error
		st.Notified, err1 = parseMode(notified)
		st.Modes, err2 = parseModes(modes)
		st.Announced, err3 = parseModes(announced)
		st.Receivers, err4 = parseStrings(receivers)
		if silent != nil {
			st.SilentLocations, err5 = results.DecodeSilentLocations(*silent)
		}
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
			return nil, fmt.Errorf("alert state of %s: %w", st.Probe, err)
		}
		st.SilencedAt, st.FailingSince, st.LastNotifiedAt = fromNull(silenced), fromNull(since), fromNull(lastNotified)
		out[st.Probe] = st
	}
	return out, rows.Err()
}

// alertColumns and alertFrom read alerts rows as scanAlert expects them,
// each with the drift it announces.
const alertColumns = `a.id, a.kind, a.probe, a.created_at, a.operation_id, a.outcome, a.code, a.message,
    a.attempts, a.duration_ms, a.http_status, a.consumer, a.consumer_version, a.rule_hash,
    a.failing_since, a.state, a.delivery_tries, a.next_attempt_at, a.last_error, a.delivered_at,
    a.previous_mode::text, a.modes::text, a.receiver, a.labels::text, a.target, a.response_excerpt, a.resolving, a.group_key,
    a.locations::text, a.decider, a.trace_id,
    d.probe, d.operation_id, d.detected_at, d.baseline, d.current, d.diff,
    d.kind, d.description_before, d.description_after, d.step`

const alertFrom = `FROM alerts a LEFT JOIN drifts d ON d.id = a.drift_id`

// dueAlerts lists pending alerts that are due, oldest first. It reads the
// partial index alerts_pending, which holds pending alerts only, in
// (created_at, id) order, so its cost follows the backlog, not the
// history of delivered alerts.
const dueAlerts = `SELECT ` + alertColumns + `
` + alertFrom + `
WHERE a.state = 'pending' AND (a.next_attempt_at IS NULL OR a.next_attempt_at <= $1)
ORDER BY a.created_at, a.id
LIMIT $2`

// allAlerts lists every stored alert in recording order.
const allAlerts = `SELECT ` + alertColumns + `
` + alertFrom + `
ORDER BY a.id`

// Alerts returns every stored alert, in every delivery state, in the order
// RecordRun stored them (by id, which RecordRun sets in that order), each
// whole as DueAlerts returns it, with its delivery bookkeeping; none when
// the outbox is empty. It reads the whole outbox, retention's leftovers
// included: it is for tests and operators' tools, not for the daemon's
// loops.
func (s *Store) Alerts(ctx context.Context) ([]results.Alert, error) {
	alerts, err := s.queryAlerts(ctx, s.pool, allAlerts)
	if err != nil {
		return nil, fmt.Errorf("postgres: alerts: %w", ctxErr(ctx, err))
	}
	return alerts, nil
}

// latestAlert is a probe's newest alert, read from alerts_by_probe.
const latestAlert = `SELECT ` + alertColumns + `
` + alertFrom + `
WHERE a.probe = $1
ORDER BY a.id DESC
LIMIT 1`

// LatestAlerts returns the newest alert about each of probes that has one,
// whatever its delivery state, with one search of the index on (probe, id)
// per probe, all in one read transaction: the status page and the API
// show from it whether the last message about a probe reached its
// receiver.
func (s *Store) LatestAlerts(ctx context.Context, probes []string) (map[string]results.Alert, error) {
	out, err := s.latestAlerts(ctx, probes)
	if err != nil {
		return nil, fmt.Errorf("postgres: latest alerts: %w", ctxErr(ctx, err))
	}
	return out, nil
}

func (s *Store) latestAlerts(ctx context.Context, probes []string) (map[string]results.Alert, error) {
	tx, err := s.pool.BeginTx(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	out := make(map[string]results.Alert, len(probes))
	for _, probe := range probes {
		alerts, err := s.queryAlerts(ctx, tx, latestAlert, probe)
		if err != nil {
			return nil, fmt.Errorf("probe %q: %w", probe, err)
		}
		if len(alerts) > 0 {
			out[probe] = alerts[0]
		}
	}
	return out, nil
}

// firingAlerts finds, for each firing probe, the newest alert of its
// failure delivered to one receiver, through the index on (probe, id): a
// firing, reminder or update alert since the failure began, or the
// flapping alert of a probe that is still flapping.
const firingAlerts = `SELECT ` + alertColumns + `
FROM alert_state s
JOIN alerts a ON a.id = (
    SELECT x.id FROM alerts x
    WHERE x.probe = s.probe AND x.receiver = $1 AND x.state = 'delivered'
      AND (x.kind IN ('firing', 'reminder', 'update') AND x.created_at >= s.failing_since
           OR x.kind = 'flapping' AND x.created_at >= s.flapping_since)
    ORDER BY x.id DESC LIMIT 1)
LEFT JOIN drifts d ON d.id = a.drift_id
WHERE s.firing
ORDER BY a.id`

// silentAlerts is, for each location a probe's alert state holds
// announced silent, the newest location_silent alert about that probe and
// location recorded for receiver $1, when it was delivered: what the
// receiver was last told is silent (an alert still pending will be sent
// by the outbox, and one announced earlier was ended by location_back).
const silentAlerts = `SELECT ` + alertColumns + `
FROM alert_state s
CROSS JOIN LATERAL jsonb_object_keys(s.silent_locations::jsonb) AS l(location)
JOIN alerts a ON a.id = (
    SELECT x.id FROM alerts x
    WHERE x.probe = s.probe AND x.receiver = $1 AND x.kind = 'location_silent'
      AND x.locations->0->>'location' = l.location
    ORDER BY x.id DESC LIMIT 1)
LEFT JOIN drifts d ON d.id = a.drift_id
WHERE s.silent_locations IS NOT NULL AND a.state = 'delivered'
ORDER BY a.id`

// FiringAlerts returns, for each probe whose failure is firing, the newest
// firing, reminder or update alert of that failure (or flapping alert of
// its flapping, while it lasts) delivered to receiver
// (a receiver key such as "routes[0]/alertmanager"), oldest first: what
// the receiver was last told is failing. A receiver that must keep
// telling it (Alertmanager re-posts) starts from it after a restart.
//
// It also returns, for each location of a probe announced silent and not
// back yet (SPEC §13), the location_silent alert delivered to receiver
// about it: a new decider after a failover re-posts it as it does the
// firing ones. Everything comes back by id, oldest first.
func (s *Store) FiringAlerts(ctx context.Context, receiver string) ([]results.Alert, error) {
	alerts, err := s.queryAlerts(ctx, s.pool, firingAlerts, receiver)
	if err != nil {
		return nil, fmt.Errorf("postgres: firing alerts of %s: %w", receiver, ctxErr(ctx, err))
	}
	silent, err := s.queryAlerts(ctx, s.pool, silentAlerts, receiver)
	if err != nil {
		return nil, fmt.Errorf("postgres: silent locations' alerts of %s: %w", receiver, ctxErr(ctx, err))
	}
	return results.ByID(append(alerts, silent...)), nil
}

// DueAlerts returns up to limit pending alerts whose next attempt is at or
// before now, or that were never tried (no next attempt set), oldest
// first. Each comes back whole, as RecordRun stored it with the delivery
// bookkeeping since; a shape_drift alert carries its drift with the diff
// lines. A limit of 0 or less returns none.
func (s *Store) DueAlerts(ctx context.Context, now time.Time, limit int) ([]results.Alert, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("postgres: due alerts: %w", err)
	}
	if limit <= 0 {
		return nil, nil
	}
	alerts, err := s.queryAlerts(ctx, s.pool, dueAlerts, dbTime(now), limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: due alerts: %w", ctxErr(ctx, err))
	}
	return alerts, nil
}

// queryAlerts runs a query of alertColumns and scans every row.
func (s *Store) queryAlerts(ctx context.Context, q querier, query string, args ...any) ([]results.Alert, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []results.Alert
	for rows.Next() {
		a, err := scanAlert(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// scanAlert reads one row of alertColumns.
func scanAlert(rows pgx.Rows) (results.Alert, error) {
	var (
		a                                 results.Alert
		kind, outcome, state              string
		createdAt                         time.Time
		code, message, lastErr            *string
		failingSince, nextAt, deliveredAt *time.Time
		durationMS                        int64
		httpStatus                        *int32
		dProbe, dOp, dBase, dCur, dLines  *string
		dAt                               *time.Time
		dKind, dBefore, dAfter            *string
		dStep                             *string
		previous, modes, receiver, labels *string
		target, excerpt, groupKey         *string
		locations, decider                *string
		traceID                           *string
	)
	err := rows.Scan(&a.ID, &kind, &a.Probe, &createdAt, &a.OperationID, &outcome, &code, &message,
		&a.Attempts, &durationMS, &httpStatus, &a.Consumer.Name, &a.Consumer.Version, &a.Consumer.RuleHash,
		&failingSince, &state, &a.DeliveryTries, &nextAt, &lastErr, &deliveredAt,
		&previous, &modes, &receiver, &labels, &target, &excerpt, &a.Resolving, &groupKey,
		&locations, &decider, &traceID,
		&dProbe, &dOp, &dAt, &dBase, &dCur, &dLines, &dKind, &dBefore, &dAfter, &dStep)
	if err != nil {
		return results.Alert{}, err
	}
	a.Kind = results.AlertKind(kind)
	a.Outcome = results.Outcome(outcome)
	a.Code = results.Code(str(code))
	a.Message = str(message)
	a.Duration = time.Duration(durationMS) * time.Millisecond
	a.HTTPStatus = int(num(httpStatus))
	a.State = results.DeliveryState(state)
	a.LastError = str(lastErr)
	if a.Previous, err = parseMode(previous); err != nil {
		return results.Alert{}, fmt.Errorf("alert %d: %w", a.ID, err)
	}
	if a.Modes, err = parseModes(modes); err != nil {
		return results.Alert{}, fmt.Errorf("alert %d: %w", a.ID, err)
	}
	a.Receiver = str(receiver)
	if a.Locations, err = results.DecodeLocations(str(locations)); err != nil {
		return results.Alert{}, fmt.Errorf("alert %d: %w", a.ID, err)
	}
	a.Decider, a.TraceID = str(decider), str(traceID)
	a.Target, a.ResponseExcerpt, a.GroupKey = str(target), str(excerpt), str(groupKey)
	if a.Labels, err = parseLabels(labels); err != nil {
		return results.Alert{}, fmt.Errorf("alert %d: %w", a.ID, err)
	}
	a.CreatedAt = createdAt.UTC()
	a.FailingSince, a.NextAttemptAt, a.DeliveredAt = fromNull(failingSince), fromNull(nextAt), fromNull(deliveredAt)
	if dProbe != nil {
		d := &results.Drift{Kind: results.DriftKind(str(dKind)), Probe: *dProbe, OperationID: str(dOp),
			Baseline: str(dBase), Current: str(dCur), Before: str(dBefore), After: str(dAfter), Step: str(dStep),
			DetectedAt: fromNull(dAt)}
		if str(dLines) != "" {
			d.Diff = strings.Split(*dLines, "\n")
		}
		a.Drift = d
	}
	return a, nil
}

// nextAlertDue is the earliest due time of a pending alert: its next
// attempt, or its creation when it was never tried.
const nextAlertDue = `SELECT min(coalesce(next_attempt_at, created_at))
FROM alerts WHERE state = 'pending'`

// NextAlertDue returns when the earliest pending alert is due, and false
// when none is pending. An alert never tried is due from its creation, so
// the time may lie in the past: deliver at once.
func (s *Store) NextAlertDue(ctx context.Context) (time.Time, bool, error) {
	var at *time.Time
	if err := s.pool.QueryRow(ctx, nextAlertDue).Scan(&at); err != nil {
		return time.Time{}, false, fmt.Errorf("postgres: next alert due: %w", ctxErr(ctx, err))
	}
	return fromNull(at), at != nil, nil
}

// MarkAlertDelivered records that the receiver accepted pending alert id
// at the given time: the alert becomes delivered, its delivery tries go
// up by one (the attempt that succeeded) and its last error, if any, is
// kept. It fails with an error wrapping ErrNotFound when no pending alert
// has that id (unknown, or already delivered, failed or skipped): a
// delivery's end is recorded once.
func (s *Store) MarkAlertDelivered(ctx context.Context, id int64, at time.Time) error {
	return s.markAlertDelivered(ctx, s.pool, id, at)
}

func (s *Store) markAlertDelivered(ctx context.Context, q executor, id int64, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("postgres: mark alert %d delivered: zero delivery time", id)
	}
	return markAlert(ctx, q, id, "delivered", `UPDATE alerts
		SET state = 'delivered', delivered_at = $1, delivery_tries = delivery_tries + 1, next_attempt_at = NULL
		WHERE id = $2 AND state = 'pending'`, dbTime(at), id)
}

// MarkAlertRetry records a failed delivery of pending alert id, tries
// deliveries made so far, and lastErr: the alert stays pending and is due
// again at next. It fails with an error wrapping ErrNotFound when no
// pending alert has that id.
func (s *Store) MarkAlertRetry(ctx context.Context, id int64, tries int, next time.Time, lastErr string) error {
	return s.markAlertRetry(ctx, s.pool, id, tries, next, lastErr)
}

func (s *Store) markAlertRetry(ctx context.Context, q executor, id int64, tries int, next time.Time, lastErr string) error {
	if next.IsZero() || tries < 0 {
		return fmt.Errorf("postgres: mark alert %d for retry: want tries >= 0 and a next attempt time, got %d and %v", id, tries, next)
	}
	return markAlert(ctx, q, id, "for retry", `UPDATE alerts
		SET delivery_tries = $1, next_attempt_at = $2, last_error = $3
		WHERE id = $4 AND state = 'pending'`, tries, dbTime(next), nullString(lastErr), id)
}

// MarkAlertFailed records that pending alert id will not be delivered,
// after tries deliveries, because of lastErr. It fails with an error
// wrapping ErrNotFound when no pending alert has that id.
func (s *Store) MarkAlertFailed(ctx context.Context, id int64, tries int, lastErr string) error {
	return s.markAlertFailed(ctx, s.pool, id, tries, lastErr)
}

func (s *Store) markAlertFailed(ctx context.Context, q executor, id int64, tries int, lastErr string) error {
	if tries < 0 {
		return fmt.Errorf("postgres: mark alert %d failed: %d tries", id, tries)
	}
	return markAlert(ctx, q, id, "failed", `UPDATE alerts
		SET state = 'failed', delivery_tries = $1, next_attempt_at = NULL, last_error = $2
		WHERE id = $3 AND state = 'pending'`, tries, nullString(lastErr), id)
}

// executor runs a statement: the pool, or a transaction.
type executor interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// markAlert runs one outbox update of a pending alert with q.
func markAlert(ctx context.Context, q executor, id int64, what, query string, args ...any) error {
	tag, err := q.Exec(ctx, query, args...)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("no pending alert with that id: %w", ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("postgres: mark alert %d %s: %w", id, what, ctxErr(ctx, err))
	}
	return nil
}

// pendingGroup lists a group's pending alerts, oldest first, through
// alerts_by_group; claimGroup does so under a fence, locking their rows
// (waiting for a DueAlerts in flight, whose claim is brief) and claiming
// them all for epoch $2, so that a group is never split between two
// claims.
const (
	pendingGroup = `SELECT ` + alertColumns + `
` + alertFrom + `
WHERE a.group_key = $1 AND a.state = 'pending'
ORDER BY a.created_at, a.id`

	claimGroup = `WITH members AS (
    SELECT id FROM alerts
    WHERE group_key = $1 AND state = 'pending'
    ORDER BY created_at, id
    FOR UPDATE
), claimed AS (
    UPDATE alerts SET claimed_epoch = coalesce(nullif($2::bigint, 0), alerts.claimed_epoch)
    FROM members WHERE alerts.id = members.id
    RETURNING alerts.*
)
SELECT ` + alertColumns + `
FROM claimed a LEFT JOIN drifts d ON d.id = a.drift_id
ORDER BY a.created_at, a.id`

	groupDelivered = `SELECT max(delivered_at) FROM alerts WHERE group_key = $1 AND state = 'delivered'`
)

// PendingGroup returns the pending alerts whose group key is key, oldest
// first, due or not, each whole as DueAlerts returns it, and when the
// group's newest delivered alert was delivered (zero when none was, or
// retention pruned it). An unknown key has no alerts.
func (s *Store) PendingGroup(ctx context.Context, key string) (results.AlertGroup, error) {
	g, err := s.pendingGroup(ctx, s.pool, pendingGroup, key)
	if err != nil {
		return g, fmt.Errorf("postgres: pending group %s: %w", key, ctxErr(ctx, err))
	}
	return g, nil
}

func (s *Store) pendingGroup(ctx context.Context, q querier, query, key string, args ...any) (results.AlertGroup, error) {
	g := results.AlertGroup{Key: key}
	if key == "" {
		return g, errors.New("empty group key")
	}
	var err error
	if g.Alerts, err = s.queryAlerts(ctx, q, query, append([]any{key}, args...)...); err != nil {
		return g, err
	}
	var at *time.Time
	if err := q.QueryRow(ctx, groupDelivered, key).Scan(&at); err != nil {
		return g, err
	}
	g.LastDelivered = fromNull(at)
	return g, nil
}
