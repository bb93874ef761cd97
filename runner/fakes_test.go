package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// errMemNotFound is memStore's "no such row".
var errMemNotFound = errors.New("memstore: not found")

// memStore is an in-memory Store for the runner's tests. It keeps what
// RecordRun is given and answers the read methods from it the way the
// SQLite store does, counts calls per method, and can be told to fail any
// method. The real store is tested in results/sqlite.
type memStore struct {
	mu     sync.Mutex
	runs   []results.Result
	shapes map[string]string // fingerprint -> canonical text
	drifts []results.Drift
	states map[string]results.AlertState
	alerts []results.Alert // index i holds ID i+1
	calls  map[string]int

	// fail, when set, is consulted at the start of every method with its
	// name; a non-nil error is returned instead of doing the work.
	fail func(method string) error
	// onMark, when set, is called after every Mark* method with its name.
	onMark func(method string, id int64)
}

func newMemStore() *memStore {
	return &memStore{
		shapes: map[string]string{},
		states: map[string]results.AlertState{},
		calls:  map[string]int{},
	}
}

var _ Store = (*memStore)(nil)

// enter locks s, counts the call and returns ctx's error or the injected
// failure, if any; the caller unlocks, whatever enter returned.
func (s *memStore) enter(ctx context.Context, method string) error {
	s.mu.Lock()
	s.calls[method]++
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.fail != nil {
		return s.fail(method)
	}
	return nil
}

// callCount returns how often method was called.
func (s *memStore) callCount(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// resetCalls zeroes every call count.
func (s *memStore) resetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = map[string]int{}
}

// setFail replaces the failure hook.
func (s *memStore) setFail(f func(method string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = f
}

func (s *memStore) RecordRun(ctx context.Context, rec *results.RunRecord) error {
	defer s.mu.Unlock()
	if err := s.enter(ctx, "RecordRun"); err != nil {
		return err
	}
	r := rec.Result
	if r.Shape != nil {
		sh := *r.Shape
		r.Shape = &sh
		if _, ok := s.shapes[sh.Fingerprint]; !ok {
			s.shapes[sh.Fingerprint] = sh.Canonical
		}
	}
	s.runs = append(s.runs, r)
	if rec.Drift != nil {
		s.drifts = append(s.drifts, *rec.Drift)
	}
	if rec.AlertState != nil {
		s.states[rec.AlertState.Probe] = *rec.AlertState
	}
	for i := range rec.Alerts {
		rec.Alerts[i].ID = int64(len(s.alerts) + 1)
		s.alerts = append(s.alerts, rec.Alerts[i])
	}
	return nil
}

func (s *memStore) DominantShape(ctx context.Context, probe string, since time.Time) (string, int, error) {
	defer s.mu.Unlock()
	if err := s.enter(ctx, "DominantShape"); err != nil {
		return "", 0, err
	}
	counts := map[string]int{}
	for _, r := range s.runs {
		if r.Probe == probe && r.Shape != nil && !r.StartedAt.Before(since) {
			counts[r.Shape.Fingerprint]++
		}
	}
	best, n := "", 0
	for fp, c := range counts {
		if c > n || (c == n && fp < best) {
			best, n = fp, c
		}
	}
	return best, n, nil
}

func (s *memStore) ShapeText(ctx context.Context, fingerprint string) (string, error) {
	defer s.mu.Unlock()
	if err := s.enter(ctx, "ShapeText"); err != nil {
		return "", err
	}
	text, ok := s.shapes[fingerprint]
	if !ok {
		return "", fmt.Errorf("shape %s: %w", fingerprint, errMemNotFound)
	}
	return text, nil
}

func (s *memStore) LastDriftAt(ctx context.Context, probe, fingerprint string) (time.Time, bool, error) {
	defer s.mu.Unlock()
	if err := s.enter(ctx, "LastDriftAt"); err != nil {
		return time.Time{}, false, err
	}
	var last time.Time
	found := false
	for _, d := range s.drifts {
		if d.Probe == probe && d.Current == fingerprint && (!found || d.DetectedAt.After(last)) {
			last, found = d.DetectedAt, true
		}
	}
	return last, found, nil
}

func (s *memStore) AlertStates(ctx context.Context) (map[string]results.AlertState, error) {
	defer s.mu.Unlock()
	if err := s.enter(ctx, "AlertStates"); err != nil {
		return nil, err
	}
	out := make(map[string]results.AlertState, len(s.states))
	for k, v := range s.states {
		out[k] = v
	}
	return out, nil
}

func (s *memStore) DueAlerts(ctx context.Context, now time.Time, limit int) ([]results.Alert, error) {
	defer s.mu.Unlock()
	if err := s.enter(ctx, "DueAlerts"); err != nil {
		return nil, err
	}
	var due []results.Alert
	for _, a := range s.alerts {
		if a.State == results.DeliveryPending && !a.NextAttemptAt.After(now) {
			due = append(due, a)
		}
	}
	slices.SortStableFunc(due, func(a, b results.Alert) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), cmp.Compare(a.ID, b.ID))
	})
	if len(due) > limit {
		due = due[:limit]
	}
	return due, nil
}

