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

// resultColumns and resultFrom read results rows as scanResult expects
// them, with the canonical text of their shape.
const resultColumns = `r.operation_id, r.probe, r.started_at, r.duration_ms, r.outcome, r.code,
    r.message, r.retryable, r.http_status, r.selected_count, r.validated_count,
    r.shape_fingerprint, s.canonical, r.consumer, r.consumer_version, r.rule_hash,
    r.response_sample, r.shape_baseline, r.shape_drift, r.kind, r.mcp_tool, r.mcp_server, r.tool_fingerprint, r.step, r.node, r.location, r.trace_id,
    (SELECT td.definition FROM tool_definitions td WHERE td.probe = r.probe AND td.fingerprint = r.tool_fingerprint)`

const resultFrom = `FROM results r LEFT JOIN shapes s ON s.fingerprint = r.shape_fingerprint`

const selectResult = `SELECT ` + resultColumns + `
` + resultFrom + `
WHERE r.operation_id = ?`

// attemptColumns are read by scanAttempt.
const attemptColumns = `number, started_at, duration_ms, http_status, code, message, wait_ms, method, try, poll, step`

const selectAttempts = `SELECT ` + attemptColumns + `
FROM attempts WHERE operation_id = ? ORDER BY number`

// Result returns the stored result of one operation with its attempts and
// shape, or an error wrapping ErrNotFound when there is none. What comes
// back is what Record stored: durations in whole milliseconds, times in UTC
// to the millisecond, and the shape with the drift lines it was recorded
// with.
func (s *Store) Result(ctx context.Context, operationID string) (results.Result, error) {
	r, err := s.result(ctx, operationID)
	if err != nil {
		return results.Result{}, fmt.Errorf("sqlite: result %s: %w", operationID, err)
	}
	return r, nil
}

func (s *Store) result(ctx context.Context, operationID string) (results.Result, error) {
	// One read transaction: the row and its attempts come from one snapshot
	// even if retention deletes the operation meanwhile.
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return results.Result{}, err
	}
	defer tx.Rollback()

	r, err := scanResult(tx.QueryRowContext(ctx, selectResult, operationID))
	if errors.Is(err, sql.ErrNoRows) {
		return results.Result{}, ErrNotFound
	}
	if err != nil {
		return results.Result{}, err
	}

	rows, err := tx.QueryContext(ctx, selectAttempts, operationID)
	if err != nil {
		return results.Result{}, fmt.Errorf("attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return results.Result{}, fmt.Errorf("attempts: %w", err)
		}
		r.Attempts = append(r.Attempts, a)
	}
	if err := rows.Err(); err != nil {
		return results.Result{}, fmt.Errorf("attempts: %w", err)
	}
	rows.Close()
	rs := []results.Result{r}
	if err := loadSteps(ctx, tx, rs); err != nil {
		return results.Result{}, fmt.Errorf("steps: %w", err)
	}
	return rs[0], nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanResult reads one row of resultColumns. Attempts are left nil.
func scanResult(row scanner) (results.Result, error) {
	var (
		r                      results.Result
		startedAt              string
		durationMS             int64
		outcome                string
		code, message, sample  sql.NullString
		fingerprint, canonical sql.NullString
		baseline, drift        sql.NullString
		kind                   string
		mcpTool, mcpServer     sql.NullString
		tool, definition       sql.NullString
		step, node, location   sql.NullString
		traceID                sql.NullString
		retryable              bool
		httpStatus             sql.NullInt64
	)
	err := row.Scan(&r.OperationID, &r.Probe, &startedAt, &durationMS, &outcome, &code, &message, &retryable,
		&httpStatus, &r.SelectedCount, &r.ValidatedCount, &fingerprint, &canonical,
		&r.Consumer.Name, &r.Consumer.Version, &r.Consumer.RuleHash, &sample, &baseline, &drift,
		&kind, &mcpTool, &mcpServer, &tool, &step, &node, &location, &traceID, &definition)
	if err != nil {
		return results.Result{}, err
	}
	if r.StartedAt, err = parseTime(startedAt); err != nil {
		return results.Result{}, fmt.Errorf("result %s: %w", r.OperationID, err)
	}
	r.Duration = time.Duration(durationMS) * time.Millisecond
	r.Outcome = results.Outcome(outcome)
	r.Kind = results.ProbeKind(kind)
	r.Location = results.ResultLocation(location.String)
	r.Step, r.Node, r.TraceID = step.String, node.String, traceID.String
	if mcpTool.Valid {
		r.MCP = &results.MCPTarget{Tool: mcpTool.String, Server: mcpServer.String}
	}
	r.HTTPStatus = int(httpStatus.Int64)
	r.ResponseSample = sample.String
	if code.Valid {
		r.Error = &results.Error{Code: results.Code(code.String), Message: message.String, Retryable: retryable}
	}
	if fingerprint.Valid {
		r.Shape = &results.Shape{Fingerprint: fingerprint.String, Canonical: canonical.String}
		if drift.Valid {
			r.Shape.Baseline, r.Shape.Drift = baseline.String, strings.Split(drift.String, "\n")
		}
	}
	if tool.Valid {
		r.Tool = &results.ToolDefinition{Fingerprint: tool.String, Canonical: definition.String}
	}
	return r, nil
}

