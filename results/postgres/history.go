package postgres

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

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
// one query for the page, and one for the attempts of all its results.
func (s *Store) History(ctx context.Context, q results.HistoryQuery) ([]results.Result, error) {
	query, args, err := historyQuery(q)
	if err != nil {
		return nil, fmt.Errorf("postgres: history: %w", err)
	}
	rs, err := s.readResults(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: history: %w", ctxErr(ctx, err))
	}
	return rs, nil
}

// historyQuery is the query History runs for q, with its arguments. For
// one probe, newest first comes straight out of the index on (probe,
// started_at, id); for all probes, out of the one on (started_at, id).
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
	w.args = append(w.args, limit)
	query := `SELECT ` + resultColumns + `
` + resultFrom + w.String() + `
ORDER BY r.started_at DESC, r.id DESC
LIMIT $` + strconv.Itoa(len(w.args))
	return query, w.args, nil
}

// recordedRuns is the results of one probe, or of all when $1 is NULL, in
// the order they were recorded: by id, which the identity column gives in
// insertion order (one writer per store records them, one batch at a
// time).
const recordedRuns = `SELECT ` + resultColumns + `
` + resultFrom + `
WHERE $1::text IS NULL OR r.probe = $1
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
		return nil, fmt.Errorf("postgres: recorded runs: %w", ctxErr(ctx, err))
	}
	return rs, nil
}

// latestResults reads the latest_results view: an index search per
// probe, not a scan of the history.
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
		return nil, fmt.Errorf("postgres: latest: %w", ctxErr(ctx, err))
	}
	return rs, nil
}

// readResults runs a query of resultColumns and loads the attempts and
// steps of every row it returns, in one read transaction.
func (s *Store) readResults(ctx context.Context, query string, args ...any) ([]results.Result, error) {
	tx, err := s.pool.BeginTx(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	rows, err := tx.Query(ctx, query, args...)
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

// attemptsOf reads the attempts of the results whose operation ids are
// $1, ordered by result and number: one array parameter, whatever the
// page's size.
const attemptsOf = `SELECT operation_id, ` + attemptColumns + `
FROM attempts WHERE operation_id = ANY ($1)
ORDER BY operation_id, number`

// loadAttempts fills the Attempts of every result of rs, with one query.
func loadAttempts(ctx context.Context, tx pgx.Tx, rs []results.Result) error {
	if len(rs) == 0 {
		return nil
	}
	at := make(map[string]int, len(rs))
	ids := make([]string, len(rs))
	for i := range rs {
		at[rs[i].OperationID] = i
		ids[i] = rs[i].OperationID
	}
	rows, err := tx.Query(ctx, attemptsOf, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		a, err := scanAttempt(rows, &id)
		if err != nil {
			return err
		}
		r := &rs[at[id]]
		r.Attempts = append(r.Attempts, a)
	}
	return rows.Err()
}

// Drifts returns up to limit drift events, newest first (by detected_at,
// then recording order): those of probe, or of every probe when probe is
// "", detected at or after since (zero: all). A limit of 0 or less means
// results.DefaultLimit.
func (s *Store) Drifts(ctx context.Context, probe string, since time.Time, limit int) ([]results.Drift, error) {
	query, args := driftsQuery(probe, since, limit)
	ds, err := s.drifts(ctx, s.pool, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: drifts: %w", ctxErr(ctx, err))
	}
	return ds, nil
}

// driftsQuery is the query Drifts runs, with its arguments: a range of the
// index on (probe, detected_at, id) for one probe, or of the one on
// (detected_at, id) for all, in the order asked for.
func driftsQuery(probe string, since time.Time, limit int) (string, []any) {
	if limit <= 0 {
		limit = results.DefaultLimit
	}
	var w where
	if probe != "" {
		w.add("probe = $?", probe)
	}
	w.window("detected_at", since, time.Time{})
	w.args = append(w.args, limit)
	query := `SELECT probe, operation_id, detected_at, baseline, current, diff,
    kind, description_before, description_after, step FROM drifts` +
		w.String() + `
