package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/groupcommit"
)

// upsertShape counts a run's shape as seen. A shape's sample is the first
// one a run brought: a later run fills it only while it is NULL, so that
// what a reader got once stays what it gets.
const upsertShape = `INSERT INTO shapes (fingerprint, canonical, first_seen, last_seen, seen_count, sample)
VALUES (?, ?, ?, ?, 1, ?)
ON CONFLICT (fingerprint) DO UPDATE SET
    first_seen = min(first_seen, excluded.first_seen),
    last_seen  = max(last_seen, excluded.last_seen),
    seen_count = seen_count + 1,
    sample     = coalesce(shapes.sample, excluded.sample)`

const insertResult = `INSERT INTO results (
    operation_id, probe, started_at, duration_ms, outcome, code, message, retryable,
    attempts, http_status, selected_count, validated_count, shape_fingerprint,
    consumer, consumer_version, rule_hash, response_sample, shape_baseline, shape_drift,
    kind, mcp_tool, mcp_server, tool_fingerprint, step, node, location, trace_id
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const insertAttempt = `INSERT INTO attempts (
    operation_id, number, started_at, duration_ms, http_status, code, message, wait_ms, method, try, poll, step
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const insertRunStep = `INSERT INTO run_steps (
    operation_id, position, step, outcome, code, message, started_at, duration_ms,
    polls, always, skipped, shape_fingerprint, shape_baseline, shape_drift
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const upsertShapeCount = `INSERT INTO shape_counts (probe, hour, fingerprint, runs, last_seen)
VALUES (?, ?, ?, 1, ?)
ON CONFLICT (probe, hour, fingerprint) DO UPDATE SET
    runs      = runs + 1,
    last_seen = max(last_seen, excluded.last_seen)`

const insertDrift = `INSERT INTO drifts (probe, operation_id, detected_at, baseline, current, diff,
    kind, description_before, description_after, step)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// upsertToolDefinition counts a tool definition as seen by its probe. The
// definition text of a fingerprint never changes, so the first one stays.
const upsertToolDefinition = `INSERT INTO tool_definitions (probe, fingerprint, definition, first_seen_at, last_seen_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (probe, fingerprint) DO UPDATE SET
    first_seen_at = min(first_seen_at, excluded.first_seen_at),
    last_seen_at  = max(last_seen_at, excluded.last_seen_at)`

const upsertAlertState = `INSERT INTO alert_state (
    probe, consecutive_failures, failing_since, firing, last_notified_at, updated_at,
    notified, modes, announced, receivers, silenced_at,
    failing, consecutive_passes, window_bits, window_runs, flapping, flapping_since, verdict_changes,
    silent_locations
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (probe) DO UPDATE SET
    consecutive_failures = excluded.consecutive_failures,
    failing_since        = excluded.failing_since,
    firing               = excluded.firing,
    last_notified_at     = excluded.last_notified_at,
    updated_at           = excluded.updated_at,
    notified             = excluded.notified,
    modes                = excluded.modes,
    announced            = excluded.announced,
    receivers            = excluded.receivers,
    silenced_at          = excluded.silenced_at,
    failing              = excluded.failing,
    consecutive_passes   = excluded.consecutive_passes,
    window_bits          = excluded.window_bits,
    window_runs          = excluded.window_runs,
    flapping             = excluded.flapping,
    flapping_since       = excluded.flapping_since,
    verdict_changes      = excluded.verdict_changes,
    silent_locations     = excluded.silent_locations`

const insertAlert = `INSERT INTO alerts (
    kind, probe, created_at, operation_id, outcome, code, message, attempts, duration_ms,
    http_status, consumer, consumer_version, rule_hash, failing_since, drift_id,
    state, delivery_tries, next_attempt_at, last_error, previous_mode, modes, receiver, labels,
    target, response_excerpt, resolving, group_key, locations, decider, trace_id
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// Record stores r alone: RecordRun with no drift, alert state or alerts.
func (s *Store) Record(ctx context.Context, r results.Result) error {
	return s.RecordRun(ctx, &results.RunRecord{Result: r})
}

// RecordRun stores everything one operation changes in one transaction:
// the result with every attempt, the run added to its probe's hour in
// probe_hours (behind Stats), its shape counted as seen (in shapes and
// in the hourly shape_counts a probe's first profile is built from), the drift if any, the
// probe's alert state if not nil, and every alert, queued in the outbox in
// the state it has (pending or skipped). A shape_drift alert is linked to
// rec.Drift, stored in the same transaction. Either all of it is stored or
// none of it; on success the ID of each of rec.Alerts is set, and on
// failure none is.
//
// It fails with ErrDuplicate (wrapped) if the operation id is already
// stored, and leaves the stored result unchanged. A record that breaks the
// domain's invariants (a pass with an error, a failure without a code, a
// shape sample over results.ShapeSampleBytes, an alert of another probe or
// in a delivered state, a drift alert without a drift) is refused as a
// whole, not repaired.
//
// A fenced record (rec.Fence.Fenced()) or a handover (rec.Handover) is
// refused, permanently, with ErrFleetRecord (wrapped): only an instance of
// a fleet writes them, and a fleet shares a Postgres store, not a SQLite
// file. Storing one as if it were neither would drop what it asks for
// (its lease checked, or only its history kept) without a word.
//
// Durations are stored in whole milliseconds and times with millisecond
// precision. The response sample is stored only for runs that did not pass
// and received a response. Shape.Sample is stored with the shape, when the
// shape has none yet ("" stores nothing), and never replaces one.
// Shape.Baseline and Shape.Drift are stored with the result (whether the
// answer drifted from its probe's profile), and rec.Drift, the drift event,
// on its own. Shape.Profile, when set, replaces the probe's stored profile
// unless the probe was reset since the profile's ResetAt (see
// ResetProfile).
//
// RecordRun returns nil only once the transaction holding the run has
// committed: a run reported recorded survives a crash of the process. Runs
// recorded at the same time share that transaction (group commit): the
// store's writer goroutine takes every run waiting, up to groupcommit.MaxBatch, and a
// run that fails (ErrDuplicate, a constraint) is rolled back alone, to a
// savepoint, while the others are committed. When the transaction fails
// as a whole (BEGIN, as when another process holds the write lock past the
// busy timeout; COMMIT; an error after which SQLite rolls back everything,
// as a full disk may), every run in it fails with that error, classified
// as every store error is (so that a lock, a full disk or an I/O error
// stays a fault that may clear), and none is stored. The transaction runs
// under the store's own context, never a caller's.
//
// ctx bounds the wait for the writer: if ctx is done before the writer
// claims the run, RecordRun returns ctx's error (wrapped) and the run is
// never written. The writer claims a run right before writing it, once its
// transaction holds the write lock; from then on RecordRun waits for the
// transaction's outcome whatever ctx does, so that it never reports a
// failure for a run that was committed. That wait is the time the batch's
// statements take, plus, when a run of the batch failed and the batch is
// written again, at most the busy timeout (5 s) for the write lock. A
// caller that must not lose a run during shutdown passes a context that is
// not cancelled with it.
//
// After Close has been called it fails with ErrClosed (wrapped).
func (s *Store) RecordRun(ctx context.Context, rec *results.RunRecord) error {
	if rec == nil {
		return errors.New("sqlite: record: nil run record")
	}
	r := &rec.Result
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("sqlite: record %s: %w", r.OperationID, refuse(err))
	}
	if rec.Fence.Fenced() || rec.Handover {
		return fmt.Errorf("sqlite: record %s: %w", r.OperationID,
			refuse(fmt.Errorf("%w (fence %q epoch %d, handover %t)", ErrFleetRecord, rec.Fence.Location, rec.Fence.Epoch, rec.Handover)))
	}
	ids, err := s.record(ctx, rec)
	if err != nil {
		return fmt.Errorf("sqlite: record %s: %w", r.OperationID, markPermanent(err))
	}
	for i, id := range ids {
		rec.Alerts[i].ID = id
	}
	return nil
}

// record hands rec to the writer goroutine and returns the new alert ids,
// in the order of rec.Alerts, once the run is committed.
func (s *Store) record(ctx context.Context, rec *results.RunRecord) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req := groupcommit.NewRequest(rec)
	if err := s.gc.Enqueue(req); err != nil {
		return nil, err
	}
	return req.Wait(ctx)
}

// writeRun writes everything RecordRun stores of rec in tx and returns the
// new alert ids, in the order of rec.Alerts. On an error, some of it may
// have been written: the caller rolls it back.
func writeRun(ctx context.Context, tx *sql.Tx, rec *results.RunRecord) ([]int64, error) {
	r := &rec.Result
	if err := insertResultRows(ctx, tx, r); err != nil {
		return nil, err
	}

	// The drift rows by kind and step, for the shape_drift alerts to
	// link to.
	driftIDs := map[driftKey]sql.NullInt64{}
	for _, d := range rec.Drifts() {
		res, err := tx.ExecContext(ctx, insertDrift, d.Probe, d.OperationID,
			results.FormatTime(d.DetectedAt), d.Baseline, d.Current, strings.Join(d.Diff, "\n"),
			string(d.KindOrResponse()), nullString(d.Before), nullString(d.After), nullString(d.Step))
		if err != nil {
			return nil, fmt.Errorf("%s drift: %w", d.KindOrResponse(), err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, fmt.Errorf("%s drift: %w", d.KindOrResponse(), err)
		}
		driftIDs[keyOf(d)] = sql.NullInt64{Int64: id, Valid: true}
	}

	if st := rec.AlertState; st != nil {
		if err := writeAlertState(ctx, tx, st, r.StartedAt); err != nil {
			return nil, err
		}
	}

	return writeAlerts(ctx, tx, rec.Alerts, func(a *results.Alert) sql.NullInt64 {
		if a.Kind != results.AlertDrift {
			return sql.NullInt64{}
		}
		// An alert without its drift is about the response's.
		key := driftKey{kind: results.DriftResponse}
		if a.Drift != nil {
			key = keyOf(a.Drift)
		}
		return driftIDs[key]
	})
}

// writeAlertState writes st in tx, updated at at.
func writeAlertState(ctx context.Context, tx *sql.Tx, st *results.AlertState, at time.Time) error {
	notified, err1 := nullMode(st.Notified)
	modes, err2 := nullModes(st.Modes)
	announced, err3 := nullModes(st.Announced)
	receivers, err4 := nullStrings(st.Receivers)
	changes, err5 := nullTimes(st.VerdictChanges)
	silent, err6 := results.EncodeSilentLocations(st.SilentLocations)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return fmt.Errorf("alert state: %w", err)
	}
	_, err := tx.ExecContext(ctx, upsertAlertState, st.Probe, st.ConsecutiveFailures,
		nullTime(st.FailingSince), st.Firing, nullTime(st.LastNotifiedAt), results.FormatTime(at),
		notified, modes, announced, receivers, nullTime(st.SilencedAt),
		st.Failing, st.ConsecutivePasses, int64(st.Window), st.WindowRuns, st.Flapping, nullTime(st.FlappingSince), changes,
		sql.NullString{String: silent, Valid: silent != ""})
	if err != nil {
		return fmt.Errorf("alert state: %w", err)
	}
	return nil
}

// writeAlerts inserts alerts in tx, each linked to the drift row link
// returns, and returns their ids in order.
func writeAlerts(ctx context.Context, tx *sql.Tx, alerts []results.Alert, link func(*results.Alert) sql.NullInt64) ([]int64, error) {
	ids := make([]int64, len(alerts))
	for i := range alerts {
		a := &alerts[i]
		previous, err1 := nullMode(a.Previous)
		modes, err2 := nullModes(a.Modes)
		labels, err3 := nullLabels(a.Labels)
		locations, err4 := results.EncodeLocations(a.Locations)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, fmt.Errorf("alert %d (%s): %w", i, a.Kind, err)
		}
		res, err := tx.ExecContext(ctx, insertAlert,
			string(a.Kind), a.Probe, results.FormatTime(a.CreatedAt), a.OperationID, string(a.Outcome),
			nullString(string(a.Code)), nullString(a.Message), a.Attempts, a.Duration.Milliseconds(),
			nullInt(a.HTTPStatus), a.Consumer.Name, a.Consumer.Version, a.Consumer.RuleHash,
			nullTime(a.FailingSince), link(a), string(a.State), a.DeliveryTries, nullTime(a.NextAttemptAt), nullString(a.LastError),
			previous, modes, nullString(a.Receiver), labels,
			nullString(a.Target), nullString(a.ResponseExcerpt), a.Resolving, nullString(a.GroupKey),
			nullString(locations), nullString(a.Decider), nullString(a.TraceID))
		if err != nil {
			return nil, fmt.Errorf("alert %d (%s): %w", i, a.Kind, err)
		}
		if ids[i], err = res.LastInsertId(); err != nil {
			return nil, fmt.Errorf("alert %d (%s): %w", i, a.Kind, err)
		}
	}
	return ids, nil
}

// RecordDecision commits a fleet-wide decision (SPEC §13) about one
// probe: its alert state, when set, and its alerts, in one transaction.
// A SQLite file has no leases and so no decider: a fenced record is
// refused (ErrFleetRecord), as a fenced run is. On success each of
// rec.Alerts gets its ID.
func (s *Store) RecordDecision(ctx context.Context, rec *results.DecisionRecord) (err error) {
	if rec == nil {
		return errors.New("sqlite: record decision: nil record")
	}
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("sqlite: record decision about %s: %w", rec.Probe, refuse(err))
	}
	if rec.Fence.Fenced() {
		return fmt.Errorf("sqlite: record decision about %s: %w", rec.Probe,
			refuse(fmt.Errorf("%w (fence %q epoch %d)", ErrFleetRecord, rec.Fence.Location, rec.Fence.Epoch)))
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("sqlite: record decision about %s: %w", rec.Probe, markPermanent(ctxErr(ctx, err)))
		}
	}()
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if st := rec.AlertState; st != nil {
		if err := writeAlertState(ctx, tx, st, rec.At); err != nil {
			return err
		}
	}
	ids, err := writeAlerts(ctx, tx, rec.Alerts, func(*results.Alert) sql.NullInt64 { return sql.NullInt64{} })
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for i, id := range ids {
		rec.Alerts[i].ID = id
	}
	return nil
}

// driftKey tells a run record's drifts apart: at most one per kind, and
// for a steps probe one response drift per step.
type driftKey struct {
	kind results.DriftKind
	step string
}

func keyOf(d *results.Drift) driftKey { return driftKey{kind: d.KindOrResponse(), step: d.Step} }

// insertShape counts shape as seen, in shapes and in key's hourly
// shape_counts, and saves its profile update, if any, under key.
func insertShape(ctx context.Context, tx *sql.Tx, key string, sh *results.Shape, at time.Time) error {
	startedAt := results.FormatTime(at)
	if _, err := tx.ExecContext(ctx, upsertShape,
		sh.Fingerprint, sh.Canonical, startedAt, startedAt, nullString(sh.Sample)); err != nil {
		return fmt.Errorf("shape %s: %w", sh.Fingerprint, err)
	}
	if _, err := tx.ExecContext(ctx, upsertShapeCount, key, hourOf(at), sh.Fingerprint, startedAt); err != nil {
		return fmt.Errorf("shape count %s: %w", sh.Fingerprint, err)
	}
	if err := writeProfile(ctx, tx, key, sh, at); err != nil {
		return fmt.Errorf("shape profile: %w", err)
	}
	return nil
}

// insertSteps writes the run_steps rows of a steps probe's run, with each
// step's shape under its step key.
func insertSteps(ctx context.Context, tx *sql.Tx, r *results.Result) error {
	for i := range r.Steps {
		st := &r.Steps[i]
		var fingerprint, baseline, drift, code, message sql.NullString
		if st.Shape != nil {
			fingerprint = nullString(st.Shape.Fingerprint)
			if len(st.Shape.Drift) > 0 {
				baseline = nullString(st.Shape.Baseline)
				drift = sql.NullString{String: strings.Join(st.Shape.Drift, "\n"), Valid: true}
			}
			if err := insertShape(ctx, tx, results.StepKey(r.Probe, st.Name), st.Shape, r.StartedAt); err != nil {
				return fmt.Errorf("step %s: %w", st.Name, err)
			}
		}
		if st.Error != nil {
			code = sql.NullString{String: string(st.Error.Code), Valid: true}
			message = sql.NullString{String: st.Error.Message, Valid: true}
		}
		if _, err := tx.ExecContext(ctx, insertRunStep, r.OperationID, i+1, st.Name, string(st.Outcome),
			code, message, results.FormatTime(st.StartedAt), st.Duration.Milliseconds(),
			st.Polls, st.Always, st.Skipped, fingerprint, baseline, drift); err != nil {
			return fmt.Errorf("step %s: %w", st.Name, err)
		}
	}
	return nil
}

// insertResultRows writes r, its attempts, its steps, its shape counts and
// its share of its probe's hour in probe_hours in tx.
func insertResultRows(ctx context.Context, tx *sql.Tx, r *results.Result) error {
	startedAt := results.FormatTime(r.StartedAt)
	var fingerprint, baseline, drift sql.NullString
	if r.Shape != nil {
		fingerprint = sql.NullString{String: r.Shape.Fingerprint, Valid: true}
		if len(r.Shape.Drift) > 0 {
			baseline = nullString(r.Shape.Baseline)
			drift = sql.NullString{String: strings.Join(r.Shape.Drift, "\n"), Valid: true}
		}
		if err := insertShape(ctx, tx, r.Probe, r.Shape, r.StartedAt); err != nil {
			return err
		}
	}

	var toolFingerprint sql.NullString
	if t := r.Tool; t != nil {
		toolFingerprint = nullString(t.Fingerprint)
		if t.Canonical != "" {
			if _, err := tx.ExecContext(ctx, upsertToolDefinition,
				r.Probe, t.Fingerprint, t.Canonical, startedAt, startedAt); err != nil {
				return fmt.Errorf("tool definition %s: %w", t.Fingerprint, err)
			}
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
	var mcpTool, mcpServer sql.NullString
	if r.MCP != nil {
		mcpTool = sql.NullString{String: r.MCP.Tool, Valid: true}
		mcpServer = sql.NullString{String: r.MCP.Server, Valid: true}
	}
	_, err := tx.ExecContext(ctx, insertResult,
		r.OperationID, r.Probe, startedAt, r.Duration.Milliseconds(), string(r.Outcome),
		code, message, retryable,
		r.AttemptCount(), nullInt(r.HTTPStatus), r.SelectedCount, r.ValidatedCount, fingerprint,
		r.Consumer.Name, r.Consumer.Version, r.Consumer.RuleHash, sample, baseline, drift,
		string(r.EffectiveKind()), mcpTool, mcpServer, toolFingerprint, nullString(r.Step), nullString(r.Node), results.LocationOrDefault(r.Location),
		nullString(r.TraceID))
	if err != nil {
		var se sqlite3.Error
		if errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique {
			return ErrDuplicate
		}
		return err
	}
	if err := addProbeHour(ctx, tx, r); err != nil {
		return fmt.Errorf("probe hour: %w", err)
	}
	if err := insertSteps(ctx, tx, r); err != nil {
		return err
	}

	for _, a := range r.Attempts {
		_, err := tx.ExecContext(ctx, insertAttempt,
			r.OperationID, a.Number, results.FormatTime(a.StartedAt), a.Duration.Milliseconds(),
			nullInt(a.HTTPStatus), nullString(string(a.Code)), nullString(a.Message), a.Wait.Milliseconds(),
			nullString(a.Method), nullInt(a.Try), nullInt(a.Poll), nullString(a.Step))
		if err != nil {
			return fmt.Errorf("attempt %d: %w", a.Number, err)
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

// nullTime stores the zero time, which means "never" or "does not apply",
// as NULL.
func nullTime(t time.Time) sql.NullString {
	if t.IsZero() {
		return sql.NullString{}
	}
	return sql.NullString{String: results.FormatTime(t), Valid: true}
}

// hourOf is the shape_counts bucket of t: its UTC hour, spelt as the first
// 13 characters of results.FormatTime(t).
func hourOf(t time.Time) string { return t.UTC().Format("2006-01-02T15") }
