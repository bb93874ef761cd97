package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// handoverRun is a run that drifted, fired, learned a profile and listed a
// tool definition, written as a handover.
func handoverRun(id string) *results.RunRecord {
	rec := failingRun(id)
	r := &rec.Result
	r.Shape = &results.Shape{Fingerprint: "c3a1f0e2d4b5a697", Canonical: "object{results:object{}}",
		Profile: &results.ProfileUpdate{Data: `{"paths":{}}`, Answers: 1}}
	d := &results.Drift{Kind: results.DriftResponse, Probe: r.Probe, OperationID: id, DetectedAt: r.StartedAt,
		Baseline: "b600aab8c56e2f2f", Current: "c3a1f0e2d4b5a697", Diff: []string{"results: list -> object"}}
	rec.Drift = d
	drift := results.NewAlert(results.AlertDrift, r, r.StartedAt)
	drift.Drift = d
	rec.Alerts = append(rec.Alerts, drift)
	rec.Handover = true
	return rec
}

// TestHandover: a handover stores the run's history (result, attempts,
// shape counted, its hour in probe_hours) and nothing a leader decides
// from it (drift, alert state, alerts, profile); a second handover of the
// same operation, or one of an operation a leader already stored,
// succeeds and changes nothing.
func TestHandover(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	rec := handoverRun("op-1")
	if err := s.RecordRun(ctx, rec); err != nil {
		t.Fatalf("handover: %v", err)
	}
	for _, a := range rec.Alerts {
		if a.ID != 0 {
			t.Errorf("a handover's alert got ID %d; none is stored", a.ID)
		}
	}
	for query, want := range map[string]int{
		`SELECT count(*) FROM results WHERE handover AND epoch = 0`: 1,
		`SELECT count(*) FROM attempts`:                             1,
		`SELECT sum(runs) FROM probe_hours`:                         1,
		`SELECT sum(runs) FROM shape_counts`:                        1,
		`SELECT count(*) FROM drifts`:                               0,
		`SELECT count(*) FROM alerts`:                               0,
		`SELECT count(*) FROM alert_state`:                          0,
		`SELECT count(*) FROM shape_profiles`:                       0,
	} {
		if got := count(t, dsn, query); got != want {
			t.Errorf("after a handover, %s: %d, want %d", query, got, want)
		}
	}
	got, err := s.Result(ctx, "op-1")
	if err != nil || got.OperationID != "op-1" || got.Outcome != results.ContractError {
		t.Errorf("Result of the handover: %+v, %v", got, err)
	}

	before := contents(t, dsn)
	if err := s.RecordRun(ctx, handoverRun("op-1")); err != nil {
		t.Errorf("the same handover again: %v, want nil", err)
	}
	if after := contents(t, dsn); !slices.Equal(after, before) {
		t.Errorf("a second handover changed the store:\n got  %q\n want %q", after, before)
	}

	// A leader stored op-2; its node's handover of it changes nothing.
	if err := s.RecordRun(ctx, failingRun("op-2")); err != nil {
		t.Fatal(err)
	}
	before = contents(t, dsn)
	if err := s.RecordRun(ctx, handoverRun("op-2")); err != nil {
		t.Errorf("handover of an operation a leader stored: %v, want nil", err)
	}
	if after := contents(t, dsn); !slices.Equal(after, before) {
		t.Errorf("a handover of a stored operation changed the store:\n got  %q\n want %q", after, before)
	}

	// In one batch with other runs, as a queue drained after an outage
	// is: the stored one is skipped without costing the others anything.
	commits, runs := postgres.Commits(s)
	errs := recordBatch(t, s, []*results.RunRecord{handoverRun("op-3"), handoverRun("op-2"), failingRun("op-4")})
	if !slices.Equal(errs, []error{nil, nil, nil}) {
		t.Errorf("a batch of handovers, one stored already, and a run: %v, want every one nil", errs)
	}
	if c, r := postgres.Commits(s); c-commits != 1 || r-runs != 3 {
		t.Errorf("the batch took %d commits for %d runs, want 1 for 3", c-commits, r-runs)
	}
	if n := count(t, dsn, `SELECT count(*) FROM results WHERE operation_id IN ('op-2', 'op-3', 'op-4') AND handover = (operation_id = 'op-3')`); n != 3 {
		t.Errorf("%d of op-2 (a leader's), op-3 (a handover) and op-4 (a leader's) stored as such, want 3", n)
	}
}

// TestRetryAfterLostCommit: a RecordRun retried after its COMMIT
// succeeded but its answer was lost (here: the same record, recorded
// twice) succeeds with the stored alerts' IDs and stores nothing twice;
// another node's run, or another start, under that operation id is still
// a duplicate.
func TestRetryAfterLostCommit(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	first := failingRun("op-1")
	first.Result.Node = "node-a"
	if err := s.RecordRun(ctx, first); err != nil {
		t.Fatal(err)
	}
	before := contents(t, dsn)

	retry := failingRun("op-1")
	retry.Result.Node = "node-a"
	if err := s.RecordRun(ctx, retry); err != nil {
		t.Fatalf("retry of a stored RecordRun: %v, want nil", err)
	}
	if retry.Alerts[0].ID != first.Alerts[0].ID {
		t.Errorf("retry's alert ID %d, want the stored alert's %d", retry.Alerts[0].ID, first.Alerts[0].ID)
	}
	if after := contents(t, dsn); !slices.Equal(after, before) {
		t.Errorf("the retry changed the store:\n got  %q\n want %q", after, before)
	}

	other := failingRun("op-1")
	other.Result.Node = "node-b"
	later := failingRun("op-1")
	later.Result.Node = "node-a"
	later.Result.StartedAt = later.Result.StartedAt.Add(time.Second)
	later.Result.Attempts[0].StartedAt = later.Result.StartedAt
	unnamed := failingRun("op-1")
	for name, rec := range map[string]*results.RunRecord{"another node": other, "another start": later, "no node": unnamed} {
		err := s.RecordRun(ctx, rec)
		if !errors.Is(err, postgres.ErrDuplicate) || !postgres.Permanent(err) {
			t.Errorf("%s: %v, want ErrDuplicate, permanent", name, err)
		}
		if rec.Alerts[0].ID != 0 {
			t.Errorf("%s: refused, but alert ID set to %d", name, rec.Alerts[0].ID)
		}
	}
	if after := contents(t, dsn); !slices.Equal(after, before) {
		t.Errorf("duplicates changed the store:\n got  %q\n want %q", after, before)
	}
}
