package prometheus_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	metrics "github.com/toolpulse/toolpulse/results/prometheus"
)

// TestFleetLeader: the leader gauge reads 0 until the daemon says it
// leads, then follows it.
func TestFleetLeader(t *testing.T) {
	m, reg := newMetrics(t)
	if got, ok := value(t, reg, "toolpulse_fleet_leader", nil); !ok || got != 0 {
		t.Errorf("at start: toolpulse_fleet_leader = %v (present %v), want 0", got, ok)
	}
	for _, leading := range []bool{true, false, true} {
		m.SetLeader(leading)
		want := 0.0
		if leading {
			want = 1
		}
		if got, _ := value(t, reg, "toolpulse_fleet_leader", nil); got != want {
			t.Errorf("after SetLeader(%v): toolpulse_fleet_leader = %v, want %v", leading, got, want)
		}
	}
}

// TestFleetNodes: toolpulse_fleet_nodes counts the nodes heard from
// within three leases, reads the store at most once per cache period
// however many scrapes come, and is absent, not 0 or stale, while the
// store cannot answer, the failure counted.
func TestFleetNodes(t *testing.T) {
	m, reg := newMetrics(t)
	if got, ok := value(t, reg, "toolpulse_fleet_nodes", nil); !ok || got != 1 {
		t.Errorf("without a fleet: toolpulse_fleet_nodes = %v (present %v), want 1", got, ok)
	}

	const lease = 10 * time.Second
	storeNow := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	seen := func(node string, ago time.Duration) results.FleetNode {
		return results.FleetNode{Node: node, Location: results.DefaultLocation, LastSeen: storeNow.Add(-ago)}
	}
	var (
		mu    sync.Mutex
		reads int
		err   error
		nodes = []results.FleetNode{seen("a", time.Second), seen("b", 3*lease), seen("c", 3*lease+time.Second)}
	)
	m.WatchFleet(func(ctx context.Context) (results.Fleet, error) {
		mu.Lock()
		defer mu.Unlock()
		reads++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the fleet is read without a deadline")
		}
		return results.Fleet{Now: storeNow, Nodes: nodes}, err
	}, lease)
	local := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // not the store's clock
	metrics.SetFleetClock(m, func() time.Time { return local })

	if got, ok := value(t, reg, "toolpulse_fleet_nodes", nil); !ok || got != 2 {
		t.Errorf("toolpulse_fleet_nodes = %v (present %v), want 2 (c was last seen more than 3 leases ago)", got, ok)
	}
	mu.Lock()
	nodes = nodes[:1]
	mu.Unlock()
	for range 5 {
		value(t, reg, "toolpulse_fleet_nodes", nil)
	}
	if got, _ := value(t, reg, "toolpulse_fleet_nodes", nil); got != 2 || reads != 1 {
		t.Errorf("within the cache period: toolpulse_fleet_nodes = %v after %d reads, want 2 after 1", got, reads)
	}
	local = local.Add(5 * time.Second)
	if got, _ := value(t, reg, "toolpulse_fleet_nodes", nil); got != 1 || reads != 2 {
		t.Errorf("after the cache period: toolpulse_fleet_nodes = %v after %d reads, want 1 after 2", got, reads)
	}

	mu.Lock()
	err = errors.New("connection refused")
	mu.Unlock()
	local = local.Add(5 * time.Second)
	for range 3 {
		if got, ok := value(t, reg, "toolpulse_fleet_nodes", nil); ok {
			t.Errorf("store down: toolpulse_fleet_nodes = %v, want the series absent", got)
		}
	}
	if got, _ := value(t, reg, "toolpulse_store_errors_total", map[string]string{"op": "fleet"}); got != 1 || reads != 3 {
		t.Errorf("store down: %v fleet store errors after %d reads, want 1 after 3 (a failure is cached too)", got, reads)
	}
	if _, ok := value(t, reg, "toolpulse_fleet_leader", nil); !ok {
		t.Error("store down: toolpulse_fleet_leader is gone from the scrape too")
	}

	mu.Lock()
	err = nil
	mu.Unlock()
	local = local.Add(5 * time.Second)
	if got, ok := value(t, reg, "toolpulse_fleet_nodes", nil); !ok || got != 1 {
		t.Errorf("store back: toolpulse_fleet_nodes = %v (present %v), want 1", got, ok)
	}
}

// TestFleetNodesConcurrentScrapes: scrapes that arrive together while the
// cache is stale make one read of the store between them, not one each.
func TestFleetNodesConcurrentScrapes(t *testing.T) {
	m, reg := newMetrics(t)
	var reads atomic.Int32
	release := make(chan struct{})
	m.WatchFleet(func(context.Context) (results.Fleet, error) {
		reads.Add(1)
		<-release
		return results.Fleet{}, nil
	}, time.Second)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Errorf("8 concurrent scrapes read the fleet %d times, want 1", n)
	}
}

// TestFleetNodesHungStore: a store that does not answer holds a scrape
// for the read timeout at most, and the scrape still succeeds.
func TestFleetNodesHungStore(t *testing.T) {
	m, reg := newMetrics(t)
	m.WatchFleet(func(ctx context.Context) (results.Fleet, error) {
		<-ctx.Done()
		return results.Fleet{}, ctx.Err()
	}, time.Second)
	start := time.Now()
	if _, ok := value(t, reg, "toolpulse_fleet_nodes", nil); ok {
		t.Error("a hung store: toolpulse_fleet_nodes present, want absent")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a hung store held the scrape for %v", d)
	}
}
