package runner

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/results"
)

// leaseTable keeps leases as the store's lease row does, by its own clock:
// the elector's tests drive its timing with a fake clock. The Postgres
// store's lease is tested against a real Postgres with the same contract.
type leaseTable struct {
	mu     sync.Mutex
	clock  clockwork.Clock
	leases map[string]results.Lease
	down   map[string]bool // nodes whose requests fail, as if cut off
}

func (lt *leaseTable) AcquireLease(_ context.Context, location, node string, ttl time.Duration) (results.Lease, error) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.down[node] {
		return results.Lease{}, errors.New("connection refused")
	}
	now := lt.clock.Now()
	l := lt.leases[location]
	lapsed := !now.Before(l.Expires)
	if l.Holder == "" || l.Holder == node || lapsed {
		if l.Holder != node || lapsed {
			l.Epoch++
		}
		l.Location, l.Holder, l.Expires = location, node, now.Add(ttl)
		lt.leases[location] = l
	}
	return l, nil
}

func (lt *leaseTable) ReleaseLease(_ context.Context, location, node string, epoch int64) error {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if l := lt.leases[location]; l.Holder == node && l.Epoch == epoch {
		l.Holder, l.Expires = "", time.Time{}
		lt.leases[location] = l
	}
	return nil
}

func (lt *leaseTable) setDown(node string, down bool) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lt.down[node] = down
}

// event is an elector's elected (epoch > 0), deposed (epoch 0) or lapsed
// (epoch lapsedEvent) call.
type event struct {
	node  string
	epoch int64
	at    time.Time
}

const lapsedEvent = -1

type electors struct {
	t      *testing.T
	clock  *clockwork.FakeClock
	table  *leaseTable
	events chan event
	stop   map[string]context.CancelFunc
	done   sync.WaitGroup
}

const testTTL = 9 * time.Second // periods of 3 s (rand 0.5), trusted for 7.2 s

func newElectors(t *testing.T) *electors {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	es := &electors{t: t, clock: clock, events: make(chan event, 16), stop: map[string]context.CancelFunc{},
		table: &leaseTable{clock: clock, leases: map[string]results.Lease{}, down: map[string]bool{}}}
	t.Cleanup(func() {
		for _, cancel := range es.stop {
			cancel()
		}
		es.done.Wait()
	})
	return es
}

// start runs node's elector; it returns once the elector waits for its
// next turn.
func (es *electors) start(node string) {
	ctx, cancel := context.WithCancel(es.t.Context())
	es.stop[node] = cancel
	e := &elector{store: es.table, location: "default", node: node, ttl: testTTL, clock: es.clock,
		rand: func() float64 { return 0.5 }, logger: slog.New(slog.DiscardHandler),
		elected: func(epoch int64) { es.events <- event{node, epoch, es.clock.Now()} },
		lapsed:  func() { es.events <- event{node, lapsedEvent, es.clock.Now()} },
		deposed: func() { es.events <- event{node, 0, es.clock.Now()} }}
	es.done.Add(1)
	go func() {
		defer es.done.Done()
		e.run(ctx)
	}()
}

// settle waits until n electors wait on the clock.
func (es *electors) settle(n int) {
	ctx, cancel := context.WithTimeout(es.t.Context(), 5*time.Second)
	defer cancel()
	if err := es.clock.BlockUntilContext(ctx, n); err != nil {
		es.t.Fatalf("the electors did not settle: %v", err)
	}
}

// advance moves the clock on and lets n electors settle again.
func (es *electors) advance(d time.Duration, n int) {
	es.clock.Advance(d)
	es.settle(n)
}

func (es *electors) next() event {
	select {
	case ev := <-es.events:
		return ev
	case <-time.After(5 * time.Second):
		es.t.Fatal("no election event")
		return event{}
	}
}

func (es *electors) none() {
	select {
	case ev := <-es.events:
		es.t.Fatalf("unexpected election event %+v", ev)
	default:
	}
}

// TestElectorOneLeader: of two nodes asking at once, one leads, and the
// other stays a standby while the leader renews.
func TestElectorOneLeader(t *testing.T) {
	es := newElectors(t)
	es.start("a")
	es.settle(1)
	if ev := es.next(); ev.node != "a" || ev.epoch != 1 {
		t.Fatalf("first event %+v, want a elected under epoch 1", ev)
	}
	es.start("b")
	es.settle(2)
	for range 10 {
		es.advance(3*time.Second, 2)
	}
	es.none()
}

