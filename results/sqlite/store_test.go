package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

func TestRecordRoundTrip(t *testing.T) {
	emptyBody := contractError("op-empty-body")
	emptyBody.Error = &results.Error{Code: results.CodeInvalidJSON, Message: "empty body"}
	emptyBody.Attempts[0].HTTPStatus = 204
	emptyBody.HTTPStatus = 204
	emptyBody.Shape = nil
	emptyBody.ResponseSample = ""

	passWithSample := passAfterRetry("op-pass-sample")
	passWithSample.ResponseSample = `{"results":[]}`

	// An answer outside its probe's profile is stored with its drift lines.
	drifted := contractError("op-drifted")
	drifted.Shape.Baseline = fpList
	drifted.Shape.Drift = []string{"results: list<object(3 keys)> -> object(1 keys)", "next_cursor: null -> string"}

	tests := []struct {
		name string
		in   results.Result
		want func(*results.Result) // changes from in to what comes back; nil: none
		row  map[string]any        // the results row, id excluded
		atts []map[string]any      // the attempts rows in order
	}{
		{
			name: "pass after a retry",
			in:   passAfterRetry("op-pass"),
			row: map[string]any{
				"operation_id": "op-pass", "probe": "external_search", "started_at": "2026-10-26T13:07:00.123Z",
				"duration_ms": int64(221), "outcome": "pass", "code": nil, "message": nil, "retryable": int64(0),
				"attempts": int64(2), "http_status": int64(200), "selected_count": int64(3), "validated_count": int64(3),
				"shape_fingerprint": fpList, "consumer": "select_results", "consumer_version": "2",
				"rule_hash": "9f86d081884c7d65", "response_sample": nil,
			},
			atts: []map[string]any{
				{"operation_id": "op-pass", "number": int64(1), "started_at": "2026-10-26T13:07:00.123Z", "duration_ms": int64(30),
					"http_status": int64(503), "code": "server_error", "message": "HTTP 503 Service Unavailable", "wait_ms": int64(150)},
				{"operation_id": "op-pass", "number": int64(2), "started_at": "2026-10-26T13:07:00.303Z", "duration_ms": int64(41),
					"http_status": int64(200), "code": nil, "message": nil, "wait_ms": int64(0)},
			},
		},
		{
			name: "a traced run keeps its trace id",
			in: func() results.Result {
				r := passAfterRetry("op-trace")
				r.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
				return r
			}(),
			row: map[string]any{
				"operation_id": "op-trace", "probe": "external_search", "started_at": "2026-10-26T13:07:00.123Z",
				"duration_ms": int64(221), "outcome": "pass", "code": nil, "message": nil, "retryable": int64(0),
				"attempts": int64(2), "http_status": int64(200), "selected_count": int64(3), "validated_count": int64(3),
				"shape_fingerprint": fpList, "consumer": "select_results", "consumer_version": "2",
				"rule_hash": "9f86d081884c7d65", "response_sample": nil, "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
			},
			atts: []map[string]any{
				{"operation_id": "op-trace", "number": int64(1), "started_at": "2026-10-26T13:07:00.123Z", "duration_ms": int64(30),
					"http_status": int64(503), "code": "server_error", "message": "HTTP 503 Service Unavailable", "wait_ms": int64(150)},
				{"operation_id": "op-trace", "number": int64(2), "started_at": "2026-10-26T13:07:00.303Z", "duration_ms": int64(41),
					"http_status": int64(200), "code": nil, "message": nil, "wait_ms": int64(0)},
			},
		},
		{
			name: "a daemon's run keeps its node",
			in:   func() results.Result { r := passAfterRetry("op-node"); r.Node = "web-1"; return r }(),
			row: map[string]any{
				"operation_id": "op-node", "probe": "external_search", "started_at": "2026-10-26T13:07:00.123Z",
				"duration_ms": int64(221), "outcome": "pass", "code": nil, "message": nil, "retryable": int64(0),
				"attempts": int64(2), "http_status": int64(200), "selected_count": int64(3), "validated_count": int64(3),
				"shape_fingerprint": fpList, "consumer": "select_results", "consumer_version": "2",
				"rule_hash": "9f86d081884c7d65", "response_sample": nil, "node": "web-1",
			},
			atts: []map[string]any{
				{"operation_id": "op-node", "number": int64(1), "started_at": "2026-10-26T13:07:00.123Z", "duration_ms": int64(30),
					"http_status": int64(503), "code": "server_error", "message": "HTTP 503 Service Unavailable", "wait_ms": int64(150)},
				{"operation_id": "op-node", "number": int64(2), "started_at": "2026-10-26T13:07:00.303Z", "duration_ms": int64(41),
					"http_status": int64(200), "code": nil, "message": nil, "wait_ms": int64(0)},
			},
		},
		{
			name: "pass keeps no response sample",
			in:   passWithSample,
			want: func(r *results.Result) { r.ResponseSample = "" },
			row: map[string]any{
				"operation_id": "op-pass-sample", "probe": "external_search", "started_at": "2026-10-26T13:07:00.123Z",
				"duration_ms": int64(221), "outcome": "pass", "code": nil, "message": nil, "retryable": int64(0),
				"attempts": int64(2), "http_status": int64(200), "selected_count": int64(3), "validated_count": int64(3),
				"shape_fingerprint": fpList, "consumer": "select_results", "consumer_version": "2",
				"rule_hash": "9f86d081884c7d65", "response_sample": nil,
			},
			atts: []map[string]any{
				{"operation_id": "op-pass-sample", "number": int64(1), "started_at": "2026-10-26T13:07:00.123Z", "duration_ms": int64(30),
					"http_status": int64(503), "code": "server_error", "message": "HTTP 503 Service Unavailable", "wait_ms": int64(150)},
				{"operation_id": "op-pass-sample", "number": int64(2), "started_at": "2026-10-26T13:07:00.303Z", "duration_ms": int64(41),
					"http_status": int64(200), "code": nil, "message": nil, "wait_ms": int64(0)},
			},
		},
		{
			name: "contract_error",
			in:   contractError("op-contract"),
			row: map[string]any{
				"operation_id": "op-contract", "probe": "external_search", "started_at": "2026-10-26T13:08:00.123Z",
				"duration_ms": int64(41), "outcome": "contract_error", "code": "unsupported_results_container",
				"message": "results is map", "retryable": int64(0), "attempts": int64(1), "http_status": int64(200),
				"selected_count": int64(0), "validated_count": int64(0), "shape_fingerprint": fpMap,
				"consumer": "select_results", "consumer_version": "2", "rule_hash": "9f86d081884c7d65",
				"response_sample": `{"results":{"items":[]}}`,
			},
			atts: []map[string]any{
				{"operation_id": "op-contract", "number": int64(1), "started_at": "2026-10-26T13:08:00.123Z", "duration_ms": int64(41),
					"http_status": int64(200), "code": nil, "message": nil, "wait_ms": int64(0)},
			},
		},
		{
			name: "drifted answer",
			in:   drifted,
			row: map[string]any{
				"operation_id": "op-drifted", "probe": "external_search", "started_at": "2026-10-26T13:08:00.123Z",
				"duration_ms": int64(41), "outcome": "contract_error", "code": "unsupported_results_container",
				"message": "results is map", "retryable": int64(0), "attempts": int64(1), "http_status": int64(200),
				"selected_count": int64(0), "validated_count": int64(0), "shape_fingerprint": fpMap,
				"consumer": "select_results", "consumer_version": "2", "rule_hash": "9f86d081884c7d65",
				"response_sample": `{"results":{"items":[]}}`, "shape_baseline": fpList,
				"shape_drift": "results: list<object(3 keys)> -> object(1 keys)\nnext_cursor: null -> string",
			},
			atts: []map[string]any{
				{"operation_id": "op-drifted", "number": int64(1), "started_at": "2026-10-26T13:08:00.123Z", "duration_ms": int64(41),
					"http_status": int64(200), "code": nil, "message": nil, "wait_ms": int64(0)},
			},
		},
		{
			name: "contract_error with an empty body keeps an empty sample",
			in:   emptyBody,
			row: map[string]any{
				"operation_id": "op-empty-body", "probe": "external_search", "started_at": "2026-10-26T13:08:00.123Z",
				"duration_ms": int64(41), "outcome": "contract_error", "code": "invalid_json",
				"message": "empty body", "retryable": int64(0), "attempts": int64(1), "http_status": int64(204),
				"selected_count": int64(0), "validated_count": int64(0), "shape_fingerprint": nil,
				"consumer": "select_results", "consumer_version": "2", "rule_hash": "9f86d081884c7d65",
				"response_sample": "",
			},
			atts: []map[string]any{
				{"operation_id": "op-empty-body", "number": int64(1), "started_at": "2026-10-26T13:08:00.123Z", "duration_ms": int64(41),
					"http_status": int64(204), "code": nil, "message": nil, "wait_ms": int64(0)},
			},
		},
		{
			name: "unavailable without any response",
			in:   unavailable("op-unavailable"),
			row: map[string]any{
				"operation_id": "op-unavailable", "probe": "weather", "started_at": "2026-10-26T13:09:00.123Z",
				"duration_ms": int64(15600), "outcome": "unavailable", "code": "timeout",
				"message": "no response within 5s (3 attempts)", "retryable": int64(1), "attempts": int64(3),
				"http_status": nil, "selected_count": int64(0), "validated_count": int64(0), "shape_fingerprint": nil,
				"consumer": "weather_items", "consumer_version": "1", "rule_hash": "2c26b46b68ffc68f",
				"response_sample": nil,
			},
			atts: []map[string]any{
				{"operation_id": "op-unavailable", "number": int64(1), "started_at": "2026-10-26T13:09:00.123Z", "duration_ms": int64(5000),
					"http_status": nil, "code": "timeout", "message": "no response within 5s", "wait_ms": int64(200)},
				{"operation_id": "op-unavailable", "number": int64(2), "started_at": "2026-10-26T13:09:05.323Z", "duration_ms": int64(5000),
					"http_status": nil, "code": "timeout", "message": "no response within 5s", "wait_ms": int64(400)},
				{"operation_id": "op-unavailable", "number": int64(3), "started_at": "2026-10-26T13:09:10.723Z", "duration_ms": int64(5000),
					"http_status": nil, "code": "timeout", "message": "no response within 5s", "wait_ms": int64(0)},
			},
		},
	}

	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := newStore(t)
			if err := s.Record(ctx, tt.in); err != nil {
				t.Fatalf("Record: %v", err)
			}

			got, err := s.Result(ctx, tt.in.OperationID)
			if err != nil {
				t.Fatalf("Result: %v", err)
			}
			want := tt.in
			if tt.want != nil {
				tt.want(&want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Result round trip:\n got  %s\n want %s", dump(got), dump(want))
			}

			op := operatorDB(t, path, "mode=ro")
			rows := queryMaps(t, op, "SELECT * FROM results")
			if len(rows) != 1 {
				t.Fatalf("results rows: got %d, want 1", len(rows))
			}
			if id, ok := rows[0]["id"].(int64); !ok || id < 1 {
				t.Errorf("results.id: got %v, want a positive integer", rows[0]["id"])
			}
			delete(rows[0], "id")
			for _, c := range []string{"shape_baseline", "shape_drift", "mcp_tool", "mcp_server", "tool_fingerprint", "step", "node", "trace_id"} {
				if _, ok := tt.row[c]; !ok {
					tt.row[c] = nil // an answer that did not drift, of an HTTP probe that check recorded
				}
			}
			for _, a := range tt.atts {
				for _, c := range []string{"method", "try", "poll", "step"} {
					if _, ok := a[c]; !ok {
						a[c] = nil // an HTTP attempt without a try of its own
					}
				}
			}
			if _, ok := tt.row["kind"]; !ok {
				tt.row["kind"] = "http"
			}
			if _, ok := tt.row["location"]; !ok {
				tt.row["location"] = results.DefaultLocation // a run of a single instance, or one check recorded
			}
			if !reflect.DeepEqual(rows[0], tt.row) {
				t.Errorf("results row:\n got  %v\n want %v", rows[0], tt.row)
			}
			atts := queryMaps(t, op, "SELECT * FROM attempts ORDER BY number")
			if !reflect.DeepEqual(atts, tt.atts) {
				t.Errorf("attempts rows:\n got  %v\n want %v", atts, tt.atts)
			}

			shapes := queryMaps(t, op, "SELECT * FROM shapes")
			var wantShapes []map[string]any
			if sh := tt.in.Shape; sh != nil {
				at := results.FormatTime(tt.in.StartedAt)
				wantShapes = []map[string]any{{"fingerprint": sh.Fingerprint, "canonical": sh.Canonical,
					"first_seen": at, "last_seen": at, "seen_count": int64(1), "sample": nil}}
			}
			if !reflect.DeepEqual(shapes, wantShapes) {
				t.Errorf("shapes rows:\n got  %v\n want %v", shapes, wantShapes)
			}
		})
	}
}

