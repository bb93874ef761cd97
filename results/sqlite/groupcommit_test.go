package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// runWithID is driftRun(id) or, when pass is set, a passing run of the
// same probe that resolves its alert and resets its alert state.
func runWithID(id string, pass bool) *results.RunRecord {
	if !pass {
		return driftRun(id)
	}
	r := passAfterRetry(id)
	resolved := results.NewAlert(results.AlertResolved, &r, r.StartedAt.Add(time.Second))
	resolved.FailingSince = r.StartedAt.Add(-time.Hour)
	return &results.RunRecord{Result: r,
		AlertState: &results.AlertState{Probe: r.Probe},
		Alerts:     []results.Alert{resolved}}
}

// recordBatch records recs in one transaction of s's writer, in order:
// each is queued only once the one before it is, and the writer waits for
// all of them. It returns RecordRun's error for each.
func recordBatch(t *testing.T, s *sqlite.Store, recs []*results.RunRecord) []error {
	t.Helper()
	sqlite.HoldWriter(s, len(recs))
	return recordBatchAfter(t, s, 0, recs...)
}

// recordBatchAfter queues recs, in order, behind the runs already
// waiting for the writer (queued of them), and returns RecordRun's error
// for each. The last one may be taken by the writer at once, so only the
// others are waited for.
func recordBatchAfter(t *testing.T, s *sqlite.Store, queued int, recs ...*results.RunRecord) []error {
	t.Helper()
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, rec := range recs {
		wg.Go(func() { errs[i] = s.RecordRun(context.Background(), rec) })
		if i < len(recs)-1 {
			waitQueued(t, s, queued+i+1)
		}
	}
	wg.Wait()
	return errs
}

