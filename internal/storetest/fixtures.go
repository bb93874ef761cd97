package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// t0 has millisecond precision, which is what a store must keep.
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

var driftDiff = []string{
	"next_cursor: removed (null)",
	"results: list<object(3 keys)> -> object(1 keys)",
}

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

// runAt is a run of probe started at at that ended in outcome (with code
// when it is not a pass), took ms milliseconds and made attempts attempts:
// every attempt but the last hit a 503.
func runAt(id, probe string, at time.Time, outcome results.Outcome, code results.Code, ms, attempts int) results.Result {
	r := results.Result{
		OperationID: id,
		Probe:       probe,
		Kind:        results.ProbeHTTP,
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

// mcpRun is a run of an MCP probe's tool that the server said it does
// not have.
func mcpRun(id string) results.Result {
	r := runAt(id, "weather_tool", t0.Add(2*time.Minute), results.ContractError, results.CodeToolMissing, 12, 1)
	r.Kind = results.ProbeMCP
	r.MCP = &results.MCPTarget{Tool: "get-weather", Server: "http://127.0.0.1:3901/mcp"}
	r.Shape, r.ResponseSample = nil, ""
	return r
}

// shapedRun is a pass of probe started at at, with a shape of fingerprint.
func shapedRun(id, probe, fingerprint string, at time.Time) results.Result {
	r := passAfterRetry(id)
	r.Probe = probe
	r.StartedAt = at
	for i := range r.Attempts {
		r.Attempts[i].StartedAt = at.Add(time.Duration(i) * 100 * time.Millisecond)
	}
	r.Shape = &results.Shape{Fingerprint: fingerprint, Canonical: "shape " + fingerprint}
	return r
}

// driftRun is a contract_error of external_search whose shape drifted from
// the list layout to the map layout: it carries the drift, the probe's new
// alert state and two pending alerts, firing and shape_drift.
func driftRun(id string) *results.RunRecord {
	r := contractError(id)
	detected := r.StartedAt.Add(50 * time.Millisecond)
	d := &results.Drift{Kind: results.DriftResponse, Probe: r.Probe, OperationID: id, DetectedAt: detected,
		Baseline: fpList, Current: fpMap, Diff: driftDiff}
	firing := results.NewAlert(results.AlertFiring, &r, detected)
	firing.FailingSince = r.StartedAt
	drift := results.NewAlert(results.AlertDrift, &r, detected)
	drift.Drift = d
	return &results.RunRecord{
		Result: r,
		Drift:  d,
		AlertState: &results.AlertState{Probe: r.Probe, ConsecutiveFailures: 1,
			FailingSince: r.StartedAt, Firing: true, LastNotifiedAt: detected},
		Alerts: []results.Alert{firing, drift},
	}
}

// alertRun is a run of probe (a weather timeout) carrying one alert of
// kind, created at the run's start plus created, in state.
func alertRun(id string, kind results.AlertKind, created time.Duration, state results.DeliveryState) *results.RunRecord {
	r := unavailable(id)
	if kind == results.AlertResolved {
		r = passAfterRetry(id)
		r.Probe = "weather"
	}
	a := results.NewAlert(kind, &r, r.StartedAt.Add(created))
	a.State = state
	if kind != results.AlertDrift {
		a.FailingSince = r.StartedAt.Add(-time.Hour)
	}
	return &results.RunRecord{Result: r, Alerts: []results.Alert{a}}
}

func recordRun(t testing.TB, s Store, rec *results.RunRecord) {
	t.Helper()
	if err := s.RecordRun(context.Background(), rec); err != nil {
		t.Fatalf("RecordRun(%s): %v", rec.Result.OperationID, err)
	}
}

func record(t testing.TB, s Store, rs ...results.Result) {
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

// dump prints a result with what its pointers point to.
func dump(r results.Result) string {
	s := fmt.Sprintf("%+v", r)
	if r.Error != nil {
		s += fmt.Sprintf(" Error=%+v", *r.Error)
	}
	if r.Shape != nil {
		s += fmt.Sprintf(" Shape=%+v", *r.Shape)
	}
	return s
}

// dueIDs returns the ids DueAlerts gives for now and limit, in order.
func dueIDs(t *testing.T, s Store, now time.Time, limit int) []int64 {
	t.Helper()
	due, err := s.DueAlerts(context.Background(), now, limit)
	if err != nil {
		t.Fatalf("DueAlerts(%v, %d): %v", now, limit, err)
	}
	ids := []int64{}
	for _, a := range due {
		ids = append(ids, a.ID)
	}
	return ids
}

func nextDue(t *testing.T, s Store) (time.Time, bool) {
	t.Helper()
	at, ok, err := s.NextAlertDue(context.Background())
	if err != nil {
		t.Fatalf("NextAlertDue: %v", err)
	}
	return at, ok
}

// storedAlerts returns every stored alert.
func storedAlerts(t *testing.T, s Store) []results.Alert {
	t.Helper()
	all, err := s.Alerts(context.Background())
	if err != nil {
		t.Fatalf("Alerts: %v", err)
	}
	return all
}

// permanent reports whether err says, with a Permanent() bool method
// somewhere in its chain, that retrying cannot succeed: what the runner's
// write queue looks for.
func permanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}
