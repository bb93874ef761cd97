package sqlite

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/hourly"
)

// Query is one of the store's read queries, named for an operator.
type Query struct {
	Name string // what runs it, and how often
	SQL  string // as the store runs it, its parameters unbound
}

// OperatorQueries returns the SQL behind `toolpulse stats --since 24h`,
// `toolpulse history --probe P --limit 100` and GET /api/v1/probes, as the
// store runs it, for EXPLAIN QUERY PLAN (toolpulse-bench read --explain).
// Without ANALYZE statistics, which toolpulse never gathers, SQLite plans
// a query the same whatever its parameters' values, so they stay unbound.
func OperatorQueries() []Query {
	now := time.Now()
	var drifts where
	drifts.window("detected_at", now.Add(-24*time.Hour), now)
	history, _, err := historyQuery(results.HistoryQuery{Probes: []string{"p"}, Limit: 100})
	if err != nil {
		panic(fmt.Sprintf("sqlite: the history query of one probe: %v", err)) // a fixed, valid query
	}
	return []Query{
		{"stats: probe names", probeNames},
		{"stats: one probe's counters and durations, run per probe: the window's whole hours from probe_hours, its partial first and last hours from results", statsProbe},
		{"stats: a probe's last run in the window, run per probe", statsLast},
		{"stats: latest run with another outcome, run twice per probe", streakBreak},
		{"stats: first run of the current streak, run per probe", streakStart},
		{"stats: drift events per probe in the window", fmt.Sprintf(statsDrifts, drifts.String())},
		{"history: the page, one probe, limit 100", history},
		{"history: the attempts of the page, one placeholder per result", attemptsOf(3)},
		{"GET /api/v1/probes: the latest run of every probe", latestResults},
	}
}

// shapeCountsRollup finds, in a migration, the statement that fills
// shape_counts from the results already stored: an INSERT INTO the table
// at the start of a line, up to the first semicolon that ends a line.
var shapeCountsRollup = regexp.MustCompile(`(?ms)^INSERT INTO shape_counts .*?;$`)

// RollupStatements returns the statements that fill the rollup tables
// (shape_counts behind drift detection, probe_hours behind stats) from the
// results already stored. A tool that writes results in bulk, bypassing
// RecordRun, runs them once on tables left empty (toolpulse-bench read
// fills its databases so); TestRollupStatementsRebuildTheRollups holds
// them to what RecordRun writes.
//
// shape_counts is filled by the statement of the migration that created
// it, the same SQL that upgraded databases ran. probe_hours is filled by
// probeHoursRollup: the statement of migration 0005 that first filled it
// knows no location, and migration 0022 only copied its rows.
func RollupStatements() ([]string, error) {
	ms, err := loadMigrations(embedded)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		for _, match := range shapeCountsRollup.FindAllString(m.sql, -1) {
			out = append(out, strings.TrimSuffix(match, ";"))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("sqlite: no migration fills shape_counts from the stored results")
	}
	return append(out, probeHoursRollup), nil
}

// probeHoursRollup fills probe_hours from every stored result: one row
// per probe, UTC hour and location, each run counted as upsertProbeHour
// counts it. A bulk fill runs it once; it groups (and so sorts) every
// run, which a daemon never does.
var probeHoursRollup = `INSERT INTO probe_hours (probe, hour, location, runs, pass, contract_error,
    unavailable, passed_after_retries, retries, duration_buckets)
SELECT probe, hour, location, sum(runs), sum(pass), sum(contract_error), sum(unavailable),
    sum(passed_after_retries), sum(retries), json_group_object(bucket, runs)
FROM (
    SELECT probe, substr(started_at, 1, 13) AS hour, location, ` + bucketSQL("duration_ms") + ` AS bucket,
        count(*) AS runs, sum(outcome = 'pass') AS pass, sum(outcome = 'contract_error') AS contract_error,
        sum(outcome = 'unavailable') AS unavailable, sum(outcome = 'pass' AND attempts > 1) AS passed_after_retries,
        sum(max(attempts - 1, 0)) AS retries
    FROM results
    GROUP BY 1, 2, 3, 4
)
GROUP BY probe, hour, location`

// bucketSQL is hourly.Bucket of the integer column d in SQL: d below
// hourly.ExactBelow; below 2^(k+1), d with its k - SubBucketBits lowest
// bits cleared (SQLite has no bit length to compute k from).
func bucketSQL(d string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CASE WHEN %s < %d THEN %s", d, hourly.ExactBelow, d)
	for k := hourly.SubBucketBits + 1; k < 62; k++ {
		shift := k - hourly.SubBucketBits
		fmt.Fprintf(&b, " WHEN %s < %d THEN %s >> %d << %d", d, int64(1)<<(k+1), d, shift, shift)
	}
	fmt.Fprintf(&b, " ELSE %s >> %d << %d END", d, 62-hourly.SubBucketBits, 62-hourly.SubBucketBits)
	return b.String()
}
