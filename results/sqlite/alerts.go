package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

const selectAlertStates = `SELECT probe, consecutive_failures, failing_since, firing, last_notified_at,
    notified, modes, announced, receivers, silenced_at,
    failing, consecutive_passes, window_bits, window_runs, flapping, flapping_since, verdict_changes,
    silent_locations
FROM alert_state`

// AlertStates returns the persisted alert state of every probe, keyed by
// probe name; an empty map when no state was ever recorded. Zero times
// (not failing, never notified) are stored as NULL and come back zero.
func (s *Store) AlertStates(ctx context.Context) (map[string]results.AlertState, error) {
	rows, err := s.reader.QueryContext(ctx, selectAlertStates)
	if err != nil {
		return nil, fmt.Errorf("sqlite: alert states: %w", err)
	}
	defer rows.Close()
	out := map[string]results.AlertState{}
	for rows.Next() {
		var (
			st                            results.AlertState
			since, lastNotified, silenced sql.NullString
			notified, modes, announced    sql.NullString
			receivers                     sql.NullString
			window                        int64
			flappingSince, changes        sql.NullString
			silent                        sql.NullString
		)
		if err := rows.Scan(&st.Probe, &st.ConsecutiveFailures, &since, &st.Firing, &lastNotified,
			&notified, &modes, &announced, &receivers, &silenced,
			&st.Failing, &st.ConsecutivePasses, &window, &st.WindowRuns, &st.Flapping, &flappingSince, &changes,
			&silent); err != nil {
			return nil, fmt.Errorf("sqlite: alert states: %w", err)
		}
		st.Window = uint64(window)
		var err6, err7, err8 error
		st.FlappingSince, err6 = parseNullTime(flappingSince)
		st.VerdictChanges, err7 = parseTimes(changes)
		st.SilentLocations, err8 = results.DecodeSilentLocations(silent.String)
		if err := errors.Join(err6, err7, err8); err != nil {
			return nil, fmt.Errorf("sqlite: alert state of %s: %w", st.Probe, err)
		}
		var err1, err2, err3, err4, err5 error
		st.Notified, err1 = parseMode(notified)
		st.Modes, err2 = parseModes(modes)
		st.Announced, err3 = parseModes(announced)
		st.Receivers, err4 = parseStrings(receivers)
		st.SilencedAt, err5 = parseNullTime(silenced)
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
			return nil, fmt.Errorf("sqlite: alert state of %s: %w", st.Probe, err)
		}
		if st.FailingSince, err = parseNullTime(since); err != nil {
			return nil, fmt.Errorf("sqlite: alert state of %s: %w", st.Probe, err)
		}
		if st.LastNotifiedAt, err = parseNullTime(lastNotified); err != nil {
			return nil, fmt.Errorf("sqlite: alert state of %s: %w", st.Probe, err)
		}
		out[st.Probe] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: alert states: %w", err)
	}
	return out, nil
}

// alertColumns and alertFrom read alerts rows as scanAlert expects them,
// each with the drift it announces.
const alertColumns = `a.id, a.kind, a.probe, a.created_at, a.operation_id, a.outcome, a.code, a.message,
    a.attempts, a.duration_ms, a.http_status, a.consumer, a.consumer_version, a.rule_hash,
    a.failing_since, a.state, a.delivery_tries, a.next_attempt_at, a.last_error, a.delivered_at,
    a.previous_mode, a.modes, a.receiver, a.labels, a.target, a.response_excerpt, a.resolving, a.group_key,
    a.locations, a.decider, a.trace_id,
    d.probe, d.operation_id, d.detected_at, d.baseline, d.current, d.diff,
    d.kind, d.description_before, d.description_after, d.step`

const alertFrom = `FROM alerts a LEFT JOIN drifts d ON d.id = a.drift_id`

// dueAlerts lists pending alerts that are due, oldest first. It reads the
// partial index alerts_pending, which holds pending alerts only, so its
// cost follows the backlog, not the history of delivered alerts.
const dueAlerts = `SELECT ` + alertColumns + `
` + alertFrom + `
WHERE a.state = 'pending' AND (a.next_attempt_at IS NULL OR a.next_attempt_at <= ?)
ORDER BY a.created_at, a.id
LIMIT ?`

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
	alerts, err := s.queryAlerts(ctx, allAlerts)
	if err != nil {
		return nil, fmt.Errorf("sqlite: alerts: %w", err)
	}
	return alerts, nil
}

// latestAlert is a probe's newest alert, read from alerts_by_probe.
const latestAlert = `SELECT ` + alertColumns + `
` + alertFrom + `
WHERE a.probe = ?
ORDER BY a.id DESC
LIMIT 1`

