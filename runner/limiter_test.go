package runner

import (
	"context"
	"testing"
	"time"
)

// TestLimiter covers the concurrency limit on its own: first come,
// first served; a waiter that gives up takes no slot; resizing either way
// while slots are held.
func TestLimiter(t *testing.T) {
	ctx := context.Background()
	l := newLimiter(1)
	if err := l.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 3)
	wait := func(name string, ctx context.Context) chan error {
		done := make(chan error, 1)
		go func() {
			err := l.acquire(ctx)
			if err == nil {
				order <- name
			}
			done <- err
		}()
		return done
	}
	// got waits for a waiter's result, so that a broken limiter fails
	// the test instead of hanging it.
	got := func(done chan error, who string) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(schedWait):
			t.Fatalf("%s never got a slot", who)
			return nil
		}
	}
	waiting := func(n int) {
		t.Helper()
		waitFor(t, "waiters", func() bool { _, w, _ := l.counts(); return w == n })
	}
	b := wait("b", ctx)
	waiting(1)
	cctx, cancel := context.WithCancel(ctx)
	c := wait("c", cctx)
	waiting(2)
	d := wait("d", ctx)
	waiting(3)

	cancel()
	if err := got(c, "c"); err == nil {
		t.Fatal("a cancelled wait acquired a slot")
	}
	waiting(2)
	l.release() // to b, the oldest waiter
	if err := got(b, "b"); err != nil || <-order != "b" {
		t.Fatalf("first released slot did not go to the oldest waiter")
	}
	if a, w, n := l.counts(); a != 1 || w != 1 || n != 1 {
		t.Fatalf("counts = %d active, %d waiting, limit %d; want 1, 1, 1", a, w, n)
	}

	l.resize(2) // grows: d gets the new slot at once
	if err := got(d, "d"); err != nil || <-order != "d" {
		t.Fatal("growing the limit did not admit the waiter")
	}
	l.resize(1) // shrinks below the 2 held: nobody new until both are back
	e := wait("e", ctx)
	waiting(1)
	l.release()
	select {
	case <-e:
		t.Fatal("a slot was granted above the shrunk limit")
	case <-time.After(50 * time.Millisecond):
	}
	l.release()
	if err := got(e, "e"); err != nil {
		t.Fatal(err)
	}
	l.release()
	if a, w, _ := l.counts(); a != 0 || w != 0 {
		t.Errorf("after every release: %d active, %d waiting", a, w)
	}
	l.resize(0)
	if _, _, n := l.counts(); n != 1 {
		t.Errorf("resize(0) left a limit of %d, want 1: a limit of 0 would stop every probe", n)
	}
}
