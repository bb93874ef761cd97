package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/groupcommit"
)

// upsertShape counts a run's shape as seen. A shape's sample is the first
// one a run brought: a later run fills it only while it is NULL, so that
// what a reader got once stays what it gets.
const upsertShape = `INSERT INTO shapes (fingerprint, canonical, first_seen, last_seen, seen_count, sample)
VALUES ($1, $2, $3, $3, 1, $4)
ON CONFLICT (fingerprint) DO UPDATE SET
    first_seen = least(shapes.first_seen, excluded.first_seen),
    last_seen  = greatest(shapes.last_seen, excluded.last_seen),
    seen_count = shapes.seen_count + 1,
    sample     = coalesce(shapes.sample, excluded.sample)`

const insertResult = `INSERT INTO results (
    operation_id, probe, started_at, duration_ms, outcome, code, message, retryable,
    attempts, http_status, selected_count, validated_count, shape_fingerprint,
    consumer, consumer_version, rule_hash, response_sample, shape_baseline, shape_drift,
    kind, mcp_tool, mcp_server, tool_fingerprint, step, node, epoch, handover, location, trace_id
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29)`

const insertAttempt = `INSERT INTO attempts (
    operation_id, number, started_at, duration_ms, http_status, code, message, wait_ms, method, try, poll, step
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

const insertRunStep = `INSERT INTO run_steps (
    operation_id, position, step, outcome, code, message, started_at, duration_ms,
    polls, always, skipped, shape_fingerprint, shape_baseline, shape_drift
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`

const upsertShapeCount = `INSERT INTO shape_counts (probe, hour, fingerprint, runs, last_seen)
VALUES ($1, $2, $3, 1, $4)
ON CONFLICT (probe, hour, fingerprint) DO UPDATE SET
    runs      = shape_counts.runs + 1,
    last_seen = greatest(shape_counts.last_seen, excluded.last_seen)`

const insertDrift = `INSERT INTO drifts (probe, operation_id, detected_at, baseline, current, diff,
    kind, description_before, description_after, step)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
RETURNING id`

// upsertToolDefinition counts a tool definition as seen by its probe. The
// definition text of a fingerprint never changes, so the first one stays.
const upsertToolDefinition = `INSERT INTO tool_definitions (probe, fingerprint, definition, first_seen_at, last_seen_at)
VALUES ($1, $2, $3, $4, $4)
ON CONFLICT (probe, fingerprint) DO UPDATE SET
    first_seen_at = least(tool_definitions.first_seen_at, excluded.first_seen_at),
    last_seen_at  = greatest(tool_definitions.last_seen_at, excluded.last_seen_at)`

const upsertAlertState = `INSERT INTO alert_state (
    probe, consecutive_failures, failing_since, firing, last_notified_at, updated_at,
    notified, modes, announced, receivers, silenced_at, epoch,
    failing, consecutive_passes, window_bits, window_runs, flapping, flapping_since, verdict_changes,
    silent_locations
) VALUES ($1, $2, $3, $4, $5, $6, $7::text::jsonb, $8::text::jsonb, $9::text::jsonb, $10::text::jsonb, $11, $12,
    $13, $14, $15, $16, $17, $18, $19, $20)
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
    epoch                = excluded.epoch,
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
    target, response_excerpt, resolving, epoch, group_key, locations, decider, trace_id
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20::text::jsonb, $21::text::jsonb, $22, $23::text::jsonb, $24, $25, $26, $27, $28,
    $29::text::jsonb, $30, $31)
