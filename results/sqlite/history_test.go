package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// runAt is a run of probe started at at that ended in outcome (with code
// when it is not a pass), took ms milliseconds and made attempts attempts:
// every attempt but the last hit a 503.
func runAt(id, probe string, at time.Time, outcome results.Outcome, code results.Code, ms, attempts int) results.Result {
	r := results.Result{
		OperationID: id,
		Probe:       probe,
		StartedAt:   at,
		Duration:    time.Duration(ms) * time.Millisecond,
		Outcome:     outcome,
		Consumer:    consumer,
	}
	for n := 1; n <= attempts; n++ {
		a := results.Attempt{Number: n, StartedAt: at.Add(time.Duration(n-1) * 10 * time.Millisecond),
			Duration: time.Millisecond, HTTPStatus: 200}
		if n < attempts {
			a.HTTPStatus, a.Code, a.Message, a.Wait = 503, results.CodeServerError, "HTTP 503", time.Millisecond
		} else if outcome == results.Unavailable {
			a.HTTPStatus, a.Code, a.Message = 0, code, "no response"
		}
		r.Attempts = append(r.Attempts, a)
	}
	switch outcome {
	case results.Pass:
		r.HTTPStatus, r.SelectedCount, r.ValidatedCount, r.Shape = 200, 1, 1, listShape()
	case results.ContractError:
		r.Error = &results.Error{Code: code, Message: "contract broken"}
		r.HTTPStatus, r.Shape, r.ResponseSample = 200, mapShape(), `{"results":{}}`
	case results.Unavailable:
		r.Error = &results.Error{Code: code, Message: "no response", Retryable: code.Retryable()}
	}
	return r
}

func record(t testing.TB, s *sqlite.Store, rs ...results.Result) {
	t.Helper()
	for _, r := range rs {
		if err := s.Record(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

func ids(rs []results.Result) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.OperationID)
	}
	return out
}
