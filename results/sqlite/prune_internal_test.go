package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/toolpulse/toolpulse/results"
)

// commitLog watches the writer connection from inside SQLite: for every
// committed transaction, how many results rows it deleted and inserted.
type commitLog struct {
	mu               sync.Mutex
	deleted, added   int
	commits          [][2]int // {deleted, inserted} per commit
	rolledBackWrites int
	// onDelete, if set, is called inside the deleting statement with the
	// number of results rows deleted so far, committed or not.
	onDelete     func(total int)
	totalDeleted int
	// refuse, if set, is asked before each commit that deleted results
	// rows whether to turn it into a rollback, as SQLite lets a commit
	// hook do.
	refuse func(deleted int) bool
}

// watchWriter installs a commitLog on the store's one writer connection,
// which lives as long as the store.
func watchWriter(t *testing.T, s *Store) *commitLog {
	t.Helper()
	l := &commitLog{}
	conn, err := s.writer.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c := dc.(*sqlite3.SQLiteConn)
		c.RegisterUpdateHook(func(op int, _, table string, _ int64) {
			if table != "results" {
				return
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			switch op {
			case sqlite3.SQLITE_DELETE:
				l.deleted++
				l.totalDeleted++
				if l.onDelete != nil {
					l.onDelete(l.totalDeleted)
				}
			case sqlite3.SQLITE_INSERT:
				l.added++
			}
		})
		c.RegisterCommitHook(func() int {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.deleted > 0 && l.refuse != nil && l.refuse(l.deleted) {
				return 1 // the rollback hook resets the counts
			}
			if l.deleted > 0 || l.added > 0 {
				l.commits = append(l.commits, [2]int{l.deleted, l.added})
			}
			l.deleted, l.added = 0, 0
			return 0
		})
		c.RegisterRollbackHook(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.deleted > 0 || l.added > 0 {
				l.rolledBackWrites++
			}
			l.deleted, l.added = 0, 0
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *commitLog) snapshot() ([][2]int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][2]int(nil), l.commits...), l.rolledBackWrites
}

func openInternal(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func passAt(id string, at time.Time) results.Result {
	return results.Result{OperationID: id, Probe: "p", StartedAt: at, Duration: time.Millisecond,
		Outcome: results.Pass, Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"},
		Attempts: []results.Attempt{{Number: 1, StartedAt: at, Duration: time.Millisecond, HTTPStatus: 200}}}
}

var pruneBase = time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)

