package main

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
)

//go:embed queries.sql
var explainedQueries string

const queryMarker = "-- query: "

// namedQuery is one query of queries.sql.
type namedQuery struct {
	Name, SQL string
}

// parseQueries splits queries.sql at its "-- query:" lines; what comes
// before the first is its header.
func parseQueries(text string) ([]namedQuery, error) {
	var out []namedQuery
	for i, part := range strings.Split(text, "\n"+queryMarker) {
		if i == 0 {
			continue
		}
		name, body, _ := strings.Cut(part, "\n")
		sql := strings.TrimSuffix(strings.TrimSpace(body), ";")
		if name == "" || sql == "" {
			return nil, fmt.Errorf("queries.sql: query %d has no name or no SQL", i)
		}
		out = append(out, namedQuery{Name: strings.TrimSpace(name), SQL: sql})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("queries.sql holds no query")
	}
	return out, nil
}

// explainPlans has the sqlite3 shell explain every query of queries.sql
// on db.
func explainPlans(ctx context.Context, db string) ([]plan, error) {
	queries, err := parseQueries(explainedQueries)
	if err != nil {
		return nil, err
	}
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