RETURNING id`

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
// stored, and leaves the stored result unchanged, with one exception: the
// retry of a RecordRun whose COMMIT succeeded but whose answer was lost
// (the connection dropped) succeeds. A stored result of the same node
// (not "") started at the same millisecond, with as many alerts as rec,
// is taken for rec's: RecordRun returns nil and sets rec.Alerts' IDs to
// the stored alerts', and writes nothing. A record that breaks the
// domain's invariants (a pass with an error, a failure without a code, a
// shape sample over results.ShapeSampleBytes, an alert of another probe or
// in a delivered state, a drift alert without a drift) is refused as a
// whole, not repaired.
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
// A fenced record (rec.Fence.Fenced()) is written only while its
// location's lease is held under its epoch: in the transaction that
// writes it, RecordRun reads the lease row FOR SHARE, so that a takeover
// waits for the COMMIT, and refuses the record, writing nothing of it,
// with an error wrapping results.ErrFenced when the row is missing or at
// another epoch. The refusal is permanent (Permanent). The result, the
// alert state and the alerts are stored with the epoch (results.epoch,
// alert_state.epoch, alerts.epoch); 0 for a record that claims none.
//
// A handover (rec.Handover) is stored as history only: the result, its
// attempts and steps, its shapes counted as seen and its share of
// probe_hours, with results.handover set, and nothing a leader decides
// from it: no drift, alert state, alert, shape profile or tool
// definition (rec.Alerts get no ID). An operation already stored is
// success, and is left as it is, whoever stored it. A record both fenced
// and a handover is refused, permanently.
//
// RecordRun returns nil only once the transaction holding the run has
// committed: a run reported recorded survives a crash of the process. Runs
// recorded at the same time share that transaction (group commit): the
// store's writer goroutine takes every run waiting, up to groupcommit.MaxBatch, and a
// run that fails (ErrDuplicate, a constraint) is rolled back alone, to a
// savepoint, while the others are committed. When the transaction fails
// as a whole (BEGIN, as when the server is down; COMMIT; a lost
// connection), every run in it fails with that error, classified as every
// store error is (so that a lost server stays a fault that may clear),
// and none is stored. The transaction runs under the store's own context,
// never a caller's.
//
// ctx bounds the wait for the writer: if ctx is done before the writer
// claims the run, RecordRun returns ctx's error (wrapped) and the run is
// never written. The writer claims a run right before writing it, once its
// transaction has begun; from then on RecordRun waits for the
// transaction's outcome whatever ctx does, so that it never reports a
// failure for a run that was committed. That wait is the time the batch's
// statements take, twice when a run of the batch failed and the batch is
// written again. A caller that must not lose a run during shutdown passes
// a context that is not cancelled with it.
//
// After Close has been called it fails with ErrClosed (wrapped).
func (s *Store) RecordRun(ctx context.Context, rec *results.RunRecord) error {
	if rec == nil {
		return errors.New("postgres: record: nil run record")
	}
	r := &rec.Result
	if err := errors.Join(rec.Validate(), validFence(rec)); err != nil {
		return fmt.Errorf("postgres: record %s: %w", r.OperationID, refuse(err))
	}
	ids, err := s.record(ctx, rec)
	if err != nil {
		return fmt.Errorf("postgres: record %s: %w", r.OperationID, markPermanent(err))
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
//
// The statements are pipelined: sent together and answered together, one
// round trip for a run without drift, two for one with drift (its
// alerts name the drift rows the first returns), instead of one per
// statement.
func writeRun(ctx context.Context, tx pgx.Tx, rec *results.RunRecord) ([]int64, error) {
	var p pipeline
	ids, err := queueRun(ctx, tx, &p, rec)
	if err != nil {
		return nil, err
	}
	if err := p.send(ctx, tx); err != nil {
		return nil, err
	}
	return ids, nil
}

// queueRun queues on p, after what p holds already, the statements that
// write rec, and returns the slice its alert ids are read into once p is
// sent. A handover, which reads whether its operation is stored, and a
// run with drifts, whose alerts name the drift rows, first send p with
// what it holds (and, for drifts, those rows) in tx; p is then left with
// the rest. On an error p has been sent in part: the caller rolls tx back.
func queueRun(ctx context.Context, tx pgx.Tx, p *pipeline, rec *results.RunRecord) ([]int64, error) {
	if rec.Handover {
		if err := p.send(ctx, tx); err != nil {
			return nil, err
		}
		*p = pipeline{}
		return nil, queueHandover(ctx, tx, p, rec)
	}
	r := &rec.Result
	queueResultRows(p, rec)

	// The drift rows by kind and step, for the shape_drift alerts to
	// link to.
	drifts := rec.Drifts()
	driftIDs := make(map[driftKey]*int64, len(drifts))
	for _, d := range drifts {
		id := new(int64)
		p.scan(fmt.Sprintf("%s drift", d.KindOrResponse()), []any{id}, insertDrift, d.Probe, d.OperationID,
			dbTime(d.DetectedAt), d.Baseline, d.Current, strings.Join(d.Diff, "\n"),
			string(d.KindOrResponse()), nullString(d.Before), nullString(d.After), nullString(d.Step))
		driftIDs[keyOf(d)] = id
	}
	if len(drifts) > 0 {
		if err := p.send(ctx, tx); err != nil {
			return nil, err
		}
		*p = pipeline{}
	}

	if st := rec.AlertState; st != nil {
		if err := queueAlertState(p, st, r.StartedAt, rec.Fence.Epoch); err != nil {
			return nil, err
		}
	}

	ids, err := queueAlerts(p, rec.Alerts, rec.Fence.Epoch, func(a *results.Alert) *int64 {
		if a.Kind != results.AlertDrift {
			return nil
		}
		// An alert without its drift is about the response's.
		key := driftKey{kind: results.DriftResponse}
		if a.Drift != nil {
			key = keyOf(a.Drift)
		}
		return driftIDs[key]
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// queueAlertState queues on p the upsert of st, updated at at, stored
// with epoch.
func queueAlertState(p *pipeline, st *results.AlertState, at time.Time, epoch int64) error {
	notified, err1 := nullMode(st.Notified)
	modes, err2 := nullModes(st.Modes)
	announced, err3 := nullModes(st.Announced)
	receivers, err4 := nullStrings(st.Receivers)
	silent, err5 := results.EncodeSilentLocations(st.SilentLocations)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return fmt.Errorf("alert state: %w", err)
	}
	var silentCol *string
	if silent != "" {
		silentCol = &silent
	}
	p.exec("alert state", upsertAlertState, st.Probe, st.ConsecutiveFailures,
		nullTime(st.FailingSince), st.Firing, nullTime(st.LastNotifiedAt), dbTime(at),
		notified, modes, announced, receivers, nullTime(st.SilencedAt), epoch,
		st.Failing, st.ConsecutivePasses, int64(st.Window), st.WindowRuns, st.Flapping, nullTime(st.FlappingSince), dbTimes(st.VerdictChanges),
		silentCol)
	return nil
}

// queueAlerts queues on p the insert of each of alerts, stored with
// epoch and linked to the drift row link returns (nil: none), and returns
// the slice their ids are read into once p is sent.
func queueAlerts(p *pipeline, alerts []results.Alert, epoch int64, link func(*results.Alert) *int64) ([]int64, error) {
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
		p.scan(fmt.Sprintf("alert %d (%s)", i, a.Kind), []any{&ids[i]}, insertAlert,
			string(a.Kind), a.Probe, dbTime(a.CreatedAt), a.OperationID, string(a.Outcome),
			nullString(string(a.Code)), nullString(a.Message), a.Attempts, a.Duration.Milliseconds(),
			nullInt(a.HTTPStatus), a.Consumer.Name, a.Consumer.Version, a.Consumer.RuleHash,
			nullTime(a.FailingSince), link(a), string(a.State), a.DeliveryTries, nullTime(a.NextAttemptAt), nullString(a.LastError),
			previous, modes, nullString(a.Receiver), labels,
			nullString(a.Target), nullString(a.ResponseExcerpt), a.Resolving, epoch, nullString(a.GroupKey),
			nullString(locations), nullString(a.Decider), nullString(a.TraceID))
	}
	return ids, nil
}

// queueHandover queues on p what a handover keeps of rec (see RecordRun):
// its result rows, unless the operation is stored already, which it reads
// in tx at once.
func queueHandover(ctx context.Context, tx pgx.Tx, p *pipeline, rec *results.RunRecord) error {
	var stored bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM results WHERE operation_id = $1)`,
		rec.Result.OperationID).Scan(&stored)
	if err != nil {
		return fmt.Errorf("handover: %w", err)
	}
	if stored {
		return nil
	}
	queueResultRows(p, rec)
	return nil
}

