package postgres

import (
	"fmt"

	"github.com/toolpulse/toolpulse/results"
)

// Query is one of the store's read queries, named for an operator.
type Query struct {
	Name string // what runs it, and how often
	SQL  string // as the store runs it, its parameters unbound ($1, $2...)
}

// OperatorQueries returns the SQL behind `toolpulse stats --since 24h`,
// `toolpulse history --probe P --limit 100` and GET /api/v1/probes, as the
// store runs it, for EXPLAIN (toolpulse-bench read --explain): as
// results/sqlite.OperatorQueries does.
func OperatorQueries() []Query {
	history, _, err := historyQuery(results.HistoryQuery{Probes: []string{"p"}, Limit: 100})
	if err != nil {
		panic(fmt.Sprintf("postgres: the history query of one probe: %v", err)) // a fixed, valid query
	}
	drifts := where{}
	drifts.add("detected_at >= $?", minTime)
	drifts.add("detected_at < $?", maxTime)
	return []Query{
		{"stats: probe names", probeNames},
		{"stats: the counters and durations of a part of the probes (8 parts): the window's whole hours from probe_hours, its partial first and last hours from results, index ranges per probe", statsSums},
		{"stats: the last run in the window, per probe of a part, and the start of its current streak, index searches per probe", statsLatest},
		{"stats: drift events per probe in the window", fmt.Sprintf(statsDrifts, drifts.String())},
		{"history: the page, one probe, limit 100", history},
		{"history: the attempts of the page, one array parameter", attemptsOf},
		{"GET /api/v1/probes: the latest run of every probe", latestResults},
	}
}

// bucketSQL is hourly.Bucket in SQL, for a duration_ms column: below
// exactBelow the duration itself, above it the duration with all but its
// subBucketBits+1 highest bits cleared (the bit length comes from the
// binary text, exactly, never from a floating-point logarithm).
const bucketSQL = `CASE WHEN duration_ms < 128 THEN duration_ms
    ELSE duration_ms >> (length(ltrim(duration_ms::bit(64)::text, '0')) - 7)
                     << (length(ltrim(duration_ms::bit(64)::text, '0')) - 7) END`

// RollupStatements returns the statements that fill the rollup tables
// (shape_counts behind drift detection, probe_hours behind stats) from the
// results already stored. A tool that writes results in bulk, bypassing
// RecordRun (toolpulse-bench, a copy of a history), runs them once, in
// this order, on tables left empty; TestRollupStatementsMatchRecordRun
// holds them to what RecordRun writes.
//
// probe_hours is written hour by hour, as RecordRun leaves it: the rows of
// an hour lie together, so that stats' window of hours reads a few
// thousand pages rather than a page per row (in the order a hash
// aggregate gives, 19 hours of 1,000 probes lay on 14,781 pages, and
// stats' hours cost the server about 65 ms of CPU instead of 36 ms).
func RollupStatements() []string {
	return []string{
		`INSERT INTO shape_counts (probe, hour, fingerprint, runs, last_seen)
SELECT probe, date_trunc('hour', started_at, 'UTC'), shape_fingerprint, count(*), max(started_at)
FROM results
WHERE shape_fingerprint IS NOT NULL
GROUP BY 1, 2, 3`,
		`INSERT INTO probe_hours (probe, hour, location, runs, pass, contract_error, unavailable,
    passed_after_retries, retries, duration_buckets)
SELECT probe, hour, location, sum(runs), sum(pass), sum(contract_error), sum(unavailable),
    sum(passed_after_retries), sum(retries), jsonb_object_agg(bucket::text, runs)
FROM (
    SELECT probe, date_trunc('hour', started_at, 'UTC') AS hour, location, ` + bucketSQL + ` AS bucket,
        count(*) AS runs,
        count(*) FILTER (WHERE outcome = 'pass') AS pass,
        count(*) FILTER (WHERE outcome = 'contract_error') AS contract_error,
        count(*) FILTER (WHERE outcome = 'unavailable') AS unavailable,
        count(*) FILTER (WHERE outcome = 'pass' AND attempts > 1) AS passed_after_retries,
        sum(greatest(attempts - 1, 0)) AS retries
    FROM results
    GROUP BY 1, 2, 3, 4
) b
GROUP BY probe, hour, location
ORDER BY hour, probe, location`,
	}
}
