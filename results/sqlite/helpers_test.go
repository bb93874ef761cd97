package sqlite_test

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// t0 has millisecond precision, which is what the store keeps.
var t0 = time.Date(2026, 10, 26, 13, 7, 0, 123_000_000, time.UTC)

const (
	fpList = "b600aab8c56e2f2f"
	fpMap  = "0f3c9a2d71e4b8a5"
)

func listShape() *results.Shape {
	return &results.Shape{Fingerprint: fpList, Canonical: "object(2 keys){next_cursor:null,results:list<object(3 keys){id:string,score:number,title:string}>}"}
}

func mapShape() *results.Shape {
	return &results.Shape{Fingerprint: fpMap, Canonical: "object(1 keys){results:object(1 keys){items:list<empty>}}"}
}

var consumer = results.ConsumerRef{Name: "select_results", Version: "2", RuleHash: "9f86d081884c7d65"}

// passAfterRetry passed on its second attempt, after a 503.
func passAfterRetry(id string) results.Result {
	return results.Result{
		OperationID: id,
		Probe:       "external_search",
		Kind:        results.ProbeHTTP,
		StartedAt:   t0,
		Duration:    221 * time.Millisecond,
		Outcome:     results.Pass,
		Attempts: []results.Attempt{
			{Number: 1, StartedAt: t0, Duration: 30 * time.Millisecond, HTTPStatus: 503,
				Code: results.CodeServerError, Message: "HTTP 503 Service Unavailable", Wait: 150 * time.Millisecond},
			{Number: 2, StartedAt: t0.Add(180 * time.Millisecond), Duration: 41 * time.Millisecond, HTTPStatus: 200},
		},
		HTTPStatus:     200,
		SelectedCount:  3,
		ValidatedCount: 3,
		Shape:          listShape(),
		Consumer:       consumer,
	}
}

// contractError got a 200 whose results were a map.
func contractError(id string) results.Result {
	return results.Result{
		OperationID: id,
		Probe:       "external_search",
		Kind:        results.ProbeHTTP,
		StartedAt:   t0.Add(time.Minute),
		Duration:    41 * time.Millisecond,
		Outcome:     results.ContractError,
		Error:       &results.Error{Code: "unsupported_results_container", Message: "results is map"},
		Attempts: []results.Attempt{
			{Number: 1, StartedAt: t0.Add(time.Minute), Duration: 41 * time.Millisecond, HTTPStatus: 200},
		},
		HTTPStatus:     200,
		Shape:          mapShape(),
		Consumer:       consumer,
		ResponseSample: `{"results":{"items":[]}}`,
	}
}

// unavailable timed out three times and never got a response.
func unavailable(id string) results.Result {
	start := t0.Add(2 * time.Minute)
	attempt := func(n int, at time.Duration, wait time.Duration) results.Attempt {
		return results.Attempt{Number: n, StartedAt: start.Add(at), Duration: 5 * time.Second,
			Code: results.CodeTimeout, Message: "no response within 5s", Wait: wait}
	}
	return results.Result{
		OperationID: id,
		Probe:       "weather",
		Kind:        results.ProbeHTTP,
		StartedAt:   start,
		Duration:    15*time.Second + 600*time.Millisecond,
		Outcome:     results.Unavailable,
		Error:       &results.Error{Code: results.CodeTimeout, Message: "no response within 5s (3 attempts)", Retryable: true},
		Attempts: []results.Attempt{
			attempt(1, 0, 200*time.Millisecond),
			attempt(2, 5200*time.Millisecond, 400*time.Millisecond),
			attempt(3, 10600*time.Millisecond, 0),
		},
		Consumer: results.ConsumerRef{Name: "weather_items", Version: "1", RuleHash: "2c26b46b68ffc68f"},
	}
}

func openStore(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func newStore(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	return openStore(t, path), path
}

// operatorDB opens path the way an operator's sqlite3 session would: a
// separate connection that knows nothing of the store's settings.
func operatorDB(t testing.TB, path, params string) *sql.DB {
	t.Helper()
	u := url.URL{Path: path}
	db, err := sql.Open("sqlite3", "file:"+u.EscapedPath()+"?"+params)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// queryMaps runs query and returns each row as column name -> value, with
// NULL as nil, integers as int64 and text as string.
func queryMaps(t testing.TB, db interface {
	Query(string, ...any) (*sql.Rows, error)
}, query string, args ...any) []map[string]any {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		for i, c := range cols {
			if b, ok := vals[i].([]byte); ok {
				vals[i] = string(b)
			}
			m[c] = vals[i]
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t testing.TB, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
