package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
)

// resultColumns and resultFrom read results rows as scanResult expects
// them, with the canonical text of their shape.
const resultColumns = `r.operation_id, r.probe, r.started_at, r.duration_ms, r.outcome, r.code,
    r.message, r.retryable, r.http_status, r.selected_count, r.validated_count,
    r.shape_fingerprint, s.canonical, r.consumer, r.consumer_version, r.rule_hash,
    r.response_sample, r.shape_baseline, r.shape_drift, r.kind, r.mcp_tool, r.mcp_server, r.tool_fingerprint, r.step, r.node, r.location, r.trace_id,
    (SELECT td.definition::text FROM tool_definitions td WHERE td.probe = r.probe AND td.fingerprint = r.tool_fingerprint)`

const resultFrom = `FROM results r LEFT JOIN shapes s ON s.fingerprint = r.shape_fingerprint`

const selectResult = `SELECT ` + resultColumns + `
` + resultFrom + `
WHERE r.operation_id = $1`

// attemptColumns are read by scanAttempt.
const attemptColumns = `number, started_at, duration_ms, http_status, code, message, wait_ms, method, try, poll, step`

const selectAttempts = `SELECT ` + attemptColumns + `
FROM attempts WHERE operation_id = $1 ORDER BY number`

// snapshot is the options of a read transaction that sees one snapshot
// of the database for all its statements, as SQLite's read transactions
// do.
var snapshot = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// Result returns the stored result of one operation with its attempts and
// shape, or an error wrapping ErrNotFound when there is none. What comes
// back is what Record stored: durations in whole milliseconds, times in UTC
// to the millisecond, and the shape with the drift lines it was recorded
// with.
func (s *Store) Result(ctx context.Context, operationID string) (results.Result, error) {
	r, err := s.result(ctx, operationID)
	if err != nil {
		return results.Result{}, fmt.Errorf("postgres: result %s: %w", operationID, ctxErr(ctx, err))
	}
	return r, nil
}

