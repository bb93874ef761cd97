package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// faultStore is the real store, a SQLite file in the test's temporary
// directory, with a way to make it fail: the runner's tests run on what
// the daemon runs on in production, and read back what was committed.
// It counts calls per method and, when told to, fails any method of
// Store before the real store sees the call. The store's own behaviour
// is held to its contract in internal/storetest.
type faultStore struct {
	*sqlite.Store
	tb testing.TB

	mu    sync.Mutex
	calls map[string]int
	// fail, when set, is consulted at the start of every method of Store
	// with its name; a non-nil error is returned instead of doing the
	// work.
	fail func(method string) error
	// hook, when set, sees every record RecordRun is given, before fail;
	// a non-nil error is returned instead of storing it.
	hook func(rec *results.RunRecord) error
	// onMark, when set, is called after every Mark* method that
	// succeeded, with its name.
	onMark func(method string, id int64)

	seeded atomic.Int64 // runs written by enqueue and the seed helpers
}

var _ Store = (*faultStore)(nil)

// newTestStore opens a store in tb's temporary directory; tb's cleanup
// closes it.
func newTestStore(tb testing.TB) *faultStore {
	tb.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "toolpulse.db"))
	if err != nil {
		tb.Fatalf("open the store: %v", err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("close the store: %v", err)
		}
	})
	return &faultStore{Store: st, tb: tb, calls: map[string]int{}}
}

// enter counts the call and returns the injected failure, if any.
func (s *faultStore) enter(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
	if s.fail != nil {
		return s.fail(method)
	}
	return nil
}

// callCount returns how often method was called.
func (s *faultStore) callCount(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// resetCalls zeroes every call count.
func (s *faultStore) resetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = map[string]int{}
}

// setFail replaces the failure hook.
func (s *faultStore) setFail(f func(method string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = f
}

// setHook replaces the record hook.
func (s *faultStore) setHook(f func(rec *results.RunRecord) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = f
}

// setOnMark replaces the mark hook.
func (s *faultStore) setOnMark(f func(method string, id int64)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onMark = f
}

func (s *faultStore) RecordRun(ctx context.Context, rec *results.RunRecord) error {
	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(rec); err != nil {
			return err
		}
	}
	if err := s.enter("RecordRun"); err != nil {
		return err
	}
	return s.Store.RecordRun(ctx, rec)
}

func (s *faultStore) ShapeProfile(ctx context.Context, probe string) (results.StoredProfile, bool, error) {
	if err := s.enter("ShapeProfile"); err != nil {
		return results.StoredProfile{}, false, err
	}
	return s.Store.ShapeProfile(ctx, probe)
}

func (s *faultStore) ToolDefinition(ctx context.Context, probe string) (results.ToolDefinition, bool, error) {
	if err := s.enter("ToolDefinition"); err != nil {
		return results.ToolDefinition{}, false, err
	}
	return s.Store.ToolDefinition(ctx, probe)
}

func (s *faultStore) ProfileResets(ctx context.Context, since time.Time) (map[string]time.Time, error) {
	if err := s.enter("ProfileResets"); err != nil {
		return nil, err
	}
	return s.Store.ProfileResets(ctx, since)
}

func (s *faultStore) RecentShapes(ctx context.Context, probe string, since time.Time, limit int) ([]results.ShapeSeen, error) {
	if err := s.enter("RecentShapes"); err != nil {
		return nil, err
	}
	return s.Store.RecentShapes(ctx, probe, since, limit)
}

func (s *faultStore) AlertStates(ctx context.Context) (map[string]results.AlertState, error) {
	if err := s.enter("AlertStates"); err != nil {
		return nil, err
	}
	return s.Store.AlertStates(ctx)
}

func (s *faultStore) DueAlerts(ctx context.Context, now time.Time, limit int) ([]results.Alert, error) {
	if err := s.enter("DueAlerts"); err != nil {
		return nil, err
	}
	return s.Store.DueAlerts(ctx, now, limit)
}

func (s *faultStore) NextAlertDue(ctx context.Context) (time.Time, bool, error) {
	if err := s.enter("NextAlertDue"); err != nil {
		return time.Time{}, false, err
	}
	return s.Store.NextAlertDue(ctx)
}

func (s *faultStore) MarkAlertDelivered(ctx context.Context, id int64, at time.Time) error {
	return s.mark("MarkAlertDelivered", id, func() error { return s.Store.MarkAlertDelivered(ctx, id, at) })
}

func (s *faultStore) MarkAlertRetry(ctx context.Context, id int64, tries int, next time.Time, lastErr string) error {
	return s.mark("MarkAlertRetry", id, func() error { return s.Store.MarkAlertRetry(ctx, id, tries, next, lastErr) })
}