// driftKey tells a run record's drifts apart: at most one per kind, and
// for a steps probe one response drift per step.
type driftKey struct {
	kind results.DriftKind
	step string
}

func keyOf(d *results.Drift) driftKey { return driftKey{kind: d.KindOrResponse(), step: d.Step} }

// queueShape counts shape as seen, in shapes and in key's hourly
// shape_counts, and saves its profile update, if any, under key, unless
// the run is a handover's: a profile is a leader's decision.
func queueShape(p *pipeline, key string, sh *results.Shape, at time.Time, handover bool) {
	startedAt := dbTime(at)
	p.exec("shape "+sh.Fingerprint, upsertShape, sh.Fingerprint, sh.Canonical, startedAt, nullString(sh.Sample))
	p.exec("shape count "+sh.Fingerprint, upsertShapeCount, key, hourOf(at), sh.Fingerprint, startedAt)
	if !handover {
		queueProfile(p, key, sh, at)
	}
}

// queueSteps writes the run_steps rows of a steps probe's run, with each
// step's shape under its step key.
func queueSteps(p *pipeline, r *results.Result, handover bool) {
	for i := range r.Steps {
		st := &r.Steps[i]
		var fingerprint, baseline, drift, code, message *string
		if st.Shape != nil {
			fingerprint = nullString(st.Shape.Fingerprint)
			if len(st.Shape.Drift) > 0 {
				baseline = nullString(st.Shape.Baseline)
				drift = ptr(strings.Join(st.Shape.Drift, "\n"))
			}
			queueShape(p, results.StepKey(r.Probe, st.Name), st.Shape, r.StartedAt, handover)
		}
		if st.Error != nil {
			code, message = ptr(string(st.Error.Code)), ptr(st.Error.Message)
		}
		p.exec("step "+st.Name, insertRunStep, r.OperationID, i+1, st.Name, string(st.Outcome),
			code, message, dbTime(st.StartedAt), st.Duration.Milliseconds(),
			st.Polls, st.Always, st.Skipped, fingerprint, baseline, drift)
	}
}

