package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// TestOperatorQueriesUseIndexes checks the plans of the queries behind
// History, Latest, Drifts, Stats, the views and Prune: each reads the
// index named, and none scans a table that grows with history or sorts
// what it reads, except where noted.
func TestOperatorQueriesUseIndexes(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	since := time.Date(2026, 10, 26, 0, 0, 0, 0, time.UTC)
	history := func(q results.HistoryQuery) (string, []any) {
		query, args, err := historyQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		return query, args
	}
	drifts := func(probe string) (string, []any) { return driftsQuery(probe, since, 10) }
	const stored = "2026-10-26T00:00:00.000Z"
	tests := []struct {
		name  string
		query string
		args  []any
		want  []string // each must appear in the plan
		sorts bool     // a TEMP B-TREE is expected (over few rows)
	}{
		{name: "History, one probe, limit 100", want: []string{
			"SEARCH r USING INDEX results_probe_started_covering (probe=?)"}},
		{name: "History, one probe, since", want: []string{
			"SEARCH r USING INDEX results_probe_started_covering (probe=? AND started_at>?)"}},
		{name: "History, one probe, window", want: []string{
			"SEARCH r USING INDEX results_probe_started_covering (probe=? AND started_at>? AND started_at<?)"}},
		{name: "History, one probe, one outcome", want: []string{
			"SEARCH r USING INDEX results_probe_outcome_started (probe=? AND outcome=?)"}},
		{name: "History, all probes", want: []string{"SCAN r USING INDEX results_started"}},
		{name: "History, all probes, window", want: []string{
			"SEARCH r USING INDEX results_started (started_at>? AND started_at<?)"}},
		{name: "History, one probe, one location", want: []string{
			"SEARCH r USING INDEX results_probe_location_started (probe=? AND location=?)"}},
		// The walk over probe names skips through the narrowest index
		// that leads with probe.
		{name: "Latest", query: latestResults, sorts: true, want: []string{
			"SEARCH results USING COVERING INDEX results_probe_location_started (probe>?)",
			"SEARCH results USING COVERING INDEX results_probe_started_covering (probe=?)",
			"SEARCH r USING INTEGER PRIMARY KEY (rowid=?)"}},
		{name: "Drifts, one probe", want: []string{
			"SEARCH drifts USING INDEX drifts_probe_detected (probe=? AND detected_at>?)"}},
		{name: "RecentRuns", query: recentRuns, args: []any{"p", 50}, want: []string{
			"SEARCH results USING COVERING INDEX results_probe_started_covering (probe=?)"}},
		{name: "Drifts, all probes", want: []string{"SEARCH drifts USING INDEX drifts_detected (detected_at>?)"}},
		{name: "LatestPassSamples", query: latestPassSample, args: []any{"p"}, want: []string{
			"SEARCH r USING INDEX results_probe_outcome_started (probe=? AND outcome=?)",
			"SEARCH s USING INDEX sqlite_autoindex_shapes_1 (fingerprint=?)"}},
		{name: "Stats, probe names", query: probeNames, want: []string{
			"SEARCH results USING COVERING INDEX results_probe_location_started (probe>?)"}},
		{name: "Stats, one probe", query: statsProbe, args: []any{"p", "2026-10-25T01", "2026-10-26T00",
			stored, "2026-10-25T01:00:00.000Z", "2026-10-26T00:00:00.000Z", "2026-10-26T00:07:00.000Z"}, want: []string{
			"SEARCH probe_hours USING PRIMARY KEY (probe=? AND hour>? AND hour<?)",
			"SEARCH results USING COVERING INDEX results_probe_started_covering (probe=? AND started_at>? AND started_at<?)"}},
		{name: "Stats, last run", query: statsLast, args: []any{"p", stored, "~"}, want: []string{
			"SEARCH results USING INDEX results_probe_started_covering (probe=? AND started_at>? AND started_at<?)"}},
		{name: "Stats, streak break", query: streakBreak, args: []any{"p", "pass", stored}, want: []string{
			"SEARCH results USING COVERING INDEX results_probe_outcome_started (probe=? AND outcome=? AND started_at<?)"}},
		{name: "Stats, streak start", query: streakStart, args: []any{"p", stored, 1}, want: []string{
			"SEARCH results USING COVERING INDEX results_probe_started_covering (probe=? AND started_at>?)"}},
		{name: "Stats, drifts", query: fmt.Sprintf(statsDrifts, "\nWHERE detected_at >= ? AND detected_at < ?"),
			args: []any{stored, "~"}, sorts: true, want: []string{
				"SEARCH drifts USING INDEX drifts_detected (detected_at>? AND detected_at<?)"}},
		{name: "view probe_summary_24h", query: "SELECT * FROM probe_summary_24h", sorts: true, want: []string{
			"SEARCH r USING COVERING INDEX results_probe_started_covering (probe=? AND started_at>?)"}},
		{name: "view latest_results", query: "SELECT * FROM latest_results", sorts: true, want: []string{
			"SEARCH results USING COVERING INDEX results_probe_started_covering (probe=?)"}},
		{name: "Prune results", query: pruneResults, args: []any{stored, 10}, want: []string{
			"SEARCH results USING COVERING INDEX results_started (started_at<?)",
			"SEARCH attempts USING COVERING INDEX sqlite_autoindex_attempts_1 (operation_id=?)"}},
		{name: "Prune alerts", query: pruneAlerts, args: []any{stored, 10}, want: []string{
			"SEARCH alerts USING INDEX alerts_done_created (created_at<?)"}},
		{name: "Prune drifts", query: pruneDrifts, args: []any{stored, 10}, want: []string{
			"SEARCH d USING COVERING INDEX drifts_detected (detected_at<?)",
			"SEARCH a USING INDEX alerts_drift (drift_id=?)"}},
		// The definitions are read from their index alone, never their
		// text; a scan of it finds the few left before the cutoff.
		{name: "Prune tool definitions", query: pruneToolDefinitions, args: []any{stored, 10}, want: []string{
			"SCAN td USING COVERING INDEX tool_definitions_last",
			"SEARCH tl USING COVERING INDEX tool_definitions_last (probe=?)",
			"SEARCH r USING COVERING INDEX results_tool (probe=? AND tool_fingerprint=?)"}},
	}
	fill := map[string]func() (string, []any){
		"History, one probe, limit 100": func() (string, []any) { return history(results.HistoryQuery{Probes: []string{"p"}, Limit: 100}) },
		"History, one probe, since":     func() (string, []any) { return history(results.HistoryQuery{Probes: []string{"p"}, Since: since}) },
		"History, one probe, window": func() (string, []any) {
			return history(results.HistoryQuery{Probes: []string{"p"}, Since: since, Until: since.Add(time.Hour)})
		},
		"History, all probes": func() (string, []any) { return history(results.HistoryQuery{}) },
		"History, all probes, window": func() (string, []any) {
			return history(results.HistoryQuery{Since: since, Until: since.Add(time.Hour)})
		},
		"History, one probe, one outcome": func() (string, []any) {
			return history(results.HistoryQuery{Probes: []string{"p"}, Outcomes: []results.Outcome{results.ContractError}})
		},
		"History, one probe, one location": func() (string, []any) {
			return history(results.HistoryQuery{Probes: []string{"p"}, Locations: []string{"eu-west"}})
		},
		"Drifts, one probe":  func() (string, []any) { return drifts("p") },
		"Drifts, all probes": func() (string, []any) { return drifts("") },
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f, ok := fill[tt.name]; ok {
				tt.query, tt.args = f()
			}
			plan := explain(t, s, tt.query, tt.args...)
			text := strings.Join(plan, "; ")
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("plan %q, want it to contain %q", text, w)
				}
			}
			for _, step := range plan {
				// A SCAN of a CTE or subquery (probes, bins...) reads
				// rows already narrowed down; a SCAN of a table reads it
				// all, except this one, newest first, stopped by LIMIT.
				fields := strings.Fields(step)
				scan := len(fields) > 1 && fields[0] == "SCAN" && tables[fields[1]] &&
					step != "SCAN r USING INDEX results_started"
				if scan || (!tt.sorts && strings.Contains(step, "TEMP B-TREE")) {
					t.Errorf("plan %q: step %q scans a table or sorts", text, step)
				}
			}
		})
	}
}

// tables are the tables that grow with history, and their aliases in the
// store's queries.
var tables = map[string]bool{
	"results": true, "r": true, "attempts": true, "drifts": true, "d": true,
	"alerts": true, "a": true, "shapes": true, "s": true,
}

func explain(t *testing.T, s *Store, query string, args ...any) []string {
	t.Helper()
	rows, err := s.reader.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}
