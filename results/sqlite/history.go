package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// History returns the results q selects, newest first: by started_at,
// then by recording order. Each comes back as Result returns it, with its
// attempts and shape. It fails on an outcome that is not one of the three.
//
// Since and Until are compared at the millisecond precision results are
// stored with; an instant between two milliseconds counts as the next one,
// so that "at or after Since" and "before Until" stay exact.
//
// The page and the attempts of all its results are read in one read
// transaction, a consistent snapshot even while retention deletes rows:
// one query for the page, and one for the attempts of every 500 results
// (never one per result).
func (s *Store) History(ctx context.Context, q results.HistoryQuery) ([]results.Result, error) {
	query, args, err := historyQuery(q)
	if err != nil {
		return nil, fmt.Errorf("sqlite: history: %w", err)
	}
	rs, err := s.readResults(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: history: %w", err)
	}
	return rs, nil
}

// historyQuery is the query History runs for q, with its arguments. For
// one probe, newest first comes straight out of the index on (probe,
// started_at, id, ...); for all probes, out of the one on started_at.
func historyQuery(q results.HistoryQuery) (string, []any, error) {
	for _, o := range q.Outcomes {
		if !o.Valid() {
			return "", nil, fmt.Errorf("unknown outcome %q", o)
		}
	}
	for _, k := range q.Kinds {
		if !k.Valid() {
			return "", nil, fmt.Errorf("unknown probe kind %q", k)
		}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = results.DefaultLimit
	}
	var w where
	in(&w, "r.probe", q.Probes)
	w.window("r.started_at", q.Since, q.Until)
	in(&w, "r.outcome", q.Outcomes)
	in(&w, "r.code", q.Codes)
	in(&w, "r.kind", q.Kinds)
	in(&w, "r.location", q.Locations)
	query := `SELECT ` + resultColumns + `
` + resultFrom + w.String() + `
ORDER BY r.started_at DESC, r.id DESC
LIMIT ?`
	return query, append(w.args, limit), nil
}

// recordedRuns is the results of one probe, or of all when ?1 is NULL, in
// the order they were recorded: by id, the rowid, which SQLite gives in
// insertion order.
const recordedRuns = `SELECT ` + resultColumns + `
` + resultFrom + `
WHERE ?1 IS NULL OR r.probe = ?1
ORDER BY r.id`

// RecordedRuns returns every stored result of probe, or of every probe
// when probe is "", in the order RecordRun stored them (oldest first),
// each with its attempts and shape as Result returns it. History sorts by
// started_at, which hides the order of the writes; this does not, so that
// a test can tell whether runs reached the store in the order they were
// handed over. It reads everything retention has left: it is for tests
// and tools, not for pages of history.
func (s *Store) RecordedRuns(ctx context.Context, probe string) ([]results.Result, error) {
	rs, err := s.readResults(ctx, recordedRuns, nullString(probe))
	if err != nil {
		return nil, fmt.Errorf("sqlite: recorded runs: %w", err)
	}
	return rs, nil
}

// latestResults reads the latest_results view (migration 0003): an index
// search per probe, not a scan of the history.
const latestResults = `SELECT ` + resultColumns + `
FROM latest_results r LEFT JOIN shapes s ON s.fingerprint = r.shape_fingerprint
ORDER BY r.probe`

// Latest returns the latest result of every probe ever recorded (the
// highest started_at, then the last recorded), sorted by probe, each with
// its attempts and shape. Probes that are no longer configured are
// included as long as retention has left one of their results.
func (s *Store) Latest(ctx context.Context) ([]results.Result, error) {
	rs, err := s.readResults(ctx, latestResults)
	if err != nil {
		return nil, fmt.Errorf("sqlite: latest: %w", err)
	}
	return rs, nil
}

