package prober

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Operation ids are UUIDs of version 7 that sort by the time they were
// made, so that the stores' indexes on operation_id grow at their end.
func TestOperationIDsGrowWithTime(t *testing.T) {
	e := NewExecutor(Options{})
	prev := ""
	for i := range 3 {
		id := e.newID()
		u, err := uuid.Parse(id)
		if err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		if u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("id %s: version %d, variant %v; want 7, RFC 4122", id, u.Version(), u.Variant())
		}
		if made := time.Unix(u.Time().UnixTime()); time.Since(made) > time.Minute || time.Until(made) > time.Minute {
			t.Fatalf("id %s says it was made at %v", id, made)
		}
		if i > 0 && id <= prev {
			t.Fatalf("id %s does not sort after %s, made 2 ms before it", id, prev)
		}
		prev = id
		time.Sleep(2 * time.Millisecond)
	}
}

// A random source shared by every run hands each caller its own bytes.
func TestRandomSourceConcurrent(t *testing.T) {
	src := newRandomSource()
	const goroutines, each = 8, 500
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				ids[g] = append(ids[g], newOperationID(src))
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, list := range ids {
		for _, id := range list {
			if seen[id] {
				t.Fatalf("id %s handed out twice", id)
			}
			seen[id] = true
		}
	}
}
