package sqlite

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/toolpulse/toolpulse/results"
)

// recordHeld records runs of the given ids in one batch of s's writer, each
// queued in order, and returns RecordRun's error for each.
func recordHeld(t *testing.T, s *Store, ids ...string) []error {
	t.Helper()
	HoldWriter(s, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			errs[i] = s.RecordRun(context.Background(), &results.RunRecord{Result: passAt(id, pruneBase)})
		})
		for i < len(ids)-1 && Queued(s) < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	wg.Wait()
	return errs
}

// onWriter runs f on the store's one writer connection, which lives as long
// as the store, hooks and settings included.
func onWriter(t *testing.T, s *Store, f func(c *sqlite3.SQLiteConn)) {
	t.Helper()
	conn, err := s.writer.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error { f(dc.(*sqlite3.SQLiteConn)); return nil }); err != nil {
		t.Fatal(err)
	}
}

// holdWriteLock takes the write lock from another connection, as an
// operator's sqlite3 session in BEGIN IMMEDIATE would, and cuts the
// writer's busy timeout so that the test need not wait 5 s for it.
func holdWriteLock(t *testing.T, s *Store) (release func()) {
	t.Helper()
	if _, err := s.writer.Exec("PRAGMA busy_timeout = 100"); err != nil {
		t.Fatal(err)
	}
	other := writerDB(t, s.path, "_busy_timeout=100")
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Error(err)
		}
		conn.Close()
		if _, err := s.writer.Exec(fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeoutMS)); err != nil {
			t.Fatal(err)
		}
	}
}

// refuseCommits makes SQLite turn every COMMIT of the writer into a
// rollback, as a commit hook may: the COMMIT fails after every statement
// of the batch ran.
func refuseCommits(t *testing.T, s *Store) (release func()) {
	t.Helper()
	onWriter(t, s, func(c *sqlite3.SQLiteConn) { c.RegisterCommitHook(func() int { return 1 }) })
	return func() { onWriter(t, s, func(c *sqlite3.SQLiteConn) { c.RegisterCommitHook(nil) }) }
}

// TestBatchFailsAsAWhole makes the transaction of a batch of three runs
// fail, at BEGIN or at COMMIT: every caller gets the error, classified as
// before group commit (a lock is a fault that may clear), no run is
// stored, and every run is once the fault clears.
func TestBatchFailsAsAWhole(t *testing.T) {
	tests := []struct {
		name      string
		fault     func(*testing.T, *Store) (release func())
		want      string
		permanent bool
	}{
		{name: "BEGIN: another process holds the write lock past the busy timeout",
			fault: holdWriteLock, want: "begin: database is locked"},
		{name: "COMMIT: SQLite rolls the transaction back",
			fault: refuseCommits, want: "commit: ", permanent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openInternal(t)
			ids := []string{"op-1", "op-2", "op-3"}
			release := tt.fault(t, s)
			for i, err := range recordHeld(t, s, ids...) {
				if err == nil || !strings.Contains(err.Error(), tt.want) || Permanent(err) != tt.permanent {
					t.Errorf("run %d: %v (permanent %v), want an error containing %q, permanent %v",
						i, err, Permanent(err), tt.want, tt.permanent)
				}
			}
			release()
			var n int
			if err := s.reader.QueryRow("SELECT count(*) FROM results").Scan(&n); err != nil || n != 0 {
				t.Errorf("results after a failed batch: %d, %v, want 0", n, err)
			}
			for i, err := range recordHeld(t, s, ids...) {
				if err != nil {
					t.Errorf("run %d once the fault cleared: %v", i, err)
				}
			}
		})
	}
}

// TestClaimedRunWaitsForItsCommit ends a caller's context while the
// writer is writing its run: RecordRun waits for the transaction and
// reports the run recorded, as it is, rather than the context's error.
func TestClaimedRunWaitsForItsCommit(t *testing.T) {
	s := openInternal(t)
	writing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	onWriter(t, s, func(c *sqlite3.SQLiteConn) {
		c.RegisterUpdateHook(func(op int, _, table string, _ int64) {
			if op == sqlite3.SQLITE_INSERT && table == "results" {
				once.Do(func() { close(writing); <-release })
			}
		})
	})
	t.Cleanup(func() { onWriter(t, s, func(c *sqlite3.SQLiteConn) { c.RegisterUpdateHook(nil) }) })
	// Runs first: a failed test must not leave the writer blocked.
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock)

	ctx, cancel := context.WithCancel(context.Background())
	r := passAt("op-1", pruneBase)
	rec := &results.RunRecord{Result: r, Alerts: []results.Alert{results.NewAlert(results.AlertResolved, &r, pruneBase)}}
	rec.Alerts[0].State = results.DeliveryPending
	done := make(chan error, 1)
	go func() { done <- s.RecordRun(ctx, rec) }()
	<-writing
	cancel()
	select {
	case err := <-done:
		t.Fatalf("RecordRun returned %v while its run was being written", err)
	case <-time.After(50 * time.Millisecond):
	}
	unblock()
	if err := <-done; err != nil {
		t.Fatalf("RecordRun of a run committed after its context ended: %v", err)
	}
	if rec.Alerts[0].ID == 0 {
		t.Error("alert ID not set")
	}
	var n int
	if err := s.reader.QueryRow("SELECT count(*) FROM results WHERE operation_id = 'op-1'").Scan(&n); err != nil || n != 1 {
		t.Errorf("results: %d, %v, want 1", n, err)
	}
}

// TestWriteRunPanicIsARefusal checks that a panic while writing a run (here
// a nil transaction) is that run's error, final, rather than the end of
// the writer goroutine and of the process.
func TestWriteRunPanicIsARefusal(t *testing.T) {
	r := passAt("op-1", pruneBase)
	ids, err := writeRunSafely(context.Background(), nil, &results.RunRecord{Result: r})
	if ids != nil || err == nil || !strings.Contains(err.Error(), "panicked") || !Permanent(err) {
		t.Errorf("writeRunSafely with a nil transaction: %v, %v, want a permanent error saying it panicked", ids, err)
	}
}
