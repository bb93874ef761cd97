package sqlite_test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOperatorReaderDoesNotBlockRecord holds a read transaction open on a
// separate read-only connection, as an operator's sqlite3 session does, and
// checks that Record neither waits for it nor fails, and that the reader
// sees the row once it starts a new transaction.
func TestOperatorReaderDoesNotBlockRecord(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	if err := s.Record(ctx, contractError("op-before")); err != nil {
		t.Fatal(err)
	}

	op := operatorDB(t, path, "mode=ro")
	conn, err := op.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	// The first read fixes the transaction's snapshot and takes the lock.
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM results").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("operator sees %d committed rows, want 1", n)
	}

	// Under the 5 s busy timeout, so that a write blocked by the reader
	// fails here instead of waiting its turn.
	wctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	for i := range 20 {
		if err := s.Record(wctx, passAfterRetry(fmt.Sprintf("op-%d", i))); err != nil {
			t.Fatalf("Record while an operator holds a read transaction: %v", err)
		}
	}
	// The store's own reads are not blocked either, and see the new rows.
	if _, err := s.Result(wctx, "op-19"); err != nil {
		t.Errorf("Result while an operator holds a read transaction: %v", err)
	}

	// Snapshot isolation: the open transaction still sees its snapshot...
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM results").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("inside its transaction the operator sees %d rows, want 1", n)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	// ...and the next one sees every committed row.
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM results").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 21 {
		t.Errorf("after its transaction the operator sees %d rows, want 21", n)
	}
}

func TestConcurrentRecord(t *testing.T) {
	const writers, each = 16, 25
	ctx := context.Background()
	s, path := newStore(t)

	var wg sync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("op-%d-%d", w, i)
				r := passAfterRetry(id)
				if i%3 == 1 {
					r = contractError(id)
				}
				if err := s.Record(ctx, r); err != nil {
					errs <- err
					continue
				}
				// Read back right away, through the reader pool, while the
				// other goroutines write.
				if _, err := s.Result(ctx, id); err != nil {
					errs <- fmt.Errorf("Result(%s) after its Record: %w", id, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	op := operatorDB(t, path, "mode=ro")
	contract := 0
	for i := range each {
		if i%3 == 1 {
			contract++
		}
	}
	contract *= writers
	pass := writers*each - contract
	for query, want := range map[string]int{
		"SELECT count(*) FROM results":                                       writers * each,
		"SELECT count(DISTINCT operation_id) FROM results":                   writers * each,
		"SELECT count(*) FROM attempts":                                      2*pass + contract,
		"SELECT seen_count FROM shapes WHERE fingerprint = '" + fpList + "'": pass,
		"SELECT seen_count FROM shapes WHERE fingerprint = '" + fpMap + "'":  contract,
	} {
		if got := count(t, op, query); got != want {
			t.Errorf("%s: got %d, want %d", query, got, want)
		}
	}
}

// TestSqlite3ShellReadsWhileRecording runs the real sqlite3 shell, as an
// operator would, against a database toolpulse is writing: every query
// succeeds and sees a growing, committed count. CI installs the shell.
func TestSqlite3ShellReadsWhileRecording(t *testing.T) {
	shell, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("sqlite3 shell not installed")
	}
	ctx := context.Background()
	s, path := newStore(t)
	const total = 200
	done := make(chan error, 1)
	go func() {
		for i := range total {
			if err := s.Record(ctx, passAfterRetry(fmt.Sprintf("op-%d", i))); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	last := 0
	for recording := true; recording; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Record while the shell reads: %v", err)
			}
			recording = false
		default:
		}
		out, err := exec.Command(shell, "-readonly", path, "SELECT count(*) FROM results;").CombinedOutput()
		if err != nil {
			t.Fatalf("sqlite3 shell: %v\n%s", err, out)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil || n < last {
			t.Fatalf("sqlite3 shell saw %q after %d rows", out, last)
		}
		last = n
	}
	if last != total {
		t.Errorf("sqlite3 shell finally saw %d rows, want %d", last, total)
	}
}