// dump prints a result with its pointers followed, for failure messages.
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

func TestShapeSeenCountAndWindow(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	// Recorded out of order, as concurrent runs finish.
	for i, at := range []time.Duration{time.Hour, 0, 2 * time.Hour, 30 * time.Minute} {
		r := passAfterRetry(fmt.Sprintf("op-%d", i))
		r.StartedAt = t0.Add(at)
		if err := s.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got := queryMaps(t, operatorDB(t, path, "mode=ro"), "SELECT fingerprint, first_seen, last_seen, seen_count FROM shapes")
	want := []map[string]any{{"fingerprint": fpList, "first_seen": "2026-10-26T13:07:00.123Z",
		"last_seen": "2026-10-26T15:07:00.123Z", "seen_count": int64(4)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shapes:\n got  %v\n want %v", got, want)
	}
}

func TestRecordDuplicateOperationID(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	first := contractError("op-1")
	if err := s.Record(ctx, first); err != nil {
		t.Fatal(err)
	}

	// Same id, different content: must not overwrite, nor count the shape.
	second := passAfterRetry("op-1")
	err := s.Record(ctx, second)
	if !errors.Is(err, sqlite.ErrDuplicate) {
		t.Fatalf("second Record: got %v, want ErrDuplicate", err)
	}
	if !strings.Contains(err.Error(), "op-1") {
		t.Errorf("error %q does not name the operation", err)
	}

	got, err := s.Result(ctx, "op-1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, first) {
		t.Errorf("stored result changed:\n got  %s\n want %s", dump(got), dump(first))
	}
	op := operatorDB(t, path, "mode=ro")
	if n := count(t, op, "SELECT count(*) FROM attempts"); n != 1 {
		t.Errorf("attempts rows: got %d, want 1", n)
	}
	if n := count(t, op, "SELECT count(*) FROM shapes"); n != 1 {
		t.Errorf("shapes rows: got %d, want 1 (the duplicate's shape was kept)", n)
	}
}

// TestRecordAllOrNothing makes the last statement of Record fail and checks
// that nothing of the result, its earlier attempts or its shape remains.
func TestRecordAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	r := passAfterRetry("op-1")
	r.Attempts[1].Number = 1 // attempts' primary key is (operation_id, number)
	err := s.Record(ctx, r)
	if err == nil {
		t.Fatal("Record with two attempts numbered 1: got nil error")
	}
	if errors.Is(err, sqlite.ErrDuplicate) {
		t.Errorf("got ErrDuplicate for a duplicate attempt number: %v", err)
	}
	op := operatorDB(t, path, "mode=ro")
	for _, table := range []string{"results", "attempts", "shapes"} {
		if n := count(t, op, "SELECT count(*) FROM "+table); n != 0 {
			t.Errorf("%s rows after a failed Record: got %d, want 0", table, n)
		}
	}
	if _, err := s.Result(ctx, "op-1"); !errors.Is(err, sqlite.ErrNotFound) {
		t.Errorf("Result after a failed Record: got %v, want ErrNotFound", err)
	}
	// The writer is usable again: the failed transaction was rolled back.
	if err := s.Record(ctx, passAfterRetry("op-1")); err != nil {
		t.Errorf("Record after a failed Record: %v", err)
	}
}

func TestRecordRefusesInvalidResults(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*results.Result)
		want   string
	}{
		{"empty operation id", func(r *results.Result) { r.OperationID = "" }, "empty operation_id"},
		{"empty probe", func(r *results.Result) { r.Probe = "" }, "empty probe"},
		{"unknown outcome", func(r *results.Result) { r.Outcome = "flaky" }, `unknown outcome "flaky"`},
		{"zero start", func(r *results.Result) { r.StartedAt = time.Time{} }, "zero started_at"},
		{"pass with an error", func(r *results.Result) { r.Outcome = results.Pass }, "outcome pass with error"},
		{"failure without an error", func(r *results.Result) { r.Error = nil }, "outcome contract_error without an error"},
		{"failure with an empty code", func(r *results.Result) { r.Error.Code = "" }, "empty code"},
		{"shape without canonical", func(r *results.Result) { r.Shape.Canonical = "" }, "shape without fingerprint or canonical"},
		{"attempt number 0", func(r *results.Result) { r.Attempts[0].Number = 0 }, "number 0"},
	}
	ctx := context.Background()
	s, path := newStore(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := contractError("op-invalid")
			tt.mutate(&r)
			err := s.Record(ctx, r)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Record: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if n := count(t, operatorDB(t, path, "mode=ro"), "SELECT count(*) FROM results"); n != 0 {
		t.Errorf("results rows: got %d, want 0", n)
	}
}