// TestPruneBatchesInShortTransactions watches the writer while Prune
// deletes ten old results three at a time: four transactions, of 3, 3, 3
// and 1 deletions, oldest first, and the newer result left alone.
func TestPruneBatchesInShortTransactions(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	for i := range 11 {
		if err := s.Record(ctx, passAt(fmt.Sprint("op-", i), pruneBase.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	log := watchWriter(t, s)
	n, err := s.Prune(ctx, pruneBase.Add(10*time.Minute), 3)
	if err != nil || n != 10 {
		t.Fatalf("Prune: %d, %v, want 10, nil", n, err)
	}
	commits, _ := log.snapshot()
	if want := [][2]int{{3, 0}, {3, 0}, {3, 0}, {1, 0}}; fmt.Sprint(commits) != fmt.Sprint(want) {
		t.Errorf("results deleted per transaction: got %v, want %v", commits, want)
	}
	var left string
	if err := s.reader.QueryRow(`SELECT group_concat(operation_id) FROM results`).Scan(&left); err != nil || left != "op-10" {
		t.Errorf("results left: %q, %v, want op-10", left, err)
	}
}

// TestPruneWhileRecording prunes a thousand old results five at a time
// while another goroutine keeps recording: neither fails, new runs are
// committed between the batches (RecordRun waits for one batch, not for
// the whole prune), and afterwards every old run is gone and every new one
// is there with its attempts.
func TestPruneWhileRecording(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	const old = 1000
	tx, err := s.writer.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range old {
		r := passAt(fmt.Sprint("old-", i), pruneBase.Add(-time.Duration(old-i)*time.Second))
		if err := insertResultRows(ctx, tx, &r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	log := watchWriter(t, s)

	done := make(chan struct{})
	recorded := make(chan int)
	var recErr error
	go func() {
		n := 0
		defer func() { recorded <- n }()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := s.Record(ctx, passAt(fmt.Sprint("new-", n), pruneBase.Add(time.Duration(n)*time.Millisecond))); err != nil {
				recErr = err
				return
			}
			n++
		}
	}()
	deleted, err := s.Prune(ctx, pruneBase, 5)
	close(done)
	added := <-recorded
	if err != nil || deleted != old {
		t.Fatalf("Prune while recording: %d, %v, want %d, nil", deleted, err, old)
	}
	if recErr != nil {
		t.Fatalf("Record while pruning: %v", recErr)
	}

	commits, rolledBack := log.snapshot()
	first, last, between := -1, -1, 0
	for i, c := range commits {
		if c[0] > 0 {
			if c[0] > 5 || c[1] > 0 {
				t.Errorf("commit %d deleted %d and inserted %d results, want a batch of at most 5 deletions", i, c[0], c[1])
			}
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	for _, c := range commits[max(first, 0):max(last, 0)] {
		if c[1] > 0 {
			between++
		}
	}
	if between == 0 {
		t.Errorf("no run was recorded between the first and the last prune batch (%d commits)", len(commits))
	}
	if rolledBack != 0 {
		t.Errorf("%d transactions that wrote results were rolled back", rolledBack)
	}
	t.Logf("%d runs recorded, %d of them between prune batches", added, between)

	var oldLeft, newRows, newAttempts int
	err = s.reader.QueryRow(`SELECT
		    (SELECT count(*) FROM results WHERE operation_id LIKE 'old-%'),
		    (SELECT count(*) FROM results WHERE operation_id LIKE 'new-%'),
		    (SELECT count(*) FROM attempts WHERE operation_id LIKE 'new-%')`).Scan(&oldLeft, &newRows, &newAttempts)
	if err != nil {
		t.Fatal(err)
	}
	if oldLeft != 0 || newRows != added || newAttempts != added {
		t.Errorf("after Prune: %d old results, %d new with %d attempts; want 0, %d, %d", oldLeft, newRows, newAttempts, added, added)
	}
	var oldAttempts int
	if err := s.reader.QueryRow(`SELECT count(*) FROM attempts WHERE operation_id LIKE 'old-%'`).Scan(&oldAttempts); err != nil || oldAttempts != 0 {
		t.Errorf("attempts of pruned results: %d, %v, want 0", oldAttempts, err)
	}
}

// TestPruneStoppedHalfWay cancels a prune inside its second batch: the
// batch is rolled back, Prune stops with the context's error, and the
// count it returns is exactly what is gone: the first batch.
func TestPruneStoppedHalfWay(t *testing.T) {
	s := openInternal(t)
	const old = 100
	for i := range old {
		r := passAt(fmt.Sprint("old-", i), pruneBase.Add(-time.Duration(old-i)*time.Second))
		if err := s.Record(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	log := watchWriter(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log.mu.Lock()
	log.onDelete = func(total int) {
		if total == 5 { // the second row of the second batch
			cancel()
		}
	}
	log.mu.Unlock()

	deleted, err := s.Prune(ctx, pruneBase, 3)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Prune cancelled half-way: %d, %v, want context.Canceled", deleted, err)
	}
	var left int
	if err := s.reader.QueryRow(`SELECT count(*) FROM results`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if deleted != 3 || left != old-3 {
		t.Errorf("Prune says it deleted %d, and %d of %d results are left; want 3 deleted", deleted, left, old)
	}
}

// TestPruneCountsOnlyCommittedBatches makes the commit of the second
// batch fail: Prune stops with the error and counts the first batch only.
func TestPruneCountsOnlyCommittedBatches(t *testing.T) {
	s := openInternal(t)
	for i := range 10 {
		if err := s.Record(context.Background(), passAt(fmt.Sprint("old-", i), pruneBase.Add(-time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	log := watchWriter(t, s)
	batches := 0
	log.mu.Lock()
	log.refuse = func(int) bool { batches++; return batches == 2 }
	log.mu.Unlock()

	deleted, err := s.Prune(context.Background(), pruneBase, 3)
	if err == nil || deleted != 3 {
		t.Errorf("Prune with a failing commit: %d, %v, want 3 and an error", deleted, err)
	}
	var left int
	if err := s.reader.QueryRow(`SELECT count(*) FROM results`).Scan(&left); err != nil || left != 7 {
		t.Errorf("results left: %d, %v, want 7", left, err)
	}
}

// TestPingStopsAtTheDeadline holds the write lock from another connection,
// as another process would: Ping fails by its context's deadline rather
// than after the 5 s busy timeout, and the writer keeps its busy timeout.
func TestPingStopsAtTheDeadline(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	other := writerDB(t, s.path, "_busy_timeout=100")
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}

	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Ping(pctx)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Ping took %v, want about its 300ms deadline", took)
	}
	if err == nil || !strings.Contains(err.Error(), "write lock") {
		t.Errorf("Ping while another connection holds the write lock: got %v, want a write lock error", err)
	}
	var timeout int
	if err := s.writer.QueryRow("PRAGMA busy_timeout").Scan(&timeout); err != nil || timeout != busyTimeoutMS {
		t.Errorf("writer's busy_timeout after Ping: %d, %v, want %d", timeout, err, busyTimeoutMS)
	}

	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	pctx, cancel = context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.Ping(pctx); err != nil {
		t.Errorf("Ping once the lock is released: %v", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping without a deadline: %v", err)
	}
}

func TestBusyTimeoutMatchesWriteParams(t *testing.T) {
	if !strings.Contains(writeParams, fmt.Sprintf("_busy_timeout=%d&", busyTimeoutMS)) {
		t.Errorf("writeParams %q does not set _busy_timeout=%d", writeParams, busyTimeoutMS)
	}
	s := openInternal(t)
	var timeout int
	if err := s.writer.QueryRow("PRAGMA busy_timeout").Scan(&timeout); err != nil || timeout != busyTimeoutMS {
		t.Errorf("writer's busy_timeout: %d, %v, want %d", timeout, err, busyTimeoutMS)
	}
}