func (s *Store) result(ctx context.Context, operationID string) (results.Result, error) {
	// One read transaction: the row and its attempts come from one snapshot
	// even if retention deletes the operation meanwhile.
	tx, err := s.pool.BeginTx(ctx, snapshot)
	if err != nil {
		return results.Result{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	r, err := scanResult(tx.QueryRow(ctx, selectResult, operationID))
	if errors.Is(err, pgx.ErrNoRows) {
		return results.Result{}, ErrNotFound
	}
	if err != nil {
		return results.Result{}, err
	}

	rows, err := tx.Query(ctx, selectAttempts, operationID)
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

// scanner is a pgx.Row or pgx.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanResult reads one row of resultColumns. Attempts are left nil.
func scanResult(row scanner) (results.Result, error) {
	var (
		r                      results.Result
		startedAt              time.Time
		durationMS             int64
		outcome                string
		code, message, sample  *string
		fingerprint, canonical *string
		baseline, drift        *string
		kind                   string
		mcpTool, mcpServer     *string
		tool, definition       *string
		step, node, location   *string
		traceID                *string
		retryable              bool
		httpStatus             *int32
	)
	err := row.Scan(&r.OperationID, &r.Probe, &startedAt, &durationMS, &outcome, &code, &message, &retryable,
		&httpStatus, &r.SelectedCount, &r.ValidatedCount, &fingerprint, &canonical,
		&r.Consumer.Name, &r.Consumer.Version, &r.Consumer.RuleHash, &sample, &baseline, &drift,
		&kind, &mcpTool, &mcpServer, &tool, &step, &node, &location, &traceID, &definition)
	if err != nil {
		return results.Result{}, err
	}
	r.StartedAt = startedAt.UTC()
	r.Duration = time.Duration(durationMS) * time.Millisecond
	r.Outcome = results.Outcome(outcome)
	r.Kind = results.ProbeKind(kind)
	r.Location = results.ResultLocation(str(location))
	r.Step, r.Node, r.TraceID = str(step), str(node), str(traceID)
	if mcpTool != nil {
		r.MCP = &results.MCPTarget{Tool: *mcpTool, Server: str(mcpServer)}
	}
	r.HTTPStatus = int(num(httpStatus))
	r.ResponseSample = str(sample)
	if code != nil {
		r.Error = &results.Error{Code: results.Code(*code), Message: str(message), Retryable: retryable}
	}
	if fingerprint != nil {
		r.Shape = &results.Shape{Fingerprint: *fingerprint, Canonical: str(canonical)}
		if drift != nil {
			r.Shape.Baseline, r.Shape.Drift = str(baseline), strings.Split(*drift, "\n")
		}
	}
	if tool != nil {
		r.Tool = &results.ToolDefinition{Fingerprint: *tool, Canonical: str(definition)}
	}
	return r, nil
}

// scanAttempt reads one row of attemptColumns, after any columns whose
// destinations are given in before.
func scanAttempt(row scanner, before ...any) (results.Attempt, error) {
	var (
		a                  results.Attempt
		started            time.Time
		durationMS, waitMS int64
		status             *int32
		code, message      *string
		method             *string
		try, poll          *int32
		step               *string
	)
	dest := append(before, &a.Number, &started, &durationMS, &status, &code, &message, &waitMS, &method, &try, &poll, &step)
	if err := row.Scan(dest...); err != nil {
		return results.Attempt{}, err
	}
	a.StartedAt = started.UTC()
	a.Duration = time.Duration(durationMS) * time.Millisecond
	a.Wait = time.Duration(waitMS) * time.Millisecond
	a.HTTPStatus = int(num(status))
	a.Code = results.Code(str(code))
	a.Message = str(message)
	a.Method = str(method)
	a.Step = str(step)
	a.Try = int(num(try))
	a.Poll = int(num(poll))
	return a, nil
}

// stepsOf reads the run_steps rows of the results whose operation ids
// are $1, ordered by result and position, each with the canonical text of
// its shape.
const stepsOf = `SELECT st.operation_id, st.step, st.outcome, st.code, st.message, st.started_at,
    st.duration_ms, st.polls, st.always, st.skipped, st.shape_fingerprint, s.canonical,
    st.shape_baseline, st.shape_drift
FROM run_steps st LEFT JOIN shapes s ON s.fingerprint = st.shape_fingerprint
WHERE st.operation_id = ANY ($1)
ORDER BY st.operation_id, st.position`

// loadSteps fills the Steps of every steps probe's result of rs, with one
// query; the others have no rows to read.
func loadSteps(ctx context.Context, tx pgx.Tx, rs []results.Result) error {
	at := map[string]int{}
	var ids []string
	for i := range rs {
		if rs[i].EffectiveKind() == results.ProbeSteps {
			at[rs[i].OperationID] = i
			ids = append(ids, rs[i].OperationID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, stepsOf, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id                     string
			started                time.Time
			st                     results.StepResult
			outcome                string
			code, message          *string
			durationMS             int64
			polls                  int32
			fingerprint, canonical *string
			baseline, drift        *string
		)
		if err := rows.Scan(&id, &st.Name, &outcome, &code, &message, &started, &durationMS,
			&polls, &st.Always, &st.Skipped, &fingerprint, &canonical, &baseline, &drift); err != nil {
			return err
		}
		st.StartedAt = started.UTC()
		st.Polls = int(polls)
		st.Outcome = results.Outcome(outcome)
		st.Duration = time.Duration(durationMS) * time.Millisecond
		if code != nil {
			st.Error = &results.Error{Code: results.Code(*code), Message: str(message),
				Retryable: results.Code(*code).Retryable()}
		}
		if fingerprint != nil {
			st.Shape = &results.Shape{Fingerprint: *fingerprint, Canonical: str(canonical)}
			if drift != nil {
				st.Shape.Baseline, st.Shape.Drift = str(baseline), strings.Split(*drift, "\n")
			}
		}
		r := &rs[at[id]]
		r.Steps = append(r.Steps, st)
	}
	return rows.Err()
}

// str reads a nullable text column; NULL is "".
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// num reads a nullable integer column; NULL is 0.
func num[T int32 | int64](n *T) T {
	if n == nil {
		return 0
	}
	return *n
}
