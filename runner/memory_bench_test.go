package runner

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner/prober"
)

// What the daemon keeps per probe. Each benchmark runs every probe of a
// fleet once against one loopback provider, as a daemon whose probes all
// came due would, and reports what stays alive afterwards:
//
//   - heap-B/probe: live heap after a GC, minus the live heap before the
//     round (probes and their config already built), per probe;
//   - stack-B/probe: the same for goroutine stacks, which the heap does
//     not count;
//   - goroutines/probe: goroutines alive after the round, minus those
//     before, per probe;
//   - conns/probe: connections the provider still holds open, per probe.
//
// The provider runs in the same process, so its side of each idle
// connection (a goroutine and its buffers) is counted too: conns/probe
// tells how much of the heap is connections. ns/run is the wall time of
// one run with memConcurrency runs in flight, not a CPU cost.
//
// Run them with -benchtime 1x: a round of 10,000 probes takes seconds.

// memConcurrency is how many runs the benchmarks keep in flight, as the
// default max_concurrency does.
const memConcurrency = 64

// memFleets are the fleet sizes measured.
var memFleets = []int{1_000, 10_000}

// memProvider is a loopback provider of the 20-item search answer that
// counts the connections it holds open.
type memProvider struct {
	url  string
	open atomic.Int64
}

func memServe(b *testing.B) *memProvider {
	b.Helper()
	body := []byte(searchBody(20))
	p := &memProvider{}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			p.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			p.open.Add(-1)
		}
	}
	s.Start()
	b.Cleanup(s.Close)
	p.url = s.URL
	return p
}

// memProbes returns n probes of url, each its own value with its own name,
// sharing one compiled consumer as a loaded config's probes do.
func memProbes(b *testing.B, url string, n int) []*checks.Probe {
	tmpl := testProbe(b, url)
	tmpl.Interval, tmpl.Jitter = time.Minute, time.Second
	probes := make([]*checks.Probe, n)
	for i := range probes {
		p := *tmpl
		p.Name = fmt.Sprintf("probe_%05d", i)
		probes[i] = &p
	}
	return probes
}

// memSnapshot is the live heap, the stacks in use and the goroutine count
// after a full GC.
type memSnapshot struct {
	heap, stack uint64
	goroutines  int
}

func memMeasure() memSnapshot {
	// Twice: finalizers queued by the first collection free more in the
	// second.
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSnapshot{heap: m.HeapAlloc, stack: m.StackInuse, goroutines: runtime.NumGoroutine()}
}

// memReport reports what after holds over before, per probe. The metrics
// are logged too when b failed, since a failed benchmark prints none.
func memReport(b *testing.B, before, after memSnapshot, provider *memProvider, n int) {
	metrics := []struct {
		unit  string
		value float64
	}{
		{"heap-B/probe", float64(int64(after.heap)-int64(before.heap)) / float64(n)},
		{"stack-B/probe", float64(int64(after.stack)-int64(before.stack)) / float64(n)},
		{"goroutines/probe", float64(after.goroutines-before.goroutines) / float64(n)},
		{"conns/probe", float64(provider.open.Load()) / float64(n)},
	}
	for _, m := range metrics {
		b.ReportMetric(m.value, m.unit)
		if b.Failed() {
			b.Logf("%.4g %s", m.value, m.unit)
		}
	}
}

// BenchmarkProbeMemoryExecutor runs each probe of a fleet once through one
// Executor, memConcurrency at a time, and reports what the Executor keeps.
func BenchmarkProbeMemoryExecutor(b *testing.B) {
	for _, n := range memFleets {
		b.Run(fmt.Sprintf("probes=%d", n), func(b *testing.B) {
			provider := memServe(b)
			probes := memProbes(b, provider.url, n)
			e := prober.NewExecutor(prober.Options{Version: "test"})
			b.Cleanup(e.CloseIdleConnections)
			before := memMeasure()
			var runs int
			for b.Loop() {
				memRound(b, e, probes)
				runs += n
			}
			b.StopTimer()
			after := memMeasure()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs), "ns/run")
			memReport(b, before, after, provider, n)
			runtime.KeepAlive(probes)
		})
	}
}