// LatestAlerts returns the newest alert about each of probes that has one,
// whatever its delivery state, with one search of the index on (probe, id)
// per probe: the status page and the API show from it whether the last
// message about a probe reached its receiver.
func (s *Store) LatestAlerts(ctx context.Context, probes []string) (map[string]results.Alert, error) {
	out := make(map[string]results.Alert, len(probes))
	for _, probe := range probes {
		alerts, err := s.queryAlerts(ctx, latestAlert, probe)
		if err != nil {
			return nil, fmt.Errorf("sqlite: latest alerts: probe %q: %w", probe, err)
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
    WHERE x.probe = s.probe AND x.receiver = ? AND x.state = 'delivered'
      AND (x.kind IN ('firing', 'reminder', 'update') AND x.created_at >= s.failing_since
           OR x.kind = 'flapping' AND x.created_at >= s.flapping_since)
    ORDER BY x.id DESC LIMIT 1)
LEFT JOIN drifts d ON d.id = a.drift_id
WHERE s.firing = 1
ORDER BY a.id`

// silentAlerts is, for each location a probe's alert state holds
// announced silent, the newest location_silent alert about that probe and
// location recorded for receiver ?, when it was delivered: what the
// receiver was last told is silent (an alert still pending will be sent
// by the outbox, and one announced earlier was ended by location_back).
const silentAlerts = `SELECT ` + alertColumns + `
FROM alert_state s, json_each(s.silent_locations) l
JOIN alerts a ON a.id = (
    SELECT x.id FROM alerts x
    WHERE x.probe = s.probe AND x.receiver = ? AND x.kind = 'location_silent'
      AND json_extract(x.locations, '$[0].location') = l.key
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
	alerts, err := s.queryAlerts(ctx, firingAlerts, receiver)
	if err != nil {
		return nil, fmt.Errorf("sqlite: firing alerts of %s: %w", receiver, err)
	}
	silent, err := s.queryAlerts(ctx, silentAlerts, receiver)
	if err != nil {
		return nil, fmt.Errorf("sqlite: silent locations' alerts of %s: %w", receiver, err)
	}
	return results.ByID(append(alerts, silent...)), nil
}

// DueAlerts returns up to limit pending alerts whose next attempt is at or
// before now, or that were never tried (no next attempt set), oldest
// first. Each comes back whole, as RecordRun stored it with the delivery
// bookkeeping since; a shape_drift alert carries its drift with the diff
// lines. A limit of 0 or less returns none.
func (s *Store) DueAlerts(ctx context.Context, now time.Time, limit int) ([]results.Alert, error) {
	if limit <= 0 {
		return nil, nil
	}
	alerts, err := s.dueAlerts(ctx, now, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: due alerts: %w", err)
	}
	return alerts, nil
}

func (s *Store) dueAlerts(ctx context.Context, now time.Time, limit int) ([]results.Alert, error) {
	return s.queryAlerts(ctx, dueAlerts, results.FormatTime(now), limit)
}

// queryAlerts runs a query of alertColumns and scans every row.
func (s *Store) queryAlerts(ctx context.Context, query string, args ...any) ([]results.Alert, error) {
	rows, err := s.reader.QueryContext(ctx, query, args...)
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
func scanAlert(rows *sql.Rows) (results.Alert, error) {
	var (
		a                                     results.Alert
		kind, createdAt, outcome, state       string
		code, message, lastErr                sql.NullString
		failingSince, nextAt, deliveredAt     sql.NullString
		durationMS                            int64
		httpStatus                            sql.NullInt64
		dProbe, dOp, dAt, dBase, dCur, dLines sql.NullString
		dKind, dBefore, dAfter                sql.NullString
		dStep                                 sql.NullString
		previous, modes, receiver, labels     sql.NullString
		target, excerpt, groupKey             sql.NullString
		locations, decider                    sql.NullString
		traceID                               sql.NullString
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
	a.Code = results.Code(code.String)
	a.Message = message.String
	a.Duration = time.Duration(durationMS) * time.Millisecond
	a.HTTPStatus = int(httpStatus.Int64)
	a.State = results.DeliveryState(state)
	a.LastError = lastErr.String
	if a.Previous, err = parseMode(previous); err != nil {
		return results.Alert{}, fmt.Errorf("alert %d: %w", a.ID, err)
	}
	if a.Modes, err = parseModes(modes); err != nil {
		return results.Alert{}, fmt.Errorf("alert %d: %w", a.ID, err)
	}
	a.Receiver = receiver.String
	if a.Locations, err = results.DecodeLocations(locations.String); err != nil {
		return results.Alert{}, fmt.Errorf("alert %d: %w", a.ID, err)
	}
	a.Decider, a.TraceID = decider.String, traceID.String
	a.Target, a.ResponseExcerpt, a.GroupKey = target.String, excerpt.String, groupKey.String
	if a.Labels, err = parseLabels(labels); err != nil {
		return results.Alert{}, fmt.Errorf("alert %d: %w", a.ID, err)
	}
	for _, f := range []struct {
		dst *time.Time
		src sql.NullString
	}{
		{&a.CreatedAt, sql.NullString{String: createdAt, Valid: true}},
		{&a.FailingSince, failingSince},
		{&a.NextAttemptAt, nextAt},
		{&a.DeliveredAt, deliveredAt},
	} {
		if *f.dst, err = parseNullTime(f.src); err != nil {
			return results.Alert{}, fmt.Errorf("alert %d: %w", a.ID, err)
		}
	}
	if dProbe.Valid {
		d := &results.Drift{Kind: results.DriftKind(dKind.String), Probe: dProbe.String, OperationID: dOp.String,
			Baseline: dBase.String, Current: dCur.String, Before: dBefore.String, After: dAfter.String, Step: dStep.String}
		if d.DetectedAt, err = parseTime(dAt.String); err != nil {
			return results.Alert{}, fmt.Errorf("alert %d: drift: %w", a.ID, err)
		}
		if dLines.String != "" {
			d.Diff = strings.Split(dLines.String, "\n")
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
	var at sql.NullString
	if err := s.reader.QueryRowContext(ctx, nextAlertDue).Scan(&at); err != nil {
		return time.Time{}, false, fmt.Errorf("sqlite: next alert due: %w", err)
	}
	t, err := parseNullTime(at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("sqlite: next alert due: %w", err)
	}
	return t, at.Valid, nil
}

// MarkAlertDelivered records that the receiver accepted pending alert id
// at the given time: the alert becomes delivered, its delivery tries go
// up by one (the attempt that succeeded) and its last error, if any, is
// kept. It fails with an error wrapping ErrNotFound when no pending alert
// has that id (unknown, or already delivered, failed or skipped): a
// delivery's end is recorded once.
func (s *Store) MarkAlertDelivered(ctx context.Context, id int64, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("sqlite: mark alert %d delivered: zero delivery time", id)
	}
	return s.markAlert(ctx, id, "delivered", `UPDATE alerts
		SET state = 'delivered', delivered_at = ?, delivery_tries = delivery_tries + 1, next_attempt_at = NULL
		WHERE id = ? AND state = 'pending'`, results.FormatTime(at), id)
}

// MarkAlertRetry records a failed delivery of pending alert id, tries
// deliveries made so far, and lastErr: the alert stays pending and is due
// again at next. It fails with an error wrapping ErrNotFound when no
// pending alert has that id.
func (s *Store) MarkAlertRetry(ctx context.Context, id int64, tries int, next time.Time, lastErr string) error {
	if next.IsZero() || tries < 0 {
		return fmt.Errorf("sqlite: mark alert %d for retry: want tries >= 0 and a next attempt time, got %d and %v", id, tries, next)
	}
	return s.markAlert(ctx, id, "for retry", `UPDATE alerts
		SET delivery_tries = ?, next_attempt_at = ?, last_error = ?
		WHERE id = ? AND state = 'pending'`, tries, results.FormatTime(next), nullString(lastErr), id)
}

// MarkAlertFailed records that pending alert id will not be delivered,
// after tries deliveries, because of lastErr. It fails with an error
// wrapping ErrNotFound when no pending alert has that id.
func (s *Store) MarkAlertFailed(ctx context.Context, id int64, tries int, lastErr string) error {
	if tries < 0 {
		return fmt.Errorf("sqlite: mark alert %d failed: %d tries", id, tries)
	}
	return s.markAlert(ctx, id, "failed", `UPDATE alerts
		SET state = 'failed', delivery_tries = ?, next_attempt_at = NULL, last_error = ?
		WHERE id = ? AND state = 'pending'`, tries, nullString(lastErr), id)
}

// markAlert runs one outbox update of a pending alert.
func (s *Store) markAlert(ctx context.Context, id int64, what, query string, args ...any) error {
	res, err := s.writer.ExecContext(ctx, query, args...)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			err = fmt.Errorf("no pending alert with that id: %w", ErrNotFound)
		}
	}
	if err != nil {
		return fmt.Errorf("sqlite: mark alert %d %s: %w", id, what, err)
	}
	return nil
}

// pendingGroup lists a group's pending alerts, oldest first, through
// alerts_by_group.
const pendingGroup = `SELECT ` + alertColumns + `
` + alertFrom + `
WHERE a.group_key = ? AND a.state = 'pending'
ORDER BY a.created_at, a.id`

// groupDelivered is when a group's newest delivered alert was delivered.
const groupDelivered = `SELECT delivered_at FROM alerts
WHERE group_key = ? AND state = 'delivered'
ORDER BY id DESC LIMIT 1`

// PendingGroup returns the pending alerts whose group key is key, oldest
// first, due or not, each whole as DueAlerts returns it, and when the
// group's newest delivered alert was delivered (zero when none was, or
// retention pruned it). An unknown key has no alerts.
func (s *Store) PendingGroup(ctx context.Context, key string) (results.AlertGroup, error) {
	g := results.AlertGroup{Key: key}
	if key == "" {
		return g, errors.New("sqlite: pending group: empty group key")
	}
	var err error
	if g.Alerts, err = s.queryAlerts(ctx, pendingGroup, key); err != nil {
		return g, fmt.Errorf("sqlite: pending group %s: %w", key, err)
	}
	var at sql.NullString
	switch err := s.reader.QueryRowContext(ctx, groupDelivered, key).Scan(&at); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return g, fmt.Errorf("sqlite: pending group %s: %w", key, err)
	default:
		if g.LastDelivered, err = parseNullTime(at); err != nil {
			return g, fmt.Errorf("sqlite: pending group %s: %w", key, err)
		}
	}
	return g, nil
}