// waitQueued waits until n runs wait for s's writer.
func waitQueued(t *testing.T, s *sqlite.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for sqlite.Queued(s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs queued after 5s, want %d", sqlite.Queued(s), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// contents dumps every row RecordRun writes, without row ids (an alert's
// drift is named by its operation id), one sorted line per row, so that
// two stores that recorded the same runs in the same order compare equal.
func contents(t *testing.T, path string) []string {
	t.Helper()
	op := operatorDB(t, path, "mode=ro")
	var lines []string
	for table, query := range map[string]string{
		"results":      "SELECT * FROM results",
		"attempts":     "SELECT * FROM attempts",
		"shapes":       "SELECT * FROM shapes",
		"shape_counts": "SELECT * FROM shape_counts",
		"probe_hours":  "SELECT * FROM probe_hours",
		"drifts":       "SELECT * FROM drifts",
		"alert_state":  "SELECT * FROM alert_state",
		"alerts": `SELECT alerts.*, drifts.operation_id AS drift_operation
			FROM alerts LEFT JOIN drifts ON drifts.id = alerts.drift_id`,
	} {
		for _, row := range queryMaps(t, op, query) {
			delete(row, "id")
			delete(row, "drift_id")
			lines = append(lines, fmt.Sprintf("%s %q", table, fmt.Sprint(row)))
		}
	}
	slices.Sort(lines)
	return lines
}

// lineDiff lists the lines only in got (+) and only in want (-); both are
// sorted.
func lineDiff(got, want []string) string {
	var b strings.Builder
	for len(got) > 0 || len(want) > 0 {
		switch {
		case len(want) == 0 || len(got) > 0 && got[0] < want[0]:
			fmt.Fprintf(&b, "+ %s\n", got[0])
			got = got[1:]
		case len(got) == 0 || want[0] < got[0]:
			fmt.Fprintf(&b, "- %s\n", want[0])
			want = want[1:]
		default:
			got, want = got[1:], want[1:]
		}
	}
	return b.String()
}

// TestConcurrentRecordRunsStoredOnce has 50 goroutines record 40 runs
// each at once: every run is stored exactly once, with its alerts, whose
// ids RecordRun set, distinct and naming the run's own rows, and runs
// shared commits.
func TestConcurrentRecordRunsStoredOnce(t *testing.T) {
	const writers, each = 50, 40
	ctx := context.Background()
	s, path := newStore(t)

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		recs = map[string]*results.RunRecord{}
	)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("op-%d-%d", w, i)
				rec := runWithID(id, i%2 == 0)
				if err := s.RecordRun(ctx, rec); err != nil {
					t.Errorf("RecordRun(%s): %v", id, err)
					continue
				}
				mu.Lock()
				recs[id] = rec
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	op := operatorDB(t, path, "mode=ro")
	stored := map[int64]string{}
	for _, row := range queryMaps(t, op, "SELECT id, operation_id FROM alerts") {
		stored[row["id"].(int64)] = row["operation_id"].(string)
	}
	alerts := 0
	for id, rec := range recs {
		for i, a := range rec.Alerts {
			alerts++
			if got, ok := stored[a.ID]; !ok || got != id {
				t.Errorf("%s: alert %d has ID %d, which is stored for %q", id, i, a.ID, got)
			}
		}
	}
	if len(stored) != alerts {
		t.Errorf("alerts stored: got %d, want %d", len(stored), alerts)
	}
	for query, want := range map[string]int{
		"SELECT count(*) FROM results":                                       writers * each,
		"SELECT count(DISTINCT operation_id) FROM results":                   writers * each,
		"SELECT count(*) FROM drifts":                                        writers * each / 2,
		"SELECT sum(runs) FROM probe_hours":                                  writers * each,
		"SELECT seen_count FROM shapes WHERE fingerprint = '" + fpList + "'": writers * each / 2,
		"SELECT seen_count FROM shapes WHERE fingerprint = '" + fpMap + "'":  writers * each / 2,
	} {
		if got := count(t, op, query); got != want {
			t.Errorf("%s: got %d, want %d", query, got, want)
		}
	}
	for _, id := range []string{"op-0-0", "op-49-39", "op-17-21"} {
		got, err := s.Result(ctx, id)
		if err != nil || got.OperationID != id {
			t.Errorf("Result(%s): %v, %v", id, got.OperationID, err)
		}
	}
	commits, runs := sqlite.Commits(s)
	if runs != writers*each || commits >= runs {
		t.Errorf("%d runs committed in %d commits, want %d runs in fewer commits", runs, commits, writers*each)
	}
	t.Logf("%d runs in %d commits", runs, commits)
}

// TestBatchIsolatesFailedRuns records runs of which some fail in one
// transaction: only the runs that fail get an error, the others are
// committed, and the store holds exactly what recording the successful
// runs one by one would have stored: nothing of a failed run remains, not
// even the shape counts, probe hour or alert state written before it
// failed.
func TestBatchIsolatesFailedRuns(t *testing.T) {
	tests := []struct {
		name    string
		before  []string // recorded first, one by one
		trigger bool     // op-bad's drift alert is refused, after the rest of it was written
		batch   []string // "+" marks a passing run
		want    []error  // per run of batch; errRefused is the trigger's
	}{
		{name: "duplicate of an earlier batch",
			before: []string{"op-1"}, batch: []string{"op-2", "op-1", "+op-3"},
			want: []error{nil, sqlite.ErrDuplicate, nil}},
		{name: "duplicate within the batch",
			batch: []string{"op-1", "+op-2", "op-1", "op-3"},
			want:  []error{nil, nil, sqlite.ErrDuplicate, nil}},
		{name: "first and last fail",
			before: []string{"op-1"}, batch: []string{"op-1", "op-2", "+op-3", "op-2"},
			want: []error{sqlite.ErrDuplicate, nil, nil, sqlite.ErrDuplicate}},
		{name: "constraint half-way through a run",
			trigger: true, batch: []string{"op-1", "op-bad", "+op-2"},
			want: []error{nil, errRefused, nil}},
		{name: "every run fails",
			before: []string{"op-1", "op-2"}, batch: []string{"op-2", "op-1"},
			want: []error{sqlite.ErrDuplicate, sqlite.ErrDuplicate}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := newStore(t)
			ref, refPath := newStore(t)
			if tt.trigger {
				refuseDriftAlertOf(t, path, "op-bad")
			}
			for _, id := range tt.before {
				recordRun(t, s, runWithID(id, false))
				recordRun(t, ref, runWithID(id, false))
			}
			commits, runs := sqlite.Commits(s)

			recs := make([]*results.RunRecord, len(tt.batch))
			for i, id := range tt.batch {
				recs[i] = runWithID(strings.TrimPrefix(id, "+"), strings.HasPrefix(id, "+"))
			}
			errs := recordBatch(t, s, recs)

			committed := 0
			for i, err := range errs {
				rec, want := recs[i], tt.want[i]
				switch {
				case want == nil && err != nil:
					t.Errorf("run %d (%s): %v, want it recorded", i, rec.Result.OperationID, err)
				case want == errRefused && (err == nil || !strings.Contains(err.Error(), "refused by the test") || !sqlite.Permanent(err)):
					t.Errorf("run %d (%s): %v, want the trigger's refusal, permanent", i, rec.Result.OperationID, err)
				case want != nil && want != errRefused && !errors.Is(err, want):
					t.Errorf("run %d (%s): %v, want %v", i, rec.Result.OperationID, err, want)
				}
				for j, a := range rec.Alerts {
					if (err == nil) != (a.ID != 0) {
						t.Errorf("run %d (%s), alert %d: ID %d after RecordRun returned %v", i, rec.Result.OperationID, j, a.ID, err)
					}
				}
				if err == nil {
					committed++
					recordRun(t, ref, runWithID(rec.Result.OperationID, strings.HasPrefix(tt.batch[i], "+")))
				}
			}
			c, r := sqlite.Commits(s)
			wantCommits := 0
			if committed > 0 {
				wantCommits = 1
			}
			if c-commits != int64(wantCommits) || r-runs != int64(committed) {
				t.Errorf("the batch took %d commits for %d runs, want %d for %d", c-commits, r-runs, wantCommits, committed)
			}
			if diff := lineDiff(contents(t, path), contents(t, refPath)); diff != "" {
				t.Errorf("the store after the batch (+) against recording the successful runs one by one (-):\n%s", diff)
			}
		})
	}
}

