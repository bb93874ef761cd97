package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// fenced is failingRun(id) claiming location default's lease under epoch.
func fenced(id string, epoch int64) *results.RunRecord {
	rec := failingRun(id)
	rec.Fence = results.Fence{Location: results.DefaultLocation, Epoch: epoch}
	return rec
}

// takeOver makes node hold location default's lease under a new epoch, as
// a takeover after a lapse does, and returns that epoch.
func takeOver(t *testing.T, dsn, node string) int64 {
	t.Helper()
	return int64(count(t, dsn, `UPDATE fleet SET holder = '`+node+`', epoch = epoch + 1,
		expires_at = now() + interval '1 minute', renewed_at = now()
		WHERE location = 'default' RETURNING epoch`))
}

// stored counts what RecordRun wrote of operation id.
func stored(t *testing.T, dsn, id string) int {
	t.Helper()
	return count(t, dsn, `SELECT (SELECT count(*) FROM results WHERE operation_id = '`+id+`')
		+ (SELECT count(*) FROM attempts WHERE operation_id = '`+id+`')
		+ (SELECT count(*) FROM alerts WHERE operation_id = '`+id+`')
		+ (SELECT count(*) FROM drifts WHERE operation_id = '`+id+`')`)
}

// TestFencedRecordRun: a fenced record is stored, with its epoch, while
// its epoch holds the lease, and refused for good, with nothing of it
// written, once another node took the lease, or when its location has no
// lease at all.
func TestFencedRecordRun(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	l, err := s.AcquireLease(ctx, results.DefaultLocation, "a", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordRun(ctx, fenced("op-1", l.Epoch)); err != nil {
		t.Fatalf("fenced write under the current epoch: %v", err)
	}
	if got := pgtest.Exec(t, dsn, `SELECT r.epoch || ' ' || a.epoch || ' ' || st.epoch || ' ' || r.handover
		FROM results r, alerts a, alert_state st WHERE r.operation_id = 'op-1' AND a.operation_id = 'op-1'`); got != "1 1 1 false" {
		t.Errorf("epochs of result, alert and alert state, and handover: %q, want 1 1 1 false", got)
	}

	// b takes the lapsed lease: a's epoch is over.
	time.Sleep(300 * time.Millisecond)
	if l2, err := s.AcquireLease(ctx, results.DefaultLocation, "b", time.Minute); err != nil || l2.Holder != "b" || l2.Epoch != l.Epoch+1 {
		t.Fatalf("b's takeover: %+v, %v", l2, err)
	}
	before := contents(t, dsn)
	for _, rec := range []*results.RunRecord{
		fenced("op-2", l.Epoch),
		{Result: passRun("op-3"), Fence: results.Fence{Location: "nowhere", Epoch: 1}},
	} {
		err := s.RecordRun(ctx, rec)
		if !errors.Is(err, results.ErrFenced) || !postgres.Permanent(err) {
			t.Errorf("%s, fenced %+v: got %v, want ErrFenced, permanent", rec.Result.OperationID, rec.Fence, err)
		}
		if !permanentToRunner(err) {
			t.Errorf("%s: %v has no Permanent() method saying true, which the runner's write queue looks for", rec.Result.OperationID, err)
		}
		if len(rec.Alerts) > 0 && rec.Alerts[0].ID != 0 {
			t.Errorf("%s: refused, but its alert got ID %d", rec.Result.OperationID, rec.Alerts[0].ID)
		}
	}
	if after := contents(t, dsn); !slices.Equal(after, before) {
		t.Errorf("refused fenced writes changed the store:\n got  %q\n want %q", after, before)
	}
	if err := s.RecordRun(ctx, fenced("op-4", l.Epoch+1)); err != nil {
		t.Errorf("b's fenced write: %v", err)
	}

	bad := fenced("op-5", l.Epoch+1)
	bad.Handover = true
	if err := s.RecordRun(ctx, bad); err == nil || !postgres.Permanent(err) || errors.Is(err, results.ErrFenced) {
		t.Errorf("a fenced handover: got %v, want a permanent refusal of the record itself", err)
	}
}

// permanentToRunner is the runner's write queue's test of a refusal.
func permanentToRunner(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// TestTakeoverWaitsForFencedWrite: a fenced write holds its lease row FOR
// SHARE until it commits, so a takeover of the lapsed lease waits for it:
// the takeover is not granted while the write is held in its transaction,
// and once it is, the write of the old epoch is committed (visible), never
// still to come.
func TestTakeoverWaitsForFencedWrite(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	l, err := s.AcquireLease(ctx, results.DefaultLocation, "a", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	locked, release := make(chan struct{}), make(chan struct{})
	postgres.OnFencesLocked(s, func() {
		close(locked)
		<-release
	})

	var (
		mu     sync.Mutex
		events []string
		wg     sync.WaitGroup
	)
	event := func(e string) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	var writeErr error
	wg.Go(func() { writeErr = s.RecordRun(ctx, fenced("op-1", l.Epoch)) })
	<-locked
	time.Sleep(200 * time.Millisecond) // a's lease lapses
	var taken results.Lease
	var takeErr error
	acquired := make(chan struct{})
	wg.Go(func() {
		taken, takeErr = s.AcquireLease(ctx, results.DefaultLocation, "b", time.Minute)
		// Once the lease is b's, a's write has committed: it is visible.
		if _, err := s.Result(ctx, "op-1"); err != nil {
			event("lease taken before the write committed: " + err.Error())
		} else {
			event("lease taken after the write committed")
		}
		close(acquired)
	})
	select {
	case <-acquired:
		t.Errorf("b took the lease while a's fenced write was in flight: %+v", taken)
	case <-time.After(500 * time.Millisecond):
	}
	event("write released")
	close(release)
	wg.Wait()
	if writeErr != nil || takeErr != nil {
		t.Fatalf("write: %v; takeover: %v", writeErr, takeErr)
	}
	if want := []string{"write released", "lease taken after the write committed"}; !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	if taken.Holder != "b" || taken.Epoch != l.Epoch+1 {
		t.Errorf("takeover: %+v, want b under epoch %d", taken, l.Epoch+1)
	}
	if n := count(t, dsn, `SELECT count(*) FROM results WHERE operation_id = 'op-1' AND epoch = 1`); n != 1 {
		t.Errorf("a's write committed, but %d results of it are stored under epoch 1", n)
	}
}

// TestBatchRefusesOnlyStaleFences: group commit writes runs of several
// fences in one transaction; those of a stale fence are refused, with
// nothing of them written, and the others committed together.
func TestBatchRefusesOnlyStaleFences(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	ref, refDSN := newStore(t)
	if _, err := s.AcquireLease(ctx, results.DefaultLocation, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	current := takeOver(t, dsn, "b") // epoch 2; a's 1 is stale
	stale := current - 1
	if _, err := ref.AcquireLease(ctx, results.DefaultLocation, "b", time.Minute); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, refDSN, `UPDATE fleet SET epoch = 2`)

	batch := func() []*results.RunRecord {
		return []*results.RunRecord{
			fenced("op-1", current),
			fenced("op-2", stale),
			{Result: passRun("op-3"), AlertState: &results.AlertState{Probe: "external_search"}},
			fenced("op-4", current),
			fenced("op-5", stale),
		}
	}
	recs, again := batch(), batch()
	commits, runs := postgres.Commits(s)
	errs := recordBatch(t, s, recs)
	for i, err := range errs {
		id := recs[i].Result.OperationID
		wantFenced := recs[i].Fence.Epoch == stale
		switch {
		case wantFenced && (!errors.Is(err, results.ErrFenced) || !postgres.Permanent(err)):
			t.Errorf("%s of the stale epoch: %v, want ErrFenced, permanent", id, err)
		case !wantFenced && err != nil:
			t.Errorf("%s: %v, want it recorded", id, err)
		case !wantFenced:
			if err := ref.RecordRun(ctx, again[i]); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range recs[i].Alerts {
			if wantFenced && a.ID != 0 {
				t.Errorf("%s: refused, but its alert got ID %d", id, a.ID)
			}
		}
	}
	if c, r := postgres.Commits(s); c-commits != 1 || r-runs != 3 {
		t.Errorf("the batch took %d commits for %d runs, want 1 for 3", c-commits, r-runs)
	}
	// ref recorded the same runs one by one, after the batch: their alert
	// rows are equal but for ids, which contents leaves out.
	if got, want := contents(t, dsn), contents(t, refDSN); !slices.Equal(got, want) {
		t.Errorf("the store after the batch against the accepted runs alone:\n got  %q\n want %q", got, want)
	}
	for _, id := range []string{"op-2", "op-5"} {
		if n := stored(t, dsn, id); n != 0 {
			t.Errorf("%s was refused, but %d rows of it are stored", id, n)
		}
	}
}

// TestPausedWriterDoesNotHoldTakeover: a writer paused while it holds its
// lease row's share lock (SIGSTOP between two statements) is ended by the
// server once it has idled fencedIdleTimeout in its transaction, so a
// standby takes the lapsed lease after that, not after the pause; and the
// paused write, refused with its session, is not stored.
func TestPausedWriterDoesNotHoldTakeover(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	l, err := s.AcquireLease(ctx, results.DefaultLocation, "a", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	locked, resume := make(chan struct{}), make(chan struct{})
	postgres.OnFencesLocked(s, func() {
		close(locked)
		<-resume // paused, its transaction idle
	})
	written := make(chan error, 1)
	go func() { written <- s.RecordRun(ctx, fenced("op-paused", l.Epoch)) }()
	<-locked
	time.Sleep(200 * time.Millisecond) // a's lease lapses
	start := time.Now()
	bounded, cancel := context.WithTimeout(ctx, 10*time.Second)
	taken, err := s.AcquireLease(bounded, results.DefaultLocation, "b", time.Minute)
	cancel()
	waited := time.Since(start)
	close(resume)
	if err != nil {
		t.Fatalf("the takeover waited %s for a paused writer: %v", waited.Round(time.Millisecond), err)
	}
	if taken.Holder != "b" {
		t.Fatalf("takeover: %+v, want b", taken)
	}
	if waited > 5*time.Second {
		t.Errorf("the takeover waited %s for a paused writer", waited.Round(time.Millisecond))
	}
	if err := <-written; err == nil {
		t.Error("the paused write succeeded after its session was ended")
	}
	if n := count(t, dsn, `SELECT count(*) FROM results WHERE operation_id = 'op-paused'`); n != 0 {
		t.Errorf("%d results of the paused write are stored", n)
	}
}