// memRound runs every probe once, memConcurrency at a time, and marks b
// failed on a run that does not pass; the metrics are still reported.
func memRound(b *testing.B, e *prober.Executor, probes []*checks.Probe) {
	next := make(chan *checks.Probe)
	var failed atomic.Pointer[results.Result]
	var wg sync.WaitGroup
	for range memConcurrency {
		wg.Go(func() {
			for p := range next {
				if r := e.Run(b.Context(), p); r.Outcome != results.Pass {
					failed.Store(&r)
				}
			}
		})
	}
	for _, p := range probes {
		next <- p
	}
	close(next)
	wg.Wait()
	if r := failed.Load(); r != nil {
		b.Errorf("a run did not pass: %s", dump(*r))
	}
}

// BenchmarkProbeMemoryDaemon schedules a fleet in a Daemon (fake clock,
// max_concurrency memConcurrency, a store that keeps nothing), fires every
// probe at once and reports, once all have run, what the daemon keeps:
// its jobs, its executor's connections, each probe's last result. The
// sched-B/probe metric is the part the schedule alone holds, before any
// run.
func BenchmarkProbeMemoryDaemon(b *testing.B) {
	for _, n := range memFleets {
		b.Run(fmt.Sprintf("probes=%d", n), func(b *testing.B) {
			provider := memServe(b)
			probes := memProbes(b, provider.url, n)
			for b.Loop() {
				memDaemonRound(b, provider, probes)
			}
		})
	}
}

