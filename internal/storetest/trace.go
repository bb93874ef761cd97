package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

// recordTraceID: the trace a run's requests carried (results.trace_id,
// SPEC §10.1) reads back from every read of results and with every alert
// about the run; an untraced run has none.
func recordTraceID(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	traced := passAfterRetry("op-traced")
	traced.TraceID = id
	recordRun(t, s, &results.RunRecord{Result: traced})
	failed := driftRun("op-failed")
	failed.Result.TraceID = "00f067aa0ba902b74bf92f3577b34da6"
	for i := range failed.Alerts {
		failed.Alerts[i].TraceID = failed.Result.TraceID
	}
	recordRun(t, s, failed)
	record(t, s, runAt("op-untraced", "q", t0, results.Pass, "", 1, 1))

	if got, err := s.Result(ctx, "op-traced"); err != nil || got.TraceID != id {
		t.Errorf("Result(op-traced): trace %q, %v; want %s", got.TraceID, err, id)
	}
	if got, err := s.Result(ctx, "op-untraced"); err != nil || got.TraceID != "" {
		t.Errorf("Result(op-untraced): trace %q, %v; want none", got.TraceID, err)
	}
	traces := func(rs []results.Result) map[string]string {
		out := map[string]string{}
		for _, r := range rs {
			out[r.OperationID] = r.TraceID
		}
		return out
	}
	want := map[string]string{"op-traced": id, "op-untraced": "", "op-failed": failed.Result.TraceID}
	history, err := s.History(ctx, results.HistoryQuery{})
	if err != nil || !reflect.DeepEqual(traces(history), want) {
		t.Errorf("History traces: %v, %v; want %v", traces(history), err, want)
	}
	latest, err := s.Latest(ctx) // each probe's newest run
	if err != nil || len(latest) != 2 {
		t.Errorf("Latest: %d runs, %v; want 2", len(latest), err)
	}
	for op, trace := range traces(latest) {
		if trace != want[op] {
			t.Errorf("Latest: %s has trace %q, want %q", op, trace, want[op])
		}
	}
	recorded, err := s.RecordedRuns(ctx, "")
	if err != nil || !reflect.DeepEqual(traces(recorded), want) {
		t.Errorf("RecordedRuns traces: %v, %v; want %v", traces(recorded), err, want)
	}
	due, err := s.DueAlerts(ctx, failed.Alerts[1].CreatedAt, 10)
	if err != nil || len(due) != 2 {
		t.Fatalf("DueAlerts: %d alerts, %v; want the run's 2", len(due), err)
	}
	for _, a := range append(due, storedAlerts(t, s)...) {
		if a.TraceID != failed.Result.TraceID {
			t.Errorf("alert %d (%s): trace %q, want the run's %s", a.ID, a.Kind, a.TraceID, failed.Result.TraceID)
		}
	}
}