// scanAttempt reads one row of attemptColumns, after any columns whose
// destinations are given in before.
func scanAttempt(row scanner, before ...any) (results.Attempt, error) {
	var (
		a                  results.Attempt
		started            string
		durationMS, waitMS int64
		status             sql.NullInt64
		code, message      sql.NullString
		method             sql.NullString
		try, poll          sql.NullInt64
		step               sql.NullString
	)
	dest := append(before, &a.Number, &started, &durationMS, &status, &code, &message, &waitMS, &method, &try, &poll, &step)
	if err := row.Scan(dest...); err != nil {
		return results.Attempt{}, err
	}
	var err error
	if a.StartedAt, err = parseTime(started); err != nil {
		return results.Attempt{}, fmt.Errorf("attempt %d: %w", a.Number, err)
	}
	a.Duration = time.Duration(durationMS) * time.Millisecond
	a.Wait = time.Duration(waitMS) * time.Millisecond
	a.HTTPStatus = int(status.Int64)
	a.Code = results.Code(code.String)
	a.Message = message.String
	a.Method = method.String
	a.Step = step.String
	// NULL (a row from before migration 0013, or recorded without one)
	// is Try 0: the row is its own try.
	a.Try = int(try.Int64)
	a.Poll = int(poll.Int64)
	return a, nil
}

// stepsOf reads the run_steps rows of n results, ordered by result and
// position, each with the canonical text of its shape.
func stepsOf(n int) string {
	return `SELECT st.operation_id, st.step, st.outcome, st.code, st.message, st.started_at,
    st.duration_ms, st.polls, st.always, st.skipped, st.shape_fingerprint, s.canonical,
    st.shape_baseline, st.shape_drift
FROM run_steps st LEFT JOIN shapes s ON s.fingerprint = st.shape_fingerprint
WHERE st.operation_id IN (` + placeholders(n) + `)
ORDER BY st.operation_id, st.position`
}

// loadSteps fills the Steps of every steps probe's result of rs, with one
// query per attemptsChunk of them; the others have no rows to read.
func loadSteps(ctx context.Context, tx *sql.Tx, rs []results.Result) error {
	at := map[string]int{}
	var ids []any
	for i := range rs {
		if rs[i].EffectiveKind() == results.ProbeSteps {
			at[rs[i].OperationID] = i
			ids = append(ids, rs[i].OperationID)
		}
	}
	for start := 0; start < len(ids); start += attemptsChunk {
		chunk := ids[start:min(start+attemptsChunk, len(ids))]
		if err := readSteps(ctx, tx, chunk, func(id string, st results.StepResult) {
			r := &rs[at[id]]
			r.Steps = append(r.Steps, st)
		}); err != nil {
			return err
		}
	}
	return nil
}

// readSteps reads the run_steps rows of ids and hands each to add.
func readSteps(ctx context.Context, tx *sql.Tx, ids []any, add func(id string, st results.StepResult)) error {
	rows, err := tx.QueryContext(ctx, stepsOf(len(ids)), ids...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, started            string
			st                     results.StepResult
			outcome                string
			code, message          sql.NullString
			durationMS             int64
			fingerprint, canonical sql.NullString
			baseline, drift        sql.NullString
		)
		if err := rows.Scan(&id, &st.Name, &outcome, &code, &message, &started, &durationMS,
			&st.Polls, &st.Always, &st.Skipped, &fingerprint, &canonical, &baseline, &drift); err != nil {
			return err
		}
		if st.StartedAt, err = parseTime(started); err != nil {
			return fmt.Errorf("step %s of %s: %w", st.Name, id, err)
		}
		st.Outcome = results.Outcome(outcome)
		st.Duration = time.Duration(durationMS) * time.Millisecond
		if code.Valid {
			st.Error = &results.Error{Code: results.Code(code.String), Message: message.String,
				Retryable: results.Code(code.String).Retryable()}
		}
		if fingerprint.Valid {
			st.Shape = &results.Shape{Fingerprint: fingerprint.String, Canonical: canonical.String}
			if drift.Valid {
				st.Shape.Baseline, st.Shape.Drift = baseline.String, strings.Split(drift.String, "\n")
			}
		}
		add(id, st)
	}
	return rows.Err()
}

// parseNullTime reads a nullable time column; NULL is the zero time.
func parseNullTime(s sql.NullString) (time.Time, error) {
	if !s.Valid {
		return time.Time{}, nil
	}
	return parseTime(s.String)
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(results.TimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}
