package runner

import (
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// --- 7. A fleet against one dead host ---------------------------------------

// fleetSize is the number of probes of the fleet tests.
const fleetSize = 1000

// fleetProbes returns fleetSize probes of url, named dead_0000 onwards.
func fleetProbes(t *testing.T, url string, timeout time.Duration, r checks.Retries) []*checks.Probe {
	probes := make([]*checks.Probe, fleetSize)
	for i := range probes {
		p := schedProbe(t, fmt.Sprintf("dead_%04d", i), url, time.Hour)
		p.Steps[0].Timeout, p.Steps[0].Retries = timeout, r
		probes[i] = p
	}
	return probes
}

// runFleet starts a daemon of probes with limit slots, fires every probe
// at the same instant (schedule jitter 0: the worst case) and returns the
// recorded runs once all of them are in. The executor's back-off jitter is
// the real, random one.
func runFleet(t *testing.T, limit int, probes []*checks.Probe) (*schedHarness, []results.Result) {
	t.Helper()
	h := schedNew(t, schedConfig(limit, probes...), nil)
	h.run()
	h.tick(len(probes), minStartLead+schedSkew)
	// Every run ends within its budget, and the fleet runs in waves of
	// limit; twice that, for a machine busy with other tests.
	waves := (len(probes) + limit - 1) / limit
	within := 2 * time.Duration(waves) * probes[0].Steps[0].Retries.Budget
	var all []results.Result
	waitWithin(t, within, "every fleet run recorded", func() bool {
		all, _, _, _ = h.store.snapshot()
		return len(all) >= len(probes)
	}, h.state)
	return h, all
}

// maxOverlap is the largest number of runs whose [start, end] intervals
// overlap at one instant. A run holds its concurrency slot from before it
// starts until after it ends, so this never exceeds max_concurrency.
func maxOverlap(runs []results.Result) int {
	type event struct {
		at    time.Time
		delta int
	}
	var events []event
	for _, r := range runs {
		events = append(events, event{r.StartedAt, 1}, event{r.StartedAt.Add(r.Duration), -1})
	}
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	now, peak := 0, 0
	for _, e := range events {
		now += e.delta
		peak = max(peak, now)
	}
	return peak
}

// TestFaultFleetClosedPort: 1,000 probes of a closed loopback port fire at
// once under max_concurrency 64. Every run is connection_refused after its
// two attempts; no more than 64 runs are ever in flight; and the retries
// are not synchronized: the gap between an attempt's end and the retry's
// start is spread over the whole back-off window [0, 200ms), not bunched
// at one value. Scheduler noise only lengthens gaps, so the lower half of
// the window being well populated is the part a broken jitter cannot fake.
func TestFaultFleetClosedPort(t *testing.T) {
	const limit = 64
	const window = 200 * time.Millisecond
	// A refused connection comes back at once; the timeout and budget are
	// only there for a machine so busy that it does not run the dial's
	// goroutine for seconds, which must not turn a refusal into a timeout
	// or cost the run its second attempt.
	probes := fleetProbes(t, closedPort(t), 20*time.Second,
		checks.Retries{MaxAttempts: 2, BaseDelay: window, MaxDelay: window, Budget: time.Minute})
	start := time.Now()
	_, runs := runFleet(t, limit, probes)
	t.Logf("%d runs in %v", len(runs), time.Since(start))

	if peak := maxOverlap(runs); peak > limit {
		t.Errorf("%d runs overlapped, want at most max_concurrency %d", peak, limit)
	}
	buckets := map[time.Duration]bool{}
	lower := 0
	for _, r := range runs {
		if r.Code() != results.CodeConnectionRefused || len(r.Attempts) != 2 {
			t.Fatalf("run of %s: %s", r.Probe, dump(r))
		}
		first, second := r.Attempts[0], r.Attempts[1]
		gap := second.StartedAt.Sub(first.StartedAt.Add(first.Duration))
		if gap < first.Wait {
			t.Fatalf("run of %s retried %v after the first attempt, before its %v back-off", r.Probe, gap, first.Wait)
		}
		buckets[gap.Truncate(10*time.Millisecond)] = true
		if gap < window/2 {
			lower++
		}
	}
	// A uniform wait puts half the gaps in each half of the window and
	// fills its 20 buckets; a fixed wait (no jitter) puts them all in one
	// half and in a couple of buckets.
	if lower < fleetSize/5 || lower > fleetSize*4/5 {
		t.Errorf("%d of %d retry gaps under %v, want between 20%% and 80%%: the back-off is not jittered", lower, fleetSize, window/2)
	}
	if len(buckets) < 10 {
		t.Errorf("retry gaps fall in %d distinct 10ms buckets, want at least 10: retries are synchronized", len(buckets))
	}
}

// connGauge is a loopback listener that accepts connections and never
// answers. It counts those open and, among them, those busy: sent a
// request. A connection the client dialed for an attempt that gave up
// before the dial completed goes to the client's idle pool unused (net/http
// keeps it for the next request): it is open, not busy, until a later
// attempt picks it up.
type connGauge struct {
	mu         sync.Mutex
	open, busy int
	ln         net.Listener
	wg         sync.WaitGroup
}

// newConnGauge starts the listener; the test's cleanup closes it.
func newConnGauge(t *testing.T) *connGauge {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &connGauge{ln: ln}
	var conns sync.Map
	g.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.add(1, 0)
			conns.Store(c, true)
			g.wg.Go(func() {
				// Read until the client hangs up, answering nothing.
				busy := 0
				if n, _ := c.Read(make([]byte, 1)); n > 0 {
					busy = 1
					g.add(0, 1)
					io.Copy(io.Discard, c)
				}
				conns.Delete(c)
				c.Close()
				g.add(-1, -busy)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		g.wg.Wait()
	})
	return g
}

func (g *connGauge) add(open, busy int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open += open
	g.busy += busy
}

func (g *connGauge) get() (open, busy int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open, g.busy
}

// TestFaultFleetHangingPort: 1,000 probes of a port that accepts and
// hangs, under max_concurrency 100: every run times out after its two
// attempts, no more than 100 runs ever overlap, the fleet does reach the
// limit, and no connection outlives the daemon.
//
// The runs' own intervals prove the limit exactly. The listener's counts
// cannot: it learns of a close a moment after the client made it (tens of
// milliseconds on a loaded machine, while the slot already holds the next
// connection), and a dial that completes after its attempt gave up leaves
// an unused connection in the client's idle pool, open but not counted
// against any run, until a later attempt picks it up or the daemon stops.
// So the listener's peaks are logged, not judged; what it must see is
// every connection closed once the daemon has stopped.
func TestFaultFleetHangingPort(t *testing.T) {
	const limit = 100
	const timeout = 150 * time.Millisecond
	g := newConnGauge(t)
	// The budget is far above two attempts' worth: on a machine so busy that
	// an attempt's timer fires seconds late, the run must still get its
	// second attempt.
	probes := fleetProbes(t, "http://"+g.ln.Addr().String(), timeout,
		checks.Retries{MaxAttempts: 2, BaseDelay: 50 * time.Millisecond, MaxDelay: 50 * time.Millisecond, Budget: time.Minute})

	stop := make(chan struct{})
	var (
		peakBusy, peakOpen int
		sampler            sync.WaitGroup
	)
	sampler.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			open, busy := g.get()
			peakOpen, peakBusy = max(peakOpen, open), max(peakBusy, busy)
		}
	})
	start := time.Now()
	h, runs := runFleet(t, limit, probes)
	close(stop)
	sampler.Wait()
	t.Logf("%d runs in %v; at most %d connections busy and %d open at a sample", len(runs), time.Since(start), peakBusy, peakOpen)

	for _, r := range runs {
		if r.Code() != results.CodeTimeout || len(r.Attempts) != 2 {
			h.Fatalf("run of %s: %s", r.Probe, dump(r))
		}
	}
	if o := maxOverlap(runs); o > limit {
		h.Errorf("%d runs overlapped, want at most max_concurrency %d", o, limit)
	} else if o < limit/2 {
		h.Errorf("at most %d runs overlapped: the fleet never came near the limit of %d, so the test proves nothing", o, limit)
	}

	// Stopping closes the idle pool: a dial that completed after its
	// attempt gave up left its connection there.
	if err := h.stop(); err != nil {
		h.Fatal(err)
	}
	waitUntil(t, "every connection closed once the daemon stopped", func() bool {
		open, _ := g.get()
		return open == 0
	}, func() string {
		open, busy := g.get()
		return fmt.Sprintf("%d open, %d busy", open, busy)
	})
}