// memDaemonRound builds a daemon of probes, runs each once, reports and
// stops the daemon.
func memDaemonRound(b *testing.B, provider *memProvider, probes []*checks.Probe) {
	n := len(probes)
	cfg := schedConfig(memConcurrency, probes...)
	store := &memNullStore{}
	obs := &memRunCounter{}
	clock := schedClock()
	d, err := New(cfg, Deps{
		Clock:       clock,
		Rand:        func() float64 { return 0 },
		Store:       store,
		Observer:    obs,
		GracePeriod: time.Second,
	})
	if err != nil {
		b.Fatal(err)
	}

	before := memMeasure()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	if _, err := waitArmed(wctx, d, clock, n); err != nil {
		b.Fatalf("waiting for %d probes' jobs to be armed: %v", n, err)
	}
	scheduled := memMeasure()
	start := time.Now()
	clock.Advance(minStartLead + schedSkew)
	for obs.runs.Load() < int64(n) {
		if time.Since(start) > time.Minute {
			b.Fatalf("%d of %d runs finished after a minute", obs.runs.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	after := memMeasure()

	if f := obs.failed.Load(); f > 0 {
		b.Errorf("%d of %d runs did not pass", f, n)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/run")
	b.ReportMetric(float64(int64(scheduled.heap)-int64(before.heap))/float64(n), "sched-B/probe")
	memReport(b, before, after, provider, n)

	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// memRunCounter is an Observer that counts finished runs.
type memRunCounter struct {
	nopObserver
	runs, failed atomic.Int64
}

func (o *memRunCounter) RunFinished(r *results.Result) {
	if r.Outcome != results.Pass {
		o.failed.Add(1)
	}
	o.runs.Add(1)
}

// memNullStore is a Store that keeps nothing, so that what the benchmark
// sees alive is the daemon's and not the store's.
type memNullStore struct{}

var _ Store = memNullStore{}

func (memNullStore) RecordRun(context.Context, *results.RunRecord) error { return nil }
func (memNullStore) ShapeProfile(context.Context, string) (results.StoredProfile, bool, error) {
	return results.StoredProfile{}, false, nil
}
func (memNullStore) ToolDefinition(context.Context, string) (results.ToolDefinition, bool, error) {
	return results.ToolDefinition{}, false, nil
}
func (memNullStore) ProfileResets(context.Context, time.Time) (map[string]time.Time, error) {
	return nil, nil
}
func (memNullStore) RecentShapes(context.Context, string, time.Time, int) ([]results.ShapeSeen, error) {
	return nil, nil
}
func (memNullStore) AlertStates(context.Context) (map[string]results.AlertState, error) {
	return nil, nil
}
func (memNullStore) DueAlerts(context.Context, time.Time, int) ([]results.Alert, error) {
	return nil, nil
}
func (memNullStore) NextAlertDue(context.Context) (time.Time, bool, error) {
	return time.Time{}, false, nil
}
func (memNullStore) MarkAlertDelivered(context.Context, int64, time.Time) error { return nil }
func (memNullStore) MarkAlertRetry(context.Context, int64, int, time.Time, string) error {
	return nil
}
func (memNullStore) MarkAlertFailed(context.Context, int64, int, string) error { return nil }
func (memNullStore) PendingGroup(_ context.Context, key string) (results.AlertGroup, error) {
	return results.AlertGroup{Key: key}, nil
}

// What the memory work must not break: a run owns the body it read, and
// the schedule, which keeps nothing per probe between runs, still never
// lets a probe overlap itself.

// TestScheduleKeepsNoGoroutinePerProbe: once every probe of a fleet has
// run, the daemon holds a handful of goroutines (scheduler, connections),
// not one per probe, as gocron's singleton mode would.
func TestScheduleKeepsNoGoroutinePerProbe(t *testing.T) {
	schedCheckLeaks(t)
	const fleet = 300
	prov := schedServe(t, nil, false)
	probes := make([]*checks.Probe, fleet)
	for i := range probes {
		probes[i] = schedProbe(t, fmt.Sprintf("probe_%03d", i), prov.URL, time.Minute)
	}
	h := schedNew(t, schedConfig(8, probes...), nil)
	before := runtime.NumGoroutine()
	h.run()
	h.armAll(fleet)
	h.clock.Advance(minStartLead + schedSkew)
	h.eventually("every run recorded", func() bool {
		all, _, _, _ := h.store.snapshot()
		return len(all) >= fleet
	})
	h.eventually(fmt.Sprintf("fewer than %d goroutines more than before the daemon ran", fleet/2), func() bool {
		return runtime.NumGoroutine()-before < fleet/2
	})
}

// TestReloadedProbeDoesNotOverlapItsOldRun: a reload that changes a probe
// while its run is in flight replaces its job; the new job's first tick
// comes while the old run is still going (within the grace period) and is
// skipped, as any tick during a run of the probe is.
func TestReloadedProbeDoesNotOverlapItsOldRun(t *testing.T) {
	schedCheckLeaks(t)
	old, moved := schedServe(t, nil, true), schedServe(t, nil, false)
	h := schedNew(t, schedConfig(4, schedProbe(t, "search", old.URL, time.Minute)),
		func(o *Deps) { o.GracePeriod = schedWait })
	h.run()
	h.tick(1, minStartLead+schedSkew)
	h.eventually("the first request", func() bool { return old.requests.Load() == 1 })

	if err := h.d.Reload(schedConfig(4, schedProbe(t, "search", moved.URL, time.Minute))); err != nil {
		h.Fatalf("Reload: %v", err)
	}
	h.tick(1, minStartLead+schedSkew)  // the new job's first tick
	time.Sleep(200 * time.Millisecond) // an overlapping run would have reached the provider by now
	if n := moved.requests.Load(); n != 0 {
		h.Fatalf("the reloaded probe sent %d request(s) while its old run was in flight, want 0", n)
	}

	old.release()
	if r := h.waitRuns("search", 1)[0]; r.Outcome != results.Pass {
		h.Errorf("the old run: %s", dump(r))
	}
	h.tick(1, time.Minute)
	h.waitRuns("search", 2)
	if n := moved.requests.Load(); n != 1 {
		h.Errorf("the reloaded probe's provider saw %d requests after the next tick, want 1", n)
	}
}