// readResults runs a query of resultColumns and loads the attempts of every
// row it returns, in one read transaction.
func (s *Store) readResults(ctx context.Context, query string, args ...any) ([]results.Result, error) {
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()

	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var rs []results.Result
	for rows.Next() {
		r, err := scanResult(rows)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if err := loadAttempts(ctx, tx, rs); err != nil {
		return nil, fmt.Errorf("attempts: %w", err)
	}
	if err := loadSteps(ctx, tx, rs); err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	return rs, nil
}

// attemptsChunk bounds the operation ids of one attempts query, far below
// SQLite's limit on bound parameters (32766).
const attemptsChunk = 500

// attemptsOf reads the attempts of n results, ordered by result and
// number.
func attemptsOf(n int) string {
	return `SELECT operation_id, ` + attemptColumns + `
FROM attempts WHERE operation_id IN (` + placeholders(n) + `)
ORDER BY operation_id, number`
}

// loadAttempts fills the Attempts of every result of rs, with one query
// per attemptsChunk results rather than one per result.
func loadAttempts(ctx context.Context, tx *sql.Tx, rs []results.Result) error {
	at := make(map[string]int, len(rs))
	for i := range rs {
		at[rs[i].OperationID] = i
	}
	for start := 0; start < len(rs); start += attemptsChunk {
		chunk := rs[start:min(start+attemptsChunk, len(rs))]
		ids := make([]any, len(chunk))
		for i := range chunk {
			ids[i] = chunk[i].OperationID
		}
		rows, err := tx.QueryContext(ctx, attemptsOf(len(ids)), ids...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			a, err := scanAttempt(rows, &id)
			if err != nil {
				rows.Close()
				return err
			}
			r := &rs[at[id]]
			r.Attempts = append(r.Attempts, a)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Drifts returns up to limit drift events, newest first (by detected_at,
// then recording order): those of probe, or of every probe when probe is
// "", detected at or after since (zero: all). A limit of 0 or less means
// results.DefaultLimit.
func (s *Store) Drifts(ctx context.Context, probe string, since time.Time, limit int) ([]results.Drift, error) {
	query, args := driftsQuery(probe, since, limit)
	ds, err := s.drifts(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: drifts: %w", err)
	}
	return ds, nil
}

// driftsQuery is the query Drifts runs, with its arguments: a range of the
// index on (probe, detected_at) for one probe, or of the one on
// detected_at for all, in the order asked for.
func driftsQuery(probe string, since time.Time, limit int) (string, []any) {
	if limit <= 0 {
		limit = results.DefaultLimit
	}
	var w where
	if probe != "" {
		w.add("probe = ?", probe)
	}
	w.window("detected_at", since, time.Time{})
	query := `SELECT probe, operation_id, detected_at, baseline, current, diff,
    kind, description_before, description_after, step FROM drifts` +
		w.String() + `
ORDER BY detected_at DESC, id DESC
LIMIT ?`
	return query, append(w.args, limit)
}

func (s *Store) drifts(ctx context.Context, query string, args ...any) ([]results.Drift, error) {
	rows, err := s.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ds []results.Drift
	for rows.Next() {
		var (
			d             results.Drift
			at, diff      string
			kind          string
			before, after sql.NullString
			step          sql.NullString
		)
		if err := rows.Scan(&d.Probe, &d.OperationID, &at, &d.Baseline, &d.Current, &diff,
			&kind, &before, &after, &step); err != nil {
			return nil, err
		}
		d.Kind, d.Before, d.After, d.Step = results.DriftKind(kind), before.String, after.String, step.String
		if d.DetectedAt, err = parseTime(at); err != nil {
			return nil, err
		}
		if diff != "" {
			d.Diff = strings.Split(diff, "\n")
		}
		ds = append(ds, d)
	}
	return ds, rows.Err()
}

// where builds a WHERE clause from conditions joined by AND, with their
// arguments in order.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// in adds "col IN (...)" when values is not empty.
func in[T ~string](w *where, col string, values []T) {
	if len(values) == 0 {
		return
	}
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = string(v)
	}
	w.add(col+" IN ("+placeholders(len(values))+")", args...)
}

// window adds since <= col < until on a time column; a zero bound is no
// bound.
func (w *where) window(col string, since, until time.Time) {
	if !since.IsZero() {
		w.add(col+" >= ?", storedTime(since))
	}
	if !until.IsZero() {
		w.add(col+" < ?", storedTime(until))
	}
}

// String is the clause, starting with a newline, or "" without conditions.
func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return "\nWHERE " + strings.Join(w.conds, " AND ")
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// storedTime is t as a bound on stored times, which have millisecond
// precision: t rounded up to the next millisecond unless it is on one. A
// stored time is then >= (or <) the bound exactly when the instant it
// stands for is >= (or <) t.
func storedTime(t time.Time) string {
	return results.FormatTime(ceilMillisecond(t))
}

// ceilMillisecond is t rounded up to the next millisecond unless it is on
// one.
func ceilMillisecond(t time.Time) time.Time {
	ms := t.Truncate(time.Millisecond)
	if ms.Before(t) {
		ms = ms.Add(time.Millisecond)
	}
	return ms
}

// newestRunsChunk bounds the probes and locations of one NewestRuns query:
// one compound SELECT term each, below SQLite's limit of 500 terms.
const newestRunsChunk = 100

// newestRuns picks the newest runs of n probes and locations, each its
// own term of a UNION ALL (?, ?, ?: probe, location, limit), a backward
// range of the index on (probe, location, started_at, id) each.
func newestRuns(n int) string {
	terms := make([]string, n)
	for i := range terms {
		terms[i] = `SELECT * FROM (SELECT ` + resultColumns + `
` + resultFrom + `
WHERE r.probe = ? AND r.location = ?
ORDER BY r.started_at DESC, r.id DESC
LIMIT ?)`
	}
	return strings.Join(terms, "\nUNION ALL\n")
}

// NewestRuns returns, for each of want in its order, the newest runs of
// its probe from its location (newest first: by started_at, then
// recording order), each with its attempts and shape as Result returns
// it: one query (and one read transaction) for every newestRunsChunk
// probes and locations, rather than one per probe and location.
func (s *Store) NewestRuns(ctx context.Context, want []results.RunsFrom) ([][]results.Result, error) {
	distinct := results.Distinct(want)
	var all []results.Result
	for start := 0; start < len(distinct); start += newestRunsChunk {
		chunk := distinct[start:min(start+newestRunsChunk, len(distinct))]
		args := make([]any, 0, 3*len(chunk))
		for _, w := range chunk {
			args = append(args, w.Probe, w.Location, w.Limit)
		}
		rs, err := s.readResults(ctx, newestRuns(len(chunk)), args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: newest runs: %w", err)
		}
		all = append(all, rs...)
	}
	return results.SplitRuns(want, all), nil
}