// queueResultRows writes rec's result, its attempts, its steps, its shape
// counts and its share of its probe's hour in probe_hours, tagged with
// the epoch rec claims. Its tool definition and shape profile updates are
// written too, unless rec is a handover.
func queueResultRows(p *pipeline, rec *results.RunRecord) {
	r := &rec.Result
	startedAt := dbTime(r.StartedAt)
	var fingerprint, baseline, drift *string
	if r.Shape != nil {
		fingerprint = ptr(r.Shape.Fingerprint)
		if len(r.Shape.Drift) > 0 {
			baseline = nullString(r.Shape.Baseline)
			drift = ptr(strings.Join(r.Shape.Drift, "\n"))
		}
		queueShape(p, r.Probe, r.Shape, r.StartedAt, rec.Handover)
	}

	var toolFingerprint *string
	if t := r.Tool; t != nil {
		toolFingerprint = nullString(t.Fingerprint)
		if t.Canonical != "" && !rec.Handover {
			p.exec("tool definition "+t.Fingerprint, upsertToolDefinition, r.Probe, t.Fingerprint, t.Canonical, startedAt)
		}
	}

	var code, message, sample *string
	retryable := false
	if r.Error != nil {
		code, message = ptr(string(r.Error.Code)), ptr(r.Error.Message)
		retryable = r.Error.Retryable
		// No response, no body: NULL rather than an empty sample, so that
		// "the body was empty" stays distinguishable.
		if r.HTTPStatus != 0 || r.ResponseSample != "" {
			sample = ptr(r.ResponseSample)
		}
	}
	var mcpTool, mcpServer *string
	if r.MCP != nil {
		mcpTool, mcpServer = ptr(r.MCP.Tool), ptr(r.MCP.Server)
	}
	p.result(insertResult,
		r.OperationID, r.Probe, startedAt, r.Duration.Milliseconds(), string(r.Outcome),
		code, message, retryable,
		r.AttemptCount(), nullInt(r.HTTPStatus), r.SelectedCount, r.ValidatedCount, fingerprint,
		r.Consumer.Name, r.Consumer.Version, r.Consumer.RuleHash, sample, baseline, drift,
		string(r.EffectiveKind()), mcpTool, mcpServer, toolFingerprint, nullString(r.Step), nullString(r.Node),
		rec.Fence.Epoch, rec.Handover, results.LocationOrDefault(r.Location), nullString(r.TraceID))
	queueProbeHour(p, r)
	queueSteps(p, r, rec.Handover)
	for _, a := range r.Attempts {
		p.exec(fmt.Sprintf("attempt %d", a.Number), insertAttempt,
			r.OperationID, a.Number, dbTime(a.StartedAt), a.Duration.Milliseconds(),
			nullInt(a.HTTPStatus), nullString(string(a.Code)), nullString(a.Message), a.Wait.Milliseconds(),
			nullString(a.Method), nullInt(a.Try), nullInt(a.Poll), nullString(a.Step))
	}
}