ORDER BY detected_at DESC, id DESC
LIMIT $` + strconv.Itoa(len(w.args))
	return query, w.args
}

// querier is the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Store) drifts(ctx context.Context, q querier, query string, args ...any) ([]results.Drift, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ds []results.Drift
	for rows.Next() {
		var (
			d             results.Drift
			at            time.Time
			diff          string
			kind          string
			before, after *string
			step          *string
		)
		if err := rows.Scan(&d.Probe, &d.OperationID, &at, &d.Baseline, &d.Current, &diff,
			&kind, &before, &after, &step); err != nil {
			return nil, err
		}
		d.Kind, d.Before, d.After, d.Step = results.DriftKind(kind), str(before), str(after), str(step)
		d.DetectedAt = at.UTC()
		if diff != "" {
			d.Diff = strings.Split(diff, "\n")
		}
		ds = append(ds, d)
	}
	return ds, rows.Err()
}

// where builds a WHERE clause from conditions joined by AND, with their
// arguments in order. A condition spells each of its parameters "$?";
// add numbers them after those before.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	for range args {
		w.args = append(w.args, nil)
		cond = strings.Replace(cond, "$?", "$"+strconv.Itoa(len(w.args)), 1)
	}
	copy(w.args[len(w.args)-len(args):], args)
	w.conds = append(w.conds, cond)
}

// in adds "col = ANY (array)" when values is not empty.
func in[T ~string](w *where, col string, values []T) {
	if len(values) == 0 {
		return
	}
	vs := make([]string, len(values))
	for i, v := range values {
		vs[i] = string(v)
	}
	w.add(col+" = ANY ($?)", vs)
}

// window adds since <= col < until on a time column; a zero bound is no
// bound.
func (w *where) window(col string, since, until time.Time) {
	if !since.IsZero() {
		w.add(col+" >= $?", storedTime(since))
	}
	if !until.IsZero() {
		w.add(col+" < $?", storedTime(until))
	}
}

// String is the clause, starting with a newline, or "" without conditions.
func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return "\nWHERE " + strings.Join(w.conds, " AND ")
}

// newestRuns picks, for each probe and location of the arrays $1 and $2,
// its newest $3 runs: a backward range of the index on (probe, location,
// started_at, id) each, in one query however many are asked for.
const newestRuns = `SELECT ` + resultColumns + `
FROM unnest($1::text[], $2::text[], $3::int[]) AS w(probe, location, lim)
CROSS JOIN LATERAL (
    SELECT x.id FROM results x
    WHERE x.probe = w.probe AND x.location = w.location
    ORDER BY x.started_at DESC, x.id DESC
    LIMIT w.lim) pick
JOIN results r ON r.id = pick.id
LEFT JOIN shapes s ON s.fingerprint = r.shape_fingerprint
ORDER BY r.probe, r.location, r.started_at DESC, r.id DESC`

// NewestRuns returns, for each of want in its order, the newest runs of
// its probe from its location (newest first: by started_at, then
// recording order), each with its attempts and shape as Result returns
// it. It reads them all in one read transaction: one query for the runs
// of every probe and location, one for their attempts, one for their
// steps, whatever the size of want. The fleet's decider asks it once a
// round (SPEC §13).
func (s *Store) NewestRuns(ctx context.Context, want []results.RunsFrom) ([][]results.Result, error) {
	distinct := results.Distinct(want)
	if len(distinct) == 0 {
		return make([][]results.Result, len(want)), nil
	}
	probes, locations, limits := make([]string, len(distinct)), make([]string, len(distinct)), make([]int32, len(distinct))
	for i, w := range distinct {
		probes[i], locations[i], limits[i] = w.Probe, w.Location, int32(min(w.Limit, math.MaxInt32))
	}
	rs, err := s.readResults(ctx, newestRuns, probes, locations, limits)
	if err != nil {
		return nil, fmt.Errorf("postgres: newest runs: %w", ctxErr(ctx, err))
	}
	return results.SplitRuns(want, rs), nil
}