func (s *memStore) NextAlertDue(ctx context.Context) (time.Time, bool, error) {
	defer s.mu.Unlock()
	if err := s.enter(ctx, "NextAlertDue"); err != nil {
		return time.Time{}, false, err
	}
	var next time.Time
	found := false
	for _, a := range s.alerts {
		if a.State == results.DeliveryPending && (!found || a.NextAttemptAt.Before(next)) {
			next, found = a.NextAttemptAt, true
		}
	}
	return next, found, nil
}

// alert returns a pointer to the stored alert id; s.mu must be held.
func (s *memStore) alert(id int64) (*results.Alert, error) {
	if id < 1 || int(id) > len(s.alerts) {
		return nil, fmt.Errorf("alert %d: %w", id, errMemNotFound)
	}
	return &s.alerts[id-1], nil
}

func (s *memStore) MarkAlertDelivered(ctx context.Context, id int64, at time.Time) error {
	return s.mark(ctx, "MarkAlertDelivered", id, func(a *results.Alert) {
		a.State, a.DeliveredAt = results.DeliveryDelivered, at
	})
}

func (s *memStore) MarkAlertRetry(ctx context.Context, id int64, tries int, next time.Time, lastErr string) error {
	return s.mark(ctx, "MarkAlertRetry", id, func(a *results.Alert) {
		a.DeliveryTries, a.NextAttemptAt, a.LastError = tries, next, lastErr
	})
}

func (s *memStore) MarkAlertFailed(ctx context.Context, id int64, tries int, lastErr string) error {
	return s.mark(ctx, "MarkAlertFailed", id, func(a *results.Alert) {
		a.State, a.DeliveryTries, a.LastError = results.DeliveryFailed, tries, lastErr
	})
}

func (s *memStore) mark(ctx context.Context, method string, id int64, update func(*results.Alert)) error {
	err := s.enter(ctx, method)
	if err == nil {
		var a *results.Alert
		if a, err = s.alert(id); err == nil {
			update(a)
		}
	}
	onMark := s.onMark
	s.mu.Unlock()
	if err == nil && onMark != nil {
		onMark(method, id)
	}
	return err
}

// enqueue stores a pending alert due at next and returns its ID, as
// RecordRun would for a Process that alerted.
func (s *memStore) enqueue(a results.Alert) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.ID = int64(len(s.alerts) + 1)
	if a.State == "" {
		a.State = results.DeliveryPending
	}
	s.alerts = append(s.alerts, a)
	return a.ID
}

// storedAlert returns a copy of the stored alert id.
func (s *memStore) storedAlert(id int64) results.Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.alert(id)
	if err != nil {
		panic(err)
	}
	return *a
}

// snapshot returns copies of the recorded runs, drifts, states and alerts.
func (s *memStore) snapshot() ([]results.Result, []results.Drift, map[string]results.AlertState, []results.Alert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	states := make(map[string]results.AlertState, len(s.states))
	for k, v := range s.states {
		states[k] = v
	}
	return slices.Clone(s.runs), slices.Clone(s.drifts), states, slices.Clone(s.alerts)
}