// pipeline is statements queued to be sent to the server together, in a
// transaction, and answered in order.
type pipeline struct {
	batch pgx.Batch
	steps []pipelineStep
}

// pipelineStep says what one queued statement writes, for its error, and
// where its one returned row goes.
type pipelineStep struct {
	what   string
	dest   []any // nil: no row returned
	result bool  // the results row: a unique violation is ErrDuplicate
}

func (p *pipeline) exec(what, sql string, args ...any) {
	p.batch.Queue(sql, args...)
	p.steps = append(p.steps, pipelineStep{what: what})
}

func (p *pipeline) scan(what string, dest []any, sql string, args ...any) {
	p.batch.Queue(sql, args...)
	p.steps = append(p.steps, pipelineStep{what: what, dest: dest})
}

func (p *pipeline) result(sql string, args ...any) {
	p.batch.Queue(sql, args...)
	p.steps = append(p.steps, pipelineStep{result: true})
}

// send sends the queued statements in tx and reads their answers, in
// order. It returns the first statement's error, after which Postgres
// has aborted tx.
func (p *pipeline) send(ctx context.Context, tx pgx.Tx) (err error) {
	if len(p.steps) == 0 {
		return nil
	}
	br := tx.SendBatch(ctx, &p.batch)
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	for _, st := range p.steps {
		if st.dest != nil {
			err = br.QueryRow().Scan(st.dest...)
		} else {
			_, err = br.Exec()
		}
		switch {
		case err == nil:
		case st.result && uniqueViolation(err, "results_operation_id_key"):
			return ErrDuplicate
		case st.result:
			return err
		default:
			return fmt.Errorf("%s: %w", st.what, err)
		}
	}
	return nil
}

// nullInt stores 0, which means "none" (no response, no try), as NULL.
func nullInt(v int) *int64 {
	if v == 0 {
		return nil
	}
	n := int64(v)
	return &n
}

// nullString stores "" as NULL.
func nullString(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

func ptr[T any](v T) *T { return &v }