func (s *faultStore) MarkAlertFailed(ctx context.Context, id int64, tries int, lastErr string) error {
	return s.mark("MarkAlertFailed", id, func() error { return s.Store.MarkAlertFailed(ctx, id, tries, lastErr) })
}

func (s *faultStore) mark(method string, id int64, do func() error) error {
	if err := s.enter(method); err != nil {
		return err
	}
	if err := do(); err != nil {
		return err
	}
	s.mu.Lock()
	onMark := s.onMark
	s.mu.Unlock()
	if onMark != nil {
		onMark(method, id)
	}
	return nil
}

// seedRun records r with rec's other parts straight into the real store,
// past the hooks and the call counts, with an operation id of its own.
func (s *faultStore) seedRun(rec *results.RunRecord) {
	s.tb.Helper()
	if rec.Result.OperationID == "" {
		rec.Result.OperationID = fmt.Sprintf("seed-%d", s.seeded.Add(1))
	}
	if err := s.Store.RecordRun(context.Background(), rec); err != nil {
		s.tb.Fatalf("seed the store: %v", err)
	}
}

// seedResult is a result of probe at at that carries nothing else: the
// run an alert, a state or a shape is seeded with.
func seedResult(probe string, at time.Time, outcome results.Outcome) results.Result {
	r := results.Result{Probe: probe, StartedAt: at, Outcome: outcome}
	if outcome != results.Pass {
		r.Error = results.NewError(results.CodeRuleError, "seeded")
	}
	return r
}

// enqueue stores a pending alert (pending unless a.State says otherwise),
// as RecordRun would for a Process that alerted, with a run of its own,
// and returns its ID.
func (s *faultStore) enqueue(a results.Alert) int64 {
	s.tb.Helper()
	if a.State == "" {
		a.State = results.DeliveryPending
	}
	rec := &results.RunRecord{Result: seedResult(a.Probe, a.CreatedAt, a.Outcome), Alerts: []results.Alert{a}}
	s.seedRun(rec)
	return rec.Alerts[0].ID
}

// seedState stores st as probe's persisted alert state.
func (s *faultStore) seedState(st results.AlertState, at time.Time) {
	s.tb.Helper()
	s.seedRun(&results.RunRecord{Result: seedResult(st.Probe, at, results.Pass), AlertState: &st})
}

// seedShape stores canonical as the text of fingerprint, for a run of
// probe at at, unless the store knows it already: the first text stays.
func (s *faultStore) seedShape(probe, fingerprint, canonical string, at time.Time) {
	s.tb.Helper()
	r := seedResult(probe, at, results.Pass)
	r.Shape = &results.Shape{Fingerprint: fingerprint, Canonical: canonical}
	s.seedRun(&results.RunRecord{Result: r})
}

// storedAlert returns the stored alert id.
func (s *faultStore) storedAlert(id int64) results.Alert {
	s.tb.Helper()
	for _, a := range s.alerts() {
		if a.ID == id {
			return a
		}
	}
	s.tb.Fatalf("no stored alert %d", id)
	return results.Alert{}
}

// alerts returns every stored alert, in recording order.
func (s *faultStore) alerts() []results.Alert {
	s.tb.Helper()
	all, err := s.Store.Alerts(context.Background())
	if err != nil {
		s.tb.Fatalf("read the alerts: %v", err)
	}
	return all
}

// recorded returns the runs the daemon recorded, in the order they were
// written (seeded runs left out).
func (s *faultStore) recorded() []results.Result {
	s.tb.Helper()
	all, err := s.Store.RecordedRuns(context.Background(), "")
	if err != nil {
		s.tb.Fatalf("read the runs: %v", err)
	}
	return slices.DeleteFunc(all, func(r results.Result) bool { return isSeed(r.OperationID) })
}

func isSeed(operationID string) bool {
	return len(operationID) > 5 && operationID[:5] == "seed-"
}

// drifts returns the recorded drifts, oldest first.
func (s *faultStore) drifts() []results.Drift {
	s.tb.Helper()
	ds, err := s.Store.Drifts(context.Background(), "", time.Time{}, 1<<30)
	if err != nil {
		s.tb.Fatalf("read the drifts: %v", err)
	}
	slices.Reverse(ds)
	return ds
}

// states returns every persisted alert state.
func (s *faultStore) states() map[string]results.AlertState {
	s.tb.Helper()
	st, err := s.Store.AlertStates(context.Background())
	if err != nil {
		s.tb.Fatalf("read the alert states: %v", err)
	}
	return st
}

// snapshot returns the recorded runs, drifts, states and alerts.
func (s *faultStore) snapshot() ([]results.Result, []results.Drift, map[string]results.AlertState, []results.Alert) {
	s.tb.Helper()
	return s.recorded(), s.drifts(), s.states(), s.alerts()
}