// errRefused stands for the error of refuseDriftAlertOf's trigger.
var errRefused = errors.New("refused by the test")

// refuseDriftAlertOf makes the database refuse the shape_drift alert of
// operation id, the last row RecordRun writes of it, with a constraint
// error.
func refuseDriftAlertOf(t *testing.T, path, id string) {
	t.Helper()
	dba := operatorDB(t, path, "_busy_timeout=5000")
	if _, err := dba.Exec(`CREATE TRIGGER refuse_drift_alert BEFORE INSERT ON alerts
		WHEN NEW.kind = 'shape_drift' AND NEW.operation_id = '` + id + `'
		BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
}

// TestBatchLostWithItsTransaction makes a run fail in a way after which
// SQLite rolls back the whole transaction, as it may on a full disk or an
// I/O error (here a trigger's RAISE(ROLLBACK)): the savepoint is gone,
// so every run of the batch fails and none is stored. The others' error is
// a fault, to be retried, and they are stored when they are.
func TestBatchLostWithItsTransaction(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	dba := operatorDB(t, path, "_busy_timeout=5000")
	if _, err := dba.Exec(`CREATE TRIGGER lose_transaction BEFORE INSERT ON alerts
		WHEN NEW.operation_id = 'op-bad' BEGIN SELECT RAISE(ROLLBACK, 'rolled back by the test'); END`); err != nil {
		t.Fatal(err)
	}

	recs := []*results.RunRecord{runWithID("op-1", false), runWithID("op-bad", true), runWithID("op-2", false)}
	errs := recordBatch(t, s, recs)
	for i, err := range errs {
		if err == nil {
			t.Errorf("run %d (%s): recorded, though its transaction was rolled back", i, recs[i].Result.OperationID)
			continue
		}
		if bad := i == 1; sqlite.Permanent(err) != bad {
			t.Errorf("run %d (%s): Permanent = %v for %v, want %v", i, recs[i].Result.OperationID, !bad, err, bad)
		}
		for j, a := range recs[i].Alerts {
			if a.ID != 0 {
				t.Errorf("run %d, alert %d: ID %d set by a failed RecordRun", i, j, a.ID)
			}
		}
	}
	if got := tableCounts(t, path); !maps.Equal(got, noRows) {
		t.Errorf("rows after a lost batch: got %v, want none", got)
	}

	// The writer goes on, and the runs that were not at fault go in.
	for _, id := range []string{"op-1", "op-2"} {
		if err := s.RecordRun(ctx, runWithID(id, false)); err != nil {
			t.Errorf("RecordRun(%s) again: %v", id, err)
		}
	}
	if n := count(t, operatorDB(t, path, "mode=ro"), "SELECT count(*) FROM results"); n != 2 {
		t.Errorf("results after retrying: got %d, want 2", n)
	}
}

// TestRecordRunContextDoneWhileQueued holds the writer while a run waits
// in its queue and ends the run's context: RecordRun returns the context's
// error at once, and the run is never written, while the runs queued with
// it are.
func TestRecordRunContextDoneWhileQueued(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		end  func(cancel context.CancelFunc) // ends the context, once the run is queued
		want error
	}{
		{name: "cancelled",
			ctx:  func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			end:  func(cancel context.CancelFunc) { cancel() },
			want: context.Canceled},
		{name: "deadline",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 200*time.Millisecond)
			},
			end:  func(context.CancelFunc) {},
			want: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := newStore(t)
			sqlite.HoldWriter(s, 3)
			ctx, cancel := tt.ctx()
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- s.RecordRun(ctx, runWithID("op-gone", false)) }()
			waitQueued(t, s, 1)
			tt.end(cancel)
			select {
			case err := <-done:
				if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "sqlite: record op-gone: ") {
					t.Errorf("RecordRun: got %v, want %v, wrapped", err, tt.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("RecordRun still waiting 5s after its context ended")
			}

			// Two more runs release the writer, which skips the first.
			errs := recordBatchAfter(t, s, 1, runWithID("op-1", false), runWithID("op-2", true))
			for i, err := range errs {
				if err != nil {
					t.Errorf("run %d queued after the abandoned one: %v", i, err)
				}
			}
			op := operatorDB(t, path, "mode=ro")
			if n := count(t, op, "SELECT count(*) FROM results WHERE operation_id = 'op-gone'"); n != 0 {
				t.Errorf("the run whose context ended was stored")
			}
			if n := count(t, op, "SELECT count(*) FROM results"); n != 2 {
				t.Errorf("results: got %d, want 2", n)
			}
		})
	}
}

// TestCloseCommitsQueuedRuns closes the store while runs wait for the
// writer: Close commits them before it returns, every caller is told they
// are recorded, and a RecordRun after Close fails with ErrClosed.
func TestCloseCommitsQueuedRuns(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	sqlite.HoldWriter(s, sqlite.MaxBatch) // more than will come: only Close releases the writer
	const queued = 5
	errs := make(chan error, queued)
	recs := make([]*results.RunRecord, queued)
	for i := range queued {
		recs[i] = runWithID(fmt.Sprintf("op-%d", i), i%2 == 0)
		go func() { errs <- s.RecordRun(ctx, recs[i]) }()
	}
	waitQueued(t, s, queued)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range queued {
		if err := <-errs; err != nil {
			t.Errorf("RecordRun queued before Close: %v", err)
		}
	}
	for _, rec := range recs {
		if rec.Alerts[0].ID == 0 {
			t.Errorf("%s: alert ID not set", rec.Result.OperationID)
		}
	}
	if n := count(t, operatorDB(t, path, "mode=ro"), "SELECT count(*) FROM results"); n != queued {
		t.Errorf("results after Close: got %d, want %d", n, queued)
	}

	for _, record := range []func() error{
		func() error { return s.RecordRun(ctx, runWithID("op-late", false)) },
		func() error { return s.Record(ctx, passAfterRetry("op-late")) },
	} {
		if err := record(); !errors.Is(err, sqlite.ErrClosed) || sqlite.Permanent(err) {
			t.Errorf("recording after Close: got %v, want ErrClosed, not permanent", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestOpenCloseLeavesNoGoroutine checks that Close waits for the writer
// goroutine, after concurrent recording, and after a failed Open.
func TestOpenCloseLeavesNoGoroutine(t *testing.T) {
	checkLeaks := testkit.NoLeaks(t)
	ctx := context.Background()
	path := t.TempDir() + "/toolpulse.db"
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				if err := s.RecordRun(ctx, runWithID(fmt.Sprintf("op-%d-%d", w, i), i%2 == 0)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(ctx, t.TempDir()); err == nil {
		t.Fatal("Open of a directory: no error")
	}
	checkLeaks()
}

// TestSequentialRecordingNeverWaits checks the adaptive commit delay: a
// caller that records one run after another never makes the writer wait
// for company, and after a batch of several runs only the next batch
// does.
func TestSequentialRecordingNeverWaits(t *testing.T) {
	s, _ := newStore(t)
	for i := range 20 {
		recordRun(t, s, runWithID(fmt.Sprintf("op-%d", i), i%2 == 0))
	}
	if n := sqlite.Delays(s); n != 0 {
		t.Errorf("%d batches of a sequential caller waited, want none", n)
	}
	for _, err := range recordBatch(t, s, []*results.RunRecord{runWithID("op-a", false), runWithID("op-b", true)}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		recordRun(t, s, runWithID(fmt.Sprintf("op-x%d", i), i%2 == 0))
	}
	if n := sqlite.Delays(s); n != 1 {
		t.Errorf("%d batches waited after one batch of two, want 1", n)
	}
}