// TestElectorStepsDownBeforeTheLeaseLapses: a leader cut off from the
// store lapses (stops trusting its lease, without being deposed) by the
// end of its trust (TTL less a fifth), before the lease lapses in the
// store; the standby takes it under a new epoch within a twentieth of the
// TTL (its period, +20 %) after it lapsed.
func TestElectorStepsDownBeforeTheLeaseLapses(t *testing.T) {
	es := newElectors(t)
	start := es.clock.Now()
	es.start("a")
	es.settle(1)
	es.next()
	es.advance(time.Second, 1) // b asks out of a's phase
	es.start("b")
	es.settle(2)
	es.table.setDown("a", true)

	var deposedAt, takenAt time.Time
	for deposedAt.IsZero() || takenAt.IsZero() {
		if es.clock.Now().Sub(start) > 3*testTTL {
			t.Fatalf("no failover within three TTLs (deposed at %v, taken at %v)", deposedAt, takenAt)
		}
		es.advance(100*time.Millisecond, 2)
		for {
			select {
			case ev := <-es.events:
				switch {
				case ev.node == "a" && ev.epoch == lapsedEvent:
					deposedAt = ev.at
				case ev.node == "b" && ev.epoch == 2:
					takenAt = ev.at
				default:
					t.Fatalf("unexpected event %+v", ev)
				}
				continue
			default:
			}
			break
		}
	}
	lapses := start.Add(testTTL)
	if deposedAt.After(start.Add(testTTL - testTTL/5)) {
		t.Errorf("a stepped down %v after its last renewal, want within its trust of %v", deposedAt.Sub(start), testTTL-testTTL/5)
	}
	if takenAt.Before(lapses) || !deposedAt.Before(takenAt) {
		t.Errorf("b took over at %v, a stepped down at %v; the lease lapses at %v", takenAt.Sub(start), deposedAt.Sub(start), testTTL)
	}
	if late := takenAt.Sub(lapses); late > testTTL/20*6/5+100*time.Millisecond {
		t.Errorf("b took over %v after the lease lapsed, want within a standby's period (%v)", late, testTTL/20*6/5)
	}
}

// TestElectorReleasesOnStop: a leader that stops releases the lease, and
// the standby takes it at its next request rather than after the TTL.
func TestElectorReleasesOnStop(t *testing.T) {
	es := newElectors(t)
	es.start("a")
	es.settle(1)
	es.next()
	es.start("b")
	es.settle(2)
	es.stop["a"]()
	if ev := es.next(); ev.node != "a" || ev.epoch != 0 {
		t.Fatalf("event %+v, want a deposed as it stops", ev)
	}
	es.settle(1)
	es.advance(3*time.Second, 1)
	if ev := es.next(); ev.node != "b" || ev.epoch != 2 {
		t.Fatalf("event %+v, want b elected under epoch 2 at its next request", ev)
	}
}

// TestElectorStepsDownForANewerHolder: a leader that finds another holder
// (it was paused past its TTL) steps down at once.
func TestElectorStepsDownForANewerHolder(t *testing.T) {
	es := newElectors(t)
	es.start("a")
	es.settle(1)
	es.next()
	es.table.mu.Lock()
	es.table.leases["default"] = results.Lease{Location: "default", Holder: "b", Epoch: 2, Expires: es.clock.Now().Add(time.Hour)}
	es.table.mu.Unlock()
	es.advance(3*time.Second, 1)
	if ev := es.next(); ev.node != "a" || ev.epoch != 0 {
		t.Fatalf("event %+v, want a deposed", ev)
	}
}

// TestElectorLapsedThenDeposed: a leader that lapsed while cut off, and
// finds another holder when it gets through again, is deposed; had it
// found the lease free, it would have been elected under a new epoch.
func TestElectorLapsedThenDeposed(t *testing.T) {
	es := newElectors(t)
	es.start("a")
	es.settle(1)
	es.next()
	es.table.setDown("a", true)
	for range 3 {
		es.advance(3*time.Second, 1)
	}
	if ev := es.next(); ev.node != "a" || ev.epoch != lapsedEvent {
		t.Fatalf("event %+v, want a lapsed", ev)
	}
	es.table.mu.Lock()
	es.table.leases["default"] = results.Lease{Location: "default", Holder: "b", Epoch: 2, Expires: es.clock.Now().Add(time.Hour)}
	es.table.mu.Unlock()
	es.table.setDown("a", false)
	es.advance(3*time.Second, 1)
	if ev := es.next(); ev.node != "a" || ev.epoch != 0 {
		t.Fatalf("event %+v, want a deposed", ev)
	}
	es.none()
}
