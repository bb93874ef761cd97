package sqlite

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
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

// rollupStatement finds, in a migration, a statement that fills a rollup
// table from the results already stored: an INSERT INTO the table at the
// start of a line, up to the first semicolon that ends a line.
var rollupStatement = regexp.MustCompile(`(?ms)^INSERT INTO (shape_counts|probe_hours) .*?;$`)

// RollupStatements returns the statements that fill the rollup tables
// (shape_counts behind drift detection, probe_hours behind stats) from the
// results already stored, taken from the migrations that created those
// tables: the same SQL that upgraded databases ran. A tool that writes
// results in bulk, bypassing RecordRun, runs them once on tables left
// empty (toolpulse-bench read fills its databases so).
func RollupStatements() ([]string, error) {
	ms, err := loadMigrations(embedded)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range ms {
		for _, match := range rollupStatement.FindAllStringSubmatch(m.sql, -1) {
			out = append(out, strings.TrimSuffix(match[0], ";"))
			seen[match[1]] = true
		}
	}
	for _, table := range []string{"shape_counts", "probe_hours"} {
		if !seen[table] {
			return nil, fmt.Errorf("sqlite: no migration fills %s from the stored results", table)
		}
	}
	return out, nil
}
