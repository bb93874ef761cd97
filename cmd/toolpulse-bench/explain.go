package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolpulse/toolpulse/results/sqlite"
)

// explainPlans has the sqlite3 shell explain, on db, every query the
// store runs behind stats, history and the probes API: the store's own SQL
// (sqlite.OperatorQueries), not a copy.
func explainPlans(ctx context.Context, db string) ([]plan, error) {
	queries := sqlite.OperatorQueries()
	out := make([]plan, 0, len(queries))
	for _, q := range queries {
		text, err := querySQLite(ctx, db, nil, "EXPLAIN QUERY PLAN "+q.SQL+";\n")
		if err != nil {
			return nil, fmt.Errorf("explain %s: %w", q.Name, err)
		}
		out = append(out, plan{Name: q.Name, SQL: q.SQL, Plan: strings.TrimRight(text, "\n")})
	}
	return out, nil
}
