package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/results"
)

// TestLease: the lease row grants one holder at a time, keeps the epoch
// while its holder renews, and raises it when the lease changes hands,
// after it lapsed or was released.
func TestLease(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, pgtest.Database(t))
	const ttl = 400 * time.Millisecond
	acquire := func(node string) results.Lease {
		t.Helper()
		l, err := s.AcquireLease(ctx, "eu-west", node, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := acquire("a"); l.Holder != "a" || l.Epoch != 1 || l.Location != "eu-west" {
		t.Fatalf("the first request got %+v, want a under epoch 1", l)
	}
	if l := acquire("b"); l.Holder != "a" || l.Epoch != 1 {
		t.Fatalf("b got %+v while a holds the lease, want a's lease", l)
	}
	first := acquire("a")
	if first.Holder != "a" || first.Epoch != 1 {
		t.Fatalf("a's renewal got %+v, want epoch 1 still", first)
	}
	if l, _ := s.AcquireLease(ctx, "us-east", "b", ttl); l.Holder != "b" || l.Epoch != 1 {
		t.Errorf("another location's lease %+v, want b's own under epoch 1", l)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	if l := acquire("b"); l.Holder != "b" || l.Epoch != 2 || !l.Expires.After(first.Expires) {
		t.Fatalf("b after a's lease lapsed got %+v, want b under epoch 2", l)
	}
	if err := s.ReleaseLease(ctx, "eu-west", "a", 1); err != nil {
		t.Fatal(err)
	}
	if l := acquire("a"); l.Holder != "b" {
		t.Fatalf("a stale release took b's lease away: %+v", l)
	}
	if err := s.ReleaseLease(ctx, "eu-west", "b", 2); err != nil {
		t.Fatal(err)
	}
	if l := acquire("a"); l.Holder != "a" || l.Epoch != 3 {
		t.Fatalf("a after b released got %+v, want a under epoch 3", l)
	}
}

// TestLeaseRace: of many nodes asking at once for a free lease, exactly
// one gets it.
func TestLeaseRace(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, pgtest.Database(t))
	var mu sync.Mutex
	holders := map[string]bool{}
	var wg sync.WaitGroup
	for i := range 8 {
		node := string(rune('a' + i))
		wg.Go(func() {
			l, err := s.AcquireLease(ctx, "default", node, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			holders[l.Holder] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(holders) != 1 {
		t.Errorf("the nodes saw holders %v, want one", holders)
	}
}
