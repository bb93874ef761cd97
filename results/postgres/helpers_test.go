package postgres_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// t0 has millisecond precision, which is what the store keeps.
var t0 = time.Date(2026, 10, 26, 13, 7, 0, 123_000_000, time.UTC)

var consumer = results.ConsumerRef{Name: "select_results", Version: "2", RuleHash: "9f86d081884c7d65"}

// passRun passed on its first attempt.
func passRun(id string) results.Result {
	return results.Result{
		OperationID: id,
		Probe:       "external_search",
		Kind:        results.ProbeHTTP,
		StartedAt:   t0,
		Duration:    41 * time.Millisecond,
		Outcome:     results.Pass,
		Attempts:    []results.Attempt{{Number: 1, StartedAt: t0, Duration: 41 * time.Millisecond, HTTPStatus: 200}},
		HTTPStatus:  200,
		Shape:       &results.Shape{Fingerprint: "b600aab8c56e2f2f", Canonical: "object{results:list<object{id:string}>}"},
		Consumer:    consumer,
	}
}

// failingRun is a contract error that fires an alert, with the probe's
// new alert state.
func failingRun(id string) *results.RunRecord {
	r := results.Result{
		OperationID: id,
		Probe:       "external_search",
		Kind:        results.ProbeHTTP,
		StartedAt:   t0.Add(time.Minute),
		Duration:    41 * time.Millisecond,
		Outcome:     results.ContractError,
		Error:       &results.Error{Code: "unsupported_results_container", Message: "results is map"},
		Attempts:    []results.Attempt{{Number: 1, StartedAt: t0.Add(time.Minute), Duration: 41 * time.Millisecond, HTTPStatus: 200}},
		HTTPStatus:  200,
		Consumer:    consumer,
	}
	firing := results.NewAlert(results.AlertFiring, &r, r.StartedAt.Add(time.Second))
	firing.FailingSince = r.StartedAt
	return &results.RunRecord{Result: r,
		AlertState: &results.AlertState{Probe: r.Probe, ConsecutiveFailures: 1, FailingSince: r.StartedAt, Firing: true},
		Alerts:     []results.Alert{firing}}
}

// newStore opens a store on a database of its own and returns it with
// the database's DSN.
func newStore(t *testing.T) (*postgres.Store, string) {
	t.Helper()
	dsn := pgtest.Database(t)
	return openStore(t, dsn), dsn
}

// count runs a query of one integer with psql.
func count(t *testing.T, dsn, query string) int {
	t.Helper()
	out := pgtest.Exec(t, dsn, query)
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("%s: %q is not a number", query, out)
	}
	return n
}

// recordBatch records recs in one transaction of s's writer: each is
// queued only once the one before it is, and the writer waits for all of
// them. It returns RecordRun's error for each.
func recordBatch(t *testing.T, s *postgres.Store, recs []*results.RunRecord) []error {
	t.Helper()
	postgres.HoldWriter(s, len(recs))
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, rec := range recs {
		wg.Go(func() { errs[i] = s.RecordRun(context.Background(), rec) })
		if i < len(recs)-1 {
			deadline := time.Now().Add(5 * time.Second)
			for postgres.Queued(s) < i+1 {
				if time.Now().After(deadline) {
					t.Fatalf("%d runs queued after 5s, want %d", postgres.Queued(s), i+1)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	wg.Wait()
	return errs
}
