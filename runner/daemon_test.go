package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
)

// TestDaemonIntervals runs one probe for five ticks of its interval and
// wants five recorded runs, each logged once with its facts.
func TestDaemonIntervals(t *testing.T) {
	schedCheckLeaks(t)
	prov := schedServe(t, nil, false)
	cfg := schedConfig(4, schedProbe(t, "search", prov.URL, time.Minute))
	cfg.Fleet.Node = "web-1"
	h := schedNew(t, cfg, nil)
	h.run()

	h.tick(1, minStartLead+schedSkew) // Rand 0: the first run is at the earliest start
	h.waitRuns("search", 1)
	for i := 2; i <= 5; i++ {
		h.tick(1, time.Minute)
		h.waitRuns("search", i)
	}
	if err := h.stop(); err != nil {
		h.Fatalf("Run = %v, want nil", err)
	}

	runs := h.runs("search")
	if got := prov.requests.Load(); got != 5 || len(runs) != 5 {
		h.Fatalf("5 ticks: provider saw %d requests and %d runs were recorded, want 5 and 5", got, len(runs))
	}
	ids := map[string]bool{}
	for i, r := range runs {
		if r.Outcome != results.Pass {
			h.Errorf("run %d: outcome %s %s, want pass", i+1, r.Outcome, r.Code())
		}
		if r.Node != "web-1" {
			h.Errorf("run %d: node %q, want fleet.node web-1", i+1, r.Node)
		}
		ids[r.OperationID] = true
	}
	lines := h.logs.records("probe run")
	if len(lines) != 5 {
		h.Fatalf("%d \"probe run\" log lines, want one per run (5)", len(lines))
	}
	for _, l := range lines {
		for _, k := range []string{"probe", "outcome", "code", "attempts", "duration_ms", "operation_id"} {
			if _, ok := l[k]; !ok {
				h.Errorf("log line %v lacks %s", l, k)
			}
		}
		if l["level"] != "INFO" || l["probe"] != "search" || l["outcome"] != "pass" || l["attempts"] != 1.0 ||
			!ids[l["operation_id"].(string)] {
			h.Errorf("log line %v does not describe a recorded run", l)
		}
		if _, ok := l["drift"]; ok {
			h.Errorf("log line %v says drift for a run that did not drift", l)
		}
	}
	if st := h.status(); st.State != "stopped" {
		h.Errorf("after Run returned, state %q, want stopped", st.State)
	}
}

// TestDaemonLogsDrift changes the provider's shape after five runs: the
// run that shows the new shape is logged with drift=true, the others
// without it.
func TestDaemonLogsDrift(t *testing.T) {
	schedCheckLeaks(t)
	var n atomic.Int32
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if n.Add(1) <= shape.ProfileWarmup {
			io.WriteString(w, bodyOriginalList)
			return
		}
		io.WriteString(w, bodyItemsWrapper)
	})
	h := schedNew(t, schedConfig(4, schedProbe(t, "search", url, time.Minute)), nil)
	h.run()
	h.tick(1, minStartLead+schedSkew)
	for i := 1; i <= shape.ProfileWarmup+1; i++ {
		if i > 1 {
			h.tick(1, time.Minute)
		}
		h.waitRuns("search", i)
	}
	h.eventually("every run logged", func() bool { return len(h.logs.records("probe run")) == shape.ProfileWarmup+1 })
	for i, l := range h.logs.records("probe run") {
		if drifted := i == shape.ProfileWarmup; (l["drift"] == true) != drifted {
			h.Errorf("run %d logged as %v, want drift=true only on the drifted run", i+1, l)
		}
	}
}

// TestDaemonJitterBounds places the first run with Rand at both ends of
// [0,1) (and with a source that strays outside it): the first run must lie
// in [0, jitter) after the start, strictly in the future, and happen then.
func TestDaemonJitterBounds(t *testing.T) {
	const jitter = 2 * time.Second // schedProbe's
	tests := map[string]struct {
		rand     float64
		min, max time.Duration // where the first run must be, both inclusive
	}{
		"rand 0":            {rand: 0, min: minStartLead, max: minStartLead},
		"rand almost 1":     {rand: 0.999999, min: jitter - 5*time.Millisecond, max: jitter - 1},
		"rand 1 is clamped": {rand: 1, min: jitter - 1, max: jitter - 1},
		"rand negative":     {rand: -3, min: minStartLead, max: minStartLead},
		"rand half":         {rand: 0.5, min: jitter / 2, max: jitter / 2},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			schedCheckLeaks(t)
			prov := schedServe(t, nil, false)
			h := schedNew(t, schedConfig(4, schedProbe(t, "search", prov.URL, time.Hour)), func(o *Deps) {
				o.Rand = func() float64 { return tt.rand }
			})
			h.run()
			h.tick(1, 0) // the job is armed
			next := h.probeStatus("search").NextRun
			if off := next.Sub(h.start); off < tt.min || off > tt.max || off >= jitter || off <= 0 {
				h.Fatalf("first run %v after the start, want within [%v, %v] and in (0, %v)", off, tt.min, tt.max, jitter)
			}
			h.clock.Advance(next.Sub(h.clock.Now()) + schedSkew)
			h.waitRuns("search", 1)
			if next2 := h.probeStatus("search").NextRun; !next2.Equal(next.Add(time.Hour)) {
				h.Errorf("second run at %v, want one interval after the first (%v)", next2, next.Add(time.Hour))
			}
		})
	}
}

// TestDaemonNoOverlap holds a probe's run past three ticks of its
// interval: the probe never runs twice at once, the ticks it covered are
// skipped rather than queued, and the schedule goes on afterwards.
func TestDaemonNoOverlap(t *testing.T) {
	schedCheckLeaks(t)
	prov := schedServe(t, nil, true)
	h := schedNew(t, schedConfig(4, schedProbe(t, "slow", prov.URL, time.Minute)), nil)
	h.run()

	h.tick(1, minStartLead+schedSkew)
	h.eventually("the first request", func() bool { return prov.requests.Load() == 1 })
	for range 3 {
		h.tick(1, time.Minute) // each tick re-arms the job: the scheduler saw it
	}
	if !h.probeStatus("slow").Running {
		h.Error("status does not show the run in flight")
	}
	time.Sleep(200 * time.Millisecond) // an overlapping run would have reached the provider by now
	if n := prov.requests.Load(); n != 1 {
		h.Fatalf("3 ticks during a run: provider saw %d requests, want 1 (the probe overlapped itself)", n)
	}

	prov.release()
	h.waitRuns("slow", 1)
	h.tick(1, time.Minute)
	h.waitRuns("slow", 2)
	time.Sleep(200 * time.Millisecond) // a queued backlog would fire now
	if n := len(h.runs("slow")); n != 2 {
		h.Errorf("%d runs after the slow one and one more tick, want 2: skipped ticks were queued", n)
	}
	if _, peak := prov.gauge.get(); peak != 1 {
		h.Errorf("provider saw %d requests at once, want 1", peak)
	}
}

// TestDaemonConcurrencyLimit starts five probes whose providers hang with
// max_concurrency 2: at most two providers ever see a request at once, the
// others wait their turn without skipping it, and the scheduler itself
// keeps working meanwhile.
func TestDaemonConcurrencyLimit(t *testing.T) {
	schedCheckLeaks(t)
	gauge := &schedGauge{}
	var provs []*schedProvider
	var probes []*checks.Probe
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		p := schedServe(t, gauge, true)
		provs = append(provs, p)
		probes = append(probes, schedProbe(t, name, p.URL, time.Minute))
	}
	h := schedNew(t, schedConfig(2, probes...), nil)
	h.run()

	h.tick(5, minStartLead+schedSkew) // all five fire together
	h.eventually("2 runs in flight and 3 waiting", func() bool {
		st := h.status()
		return st.InFlight == 2 && st.Waiting == 3
	})
	time.Sleep(200 * time.Millisecond) // a third request would have arrived by now
	if now, peak := gauge.get(); now != 2 || peak != 2 {
		h.Fatalf("providers see %d requests at once (peak %d), want 2 (max_concurrency)", now, peak)
	}

	// The scheduler is not starved by runs holding or awaiting slots: it
	// re-arms every job on a tick (skipping the runs still in progress)
	// and answers Status.
	h.tick(5, time.Minute)
	h.tick(5, 0)
	st := h.status()
	for _, p := range st.Probes {
		if !p.Running || !p.NextRun.Equal(h.start.Add(minStartLead+2*time.Minute)) {
			h.Errorf("probe %s: running %v, next run %v; want running, next at start+2m", p.Name, p.Running, p.NextRun)
		}
	}

	for _, p := range provs {
		p.release()
	}
	for _, p := range probes {
		h.waitRuns(p.Name, 1)
	}
	for i, p := range provs {
		if n := p.requests.Load(); n != 1 {
			h.Errorf("provider %s saw %d requests, want 1", probes[i].Name, n)
		}
	}
	if _, peak := gauge.get(); peak != 2 {
		h.Errorf("peak of requests at once %d, want 2", peak)
	}
}

// TestDaemonSlotFreedBeforeCommit holds the recording of the first run
// (a store whose commit waits) under max_concurrency 1: the slot is given
// back once that run's answer is judged, so the other probe runs
// meanwhile, while the first probe's next tick is skipped until its run is
// recorded, keeping its runs in order.
func TestDaemonSlotFreedBeforeCommit(t *testing.T) {
	schedCheckLeaks(t)
	provs := map[string]*schedProvider{"a": schedServe(t, nil, false), "b": schedServe(t, nil, false)}
	h := schedNew(t, schedConfig(1, schedProbe(t, "a", provs["a"].URL, time.Minute), schedProbe(t, "b", provs["b"].URL, time.Minute)), nil)
	commit := make(chan struct{})
	var commitOnce sync.Once
	release := func() { commitOnce.Do(func() { close(commit) }) }
	t.Cleanup(release)
	var mu sync.Mutex
	first, held := "", 0 // the probe whose recording waits, and its records
	h.store.setHook(func(rec *results.RunRecord) error {
		mu.Lock()
		if first == "" {
			first = rec.Result.Probe
		}
		wait := rec.Result.Probe == first
		if wait {
			held++
		}
		mu.Unlock()
		if wait {
			<-commit
		}
		return nil
	})
	firstProbe := func() string { mu.Lock(); defer mu.Unlock(); return first }
	h.run()

	h.tick(2, minStartLead+schedSkew)
	h.eventually("a run waiting for its commit", func() bool { return firstProbe() != "" })
	held1, other := firstProbe(), "a"
	if held1 == "a" {
		other = "b"
	}
	h.eventually(other+"'s run recorded while "+held1+"'s commit waits", func() bool { return len(h.runs(other)) == 1 })
	h.tick(2, time.Minute) // held1 is still being recorded: its tick is skipped
	time.Sleep(200 * time.Millisecond)
	if n := provs[held1].requests.Load(); n != 1 {
		h.Fatalf("%s's provider saw %d requests while its first run was being recorded, want 1", held1, n)
	}

	release()
	h.waitRuns(held1, 1)
	mu.Lock()
	defer mu.Unlock()
	if held != 1 {
		h.Errorf("%s recorded %d times, want 1", held1, held)
	}
}

// TestDaemonPanicBecomesInternalError makes the store panic while the
// first run is recorded: that run is recorded as internal_error, under its
// own operation id, and the next run passes as usual.
func TestDaemonPanicBecomesInternalError(t *testing.T) {
	schedCheckLeaks(t)
	prov := schedServe(t, nil, false)
	cfg := schedConfig(4, schedProbe(t, "search", prov.URL, time.Minute))
	cfg.Fleet.Node = "web-1"
	h := schedNew(t, cfg, nil)
	panicked := false
	h.store.setFail(func(method string) error {
		if method == "RecordRun" && !panicked {
			panicked = true
			panic("disk on fire")
		}
		return nil
	})
	h.run()

	h.tick(1, minStartLead+schedSkew)
	h.waitRuns("search", 1)
	h.tick(1, time.Minute)
	runs := h.waitRuns("search", 2)

	first := runs[0]
	if first.Code() != results.CodeInternalError || first.Outcome != results.ContractError ||
		!strings.Contains(first.Error.Message, "disk on fire") {
		h.Errorf("run with a panicking store: %s", dump(first))
	}
	if first.OperationID == "" || first.Probe != "search" || first.StartedAt.IsZero() || first.Node != "web-1" {
		h.Errorf("internal error lacks the run's identity: %s", dump(first))
	}
	logged := false
	for _, l := range h.logs.records("probe run") {
		logged = logged || (l["operation_id"] == first.OperationID && l["code"] == "internal_error")
	}
	if !logged {
		h.Error("the internal error was not logged as a run")
	}
	if len(h.logs.records("panic in probe run")) != 1 {
		h.Error("the panic was not logged at error level")
	}
	if runs[1].Outcome != results.Pass {
		h.Errorf("run after the panic: %s", dump(runs[1]))
	}
}

// TestDaemonSurvivesEscapedPanic makes the logger panic whenever a run is
// reported, and on every error line: the panic escapes runOnce's own
// recovery and reaches the task's last resort (escapedPanic), which must
// keep the process alive (without it, this test crashes the test binary).
func TestDaemonSurvivesEscapedPanic(t *testing.T) {
	schedCheckLeaks(t)
	prov := schedServe(t, nil, false)
	h := schedNew(t, schedConfig(4, schedProbe(t, "search", prov.URL, time.Minute)), func(o *Deps) {
		o.Logger = slog.New(schedPanicHandler{o.Logger.Handler(), func(r slog.Record) bool {
			return r.Message == "probe run" || r.Level >= slog.LevelError
		}})
	})
	h.run()

	h.tick(1, minStartLead+schedSkew)
	h.waitRuns("search", 1)
	h.tick(1, time.Minute)
	runs := h.waitRuns("search", 2)
	for i, r := range runs {
		if r.Outcome != results.Pass {
			h.Errorf("run %d: %s", i+1, dump(r))
		}
	}
	h.eventually("the runs to end", func() bool { return h.status().InFlight == 0 })
	if err := h.stop(); err != nil {
		h.Errorf("Run = %v, want nil", err)
	}
}

// TestDaemonStoreErrorIsLogged makes recording fail: each failure is
// logged at error level with the run's identity, and the schedule goes on.
func TestDaemonStoreErrorIsLogged(t *testing.T) {
	schedCheckLeaks(t)
	prov := schedServe(t, nil, false)
	h := schedNew(t, schedConfig(4, schedProbe(t, "search", prov.URL, time.Minute)), nil)
	h.store.setFail(func(method string) error {
		if method == "RecordRun" {
			return errors.New("database is locked")
		}
		return nil
	})
	h.run()

	h.tick(1, minStartLead+schedSkew)
	h.eventually("a logged store error", func() bool { return len(h.logs.records("recording the run failed")) == 1 })
	h.idle()
	h.tick(2, time.Minute) // the job and the write queue's back-off
	h.eventually("a second logged store error", func() bool { return len(h.logs.records("recording the run failed")) == 2 })
	for _, l := range h.logs.records("recording the run failed") {
		if l["level"] != "ERROR" || l["probe"] != "search" || l["operation_id"] == "" ||
			!strings.Contains(l["error"].(string), "database is locked") {
			h.Errorf("store error logged as %v", l)
		}
	}
	runs := h.logs.records("probe run")
	if len(runs) != 2 {
		h.Errorf("%d probe run lines, want 2", len(runs))
	}
	for _, l := range runs {
		if l["recorded"] != false {
			h.Errorf("a run that was not recorded is logged as %v, without recorded=false", l)
		}
	}
	if n := prov.requests.Load(); n != 2 {
		h.Errorf("provider saw %d requests, want 2: the schedule stopped after a store error", n)
	}
}

// TestDaemonShutdownDrains stops the daemon with two runs in flight: one
// that finishes within the grace period is recorded as it ended, one that
// hangs is cancelled when the grace period is over and recorded as
// canceled; Run returns nil and leaves no goroutine behind.
func TestDaemonShutdownDrains(t *testing.T) {
	schedCheckLeaks(t)
	slow := schedServe(t, nil, true)
	hung := schedServe(t, nil, true)
	const grace = 2 * time.Second // ample for the slow run, released at once, to finish
	h := schedNew(t, schedConfig(4,
		schedProbe(t, "slow", slow.URL, time.Minute),
		schedProbe(t, "hung", hung.URL, time.Minute),
	), func(o *Deps) { o.GracePeriod = grace })
	h.run()

	h.tick(2, minStartLead+schedSkew)
	h.eventually("both requests", func() bool { return slow.requests.Load() == 1 && hung.requests.Load() == 1 })
	began := time.Now()
	h.cancel()
	// The slow provider answers once shutdown has begun: within the grace
	// period.
	h.eventually("shutdown to begin", func() bool { return h.status().State != "running" })
	slow.release()
	if err := h.stop(); err != nil {
		h.Fatalf("Run = %v, want nil", err)
	}
	if took := time.Since(began); took < grace {
		h.Errorf("Run returned %v after its context ended, before the %v grace period was over", took, grace)
	}

	if runs := h.runs("slow"); len(runs) != 1 || runs[0].Outcome != results.Pass {
		h.Errorf("run that finished within the grace period: %d recorded %v, want one pass", len(runs), runs)
	}
	runs := h.runs("hung")
	if len(runs) != 1 || runs[0].Outcome != results.Unavailable || runs[0].Code() != results.CodeCanceled {
		h.Fatalf("hung run: %d recorded %v, want one unavailable/canceled", len(runs), runs)
	}
	if st := h.status(); st.State != "stopped" || st.InFlight != 0 || st.Waiting != 0 {
		h.Errorf("status after Run returned: %+v", st)
	}
	if err := h.d.Reload(h.d.cfg); !errors.Is(err, ErrDaemonStopped) {
		h.Errorf("Reload after Run returned = %v, want ErrDaemonStopped", err)
	}
}

// TestDaemonShutdownDropsWaitingRuns stops the daemon while runs wait for
// a concurrency slot: they never start (there is nothing to record), and
// shutdown does not wait for slots to free up.
func TestDaemonShutdownDropsWaitingRuns(t *testing.T) {
	schedCheckLeaks(t)
	gauge := &schedGauge{}
	a, b := schedServe(t, gauge, true), schedServe(t, gauge, true)
	h := schedNew(t, schedConfig(1,
		schedProbe(t, "a", a.URL, time.Minute),
		schedProbe(t, "b", b.URL, time.Minute),
	), nil)
	h.run()
	h.tick(2, minStartLead+schedSkew)
	h.eventually("one run in flight and one waiting", func() bool {
		st := h.status()
		return st.InFlight == 1 && st.Waiting == 1
	})
	if err := h.stop(); err != nil {
		h.Fatalf("Run = %v, want nil", err)
	}
	all, _, _, _ := h.store.snapshot()
	if len(all) != 1 || all[0].Code() != results.CodeCanceled {
		h.Errorf("recorded %v, want only the run in flight, canceled", all)
	}
	if n := a.requests.Load() + b.requests.Load(); n != 1 {
		h.Errorf("providers saw %d requests, want 1", n)
	}
}

// TestDaemonReload reloads a running daemon: the removed probe stops, the
// added one starts after its jitter, the changed one runs with its new
// definition, the unchanged one keeps its schedule, and the concurrency
// limit follows the new config.
func TestDaemonReload(t *testing.T) {
	schedCheckLeaks(t)
	keep, change, change2, remove, add := schedServe(t, nil, false), schedServe(t, nil, false),
		schedServe(t, nil, false), schedServe(t, nil, false), schedServe(t, nil, false)
	const interval = 10 * time.Second
	h := schedNew(t, schedConfig(3,
		schedProbe(t, "keep", keep.URL, interval),
		schedProbe(t, "change", change.URL, interval),
		schedProbe(t, "remove", remove.URL, interval),
	), func(o *Deps) { o.Rand = func() float64 { return 0.5 } }) // first runs 1s after (re)scheduling
	h.run()

	h.tick(3, time.Second+schedSkew) // t=1s: the three run
	for _, name := range []string{"keep", "change", "remove"} {
		h.waitRuns(name, 1)
	}
	h.tick(3, 3*time.Second) // t=4s
	keepNext := h.probeStatus("keep").NextRun
	if want := h.start.Add(time.Second + interval); !keepNext.Equal(want) {
		h.Fatalf("keep's next run before the reload: %v, want %v", keepNext, want)
	}

	next := schedConfig(1,
		schedProbe(t, "keep", keep.URL, interval), // equal, but a new value, as a reload loads it
		schedProbe(t, "change", change2.URL, interval),
		schedProbe(t, "add", add.URL, interval),
	)
	if err := h.d.Reload(next); err != nil {
		h.Fatalf("Reload: %v", err)
	}

	st := h.status()
	var names []string
	for _, p := range st.Probes {
		names = append(names, p.Name)
	}
	if want := []string{"add", "change", "keep"}; !slices.Equal(names, want) || st.Scheduled != 3 {
		h.Errorf("scheduled after the reload: %v (%d), want %v", names, st.Scheduled, want)
	}
	var jobs []string
	for _, j := range h.d.sched.Jobs() {
		jobs = append(jobs, j.Name())
	}
	slices.Sort(jobs)
	if want := []string{"add", "change", "keep"}; !slices.Equal(jobs, want) {
		h.Errorf("gocron jobs after the reload: %v, want %v", jobs, want)
	}
	if st.MaxConcurrency != 1 {
		h.Errorf("max concurrency after the reload: %d, want 1", st.MaxConcurrency)
	}
	if got := h.probeStatus("keep").NextRun; !got.Equal(keepNext) {
		h.Errorf("unchanged probe rescheduled: next run %v, want %v as before the reload", got, keepNext)
	}
	if got := h.probeStatus("keep").LastOutcome; got != results.Pass {
		h.Errorf("unchanged probe lost its last run: %q", got)
	}
	fresh := h.clock.Now().Add(time.Second)
	for _, name := range []string{"change", "add"} {
		if got := h.probeStatus(name).NextRun; !got.Equal(fresh) {
			h.Errorf("%s: next run %v, want %v (a fresh jitter from the reload)", name, got, fresh)
		}
	}

	h.tick(3, time.Second+schedSkew) // t=5s: change (at its new URL) and add
	h.waitRuns("change", 2)
	h.waitRuns("add", 1)
	h.tick(3, 6*time.Second) // t=11s: keep, on its old schedule
	h.waitRuns("keep", 2)
	h.tick(3, 4*time.Second) // t=15s: change and add again
	h.waitRuns("change", 3)
	h.waitRuns("add", 2)
	if err := h.stop(); err != nil {
		h.Fatal(err)
	}

	for _, c := range []struct {
		name string
		prov *schedProvider
		want int32
	}{{"keep", keep, 2}, {"old change", change, 1}, {"new change", change2, 2}, {"remove", remove, 1}, {"add", add, 2}} {
		if got := c.prov.requests.Load(); got != c.want {
			h.Errorf("%s provider saw %d requests, want %d", c.name, got, c.want)
		}
	}
	if n := len(h.runs("remove")); n != 1 {
		h.Errorf("removed probe has %d runs, want 1", n)
	}
}

// TestDaemonReloadInFlight removes two probes while their runs are in
// flight: the one that finishes within the grace period is recorded as it
// ended, the one that hangs is cancelled after it and recorded as canceled.
func TestDaemonReloadInFlight(t *testing.T) {
	schedCheckLeaks(t)
	finishing, hung, other := schedServe(t, nil, true), schedServe(t, nil, true), schedServe(t, nil, false)
	h := schedNew(t, schedConfig(4,
		schedProbe(t, "finishing", finishing.URL, time.Minute),
		schedProbe(t, "hung", hung.URL, time.Minute),
	), func(o *Deps) { o.GracePeriod = 2 * time.Second })
	h.run()
	h.tick(2, minStartLead+schedSkew)
	h.eventually("both requests", func() bool { return finishing.requests.Load() == 1 && hung.requests.Load() == 1 })

	if err := h.d.Reload(schedConfig(4, schedProbe(t, "other", other.URL, time.Minute))); err != nil {
		h.Fatalf("Reload: %v", err)
	}
	finishing.release()
	if r := h.waitRuns("finishing", 1)[0]; r.Outcome != results.Pass {
		h.Errorf("removed probe's run that finished: %s", dump(r))
	}
	if r := h.waitRuns("hung", 1)[0]; r.Code() != results.CodeCanceled {
		h.Errorf("removed probe's hung run: %s", dump(r))
	}
	h.tick(1, minStartLead+schedSkew)
	h.waitRuns("other", 1)
	if st := h.status(); st.Scheduled != 1 || len(st.Probes) != 1 || st.Probes[0].Name != "other" {
		h.Errorf("status after the reload: %+v", st)
	}
}

// TestDaemonReloadGroupedProbes: probes whose first runs fall on the same
// start tick share one gocron job. A reload that removes one of them while
// its run hangs, and changes another, leaves the rest on their job and
// schedule; the hung run is cancelled after the grace period, the changed
// probe gets a job at its fresh phase, and the job goes with its last
// probe.
func TestDaemonReloadGroupedProbes(t *testing.T) {
	schedCheckLeaks(t)
	a, b, b2, c, hung := schedServe(t, nil, false), schedServe(t, nil, false), schedServe(t, nil, false),
		schedServe(t, nil, false), schedServe(t, nil, true)
	probe := func(name, url string) *checks.Probe {
		p := schedProbe(t, name, url, time.Second)
		p.Jitter = 500 * time.Millisecond
		return p
	}
	h := schedNew(t, schedConfig(8, probe("a", a.URL), probe("b", b.URL), probe("c", c.URL), probe("hung", hung.URL)),
		func(o *Deps) { o.GracePeriod = 2 * time.Second })
	h.run()
	if jobs := h.armAll(4); jobs != 1 {
		h.Fatalf("%d gocron jobs for four probes on one start tick, want 1", jobs)
	}
	if h.d.tick == 0 {
		h.Fatal("no start grid: the test needs one")
	}
	h.clock.Advance(minStartLead + schedSkew)
	for _, name := range []string{"a", "b", "c"} {
		h.waitRuns(name, 1)
	}
	h.eventually("hung's request", func() bool { return hung.requests.Load() == 1 })
	next := h.probeStatus("a").NextRun

	if err := h.d.Reload(schedConfig(8, probe("a", a.URL), probe("b", b2.URL), probe("c", c.URL))); err != nil {
		h.Fatalf("Reload: %v", err)
	}
	if jobs := h.armAll(3); jobs != 2 {
		h.Errorf("%d gocron jobs after the reload, want 2: a and c's, and changed b's", jobs)
	}
	for _, name := range []string{"a", "c"} {
		if got := h.probeStatus(name).NextRun; !got.Equal(next) {
			h.Errorf("%s: next run %v after the reload, want %v as before", name, got, next)
		}
	}
	if got := h.probeStatus("b").NextRun; got.Equal(next) {
		h.Errorf("changed b kept its old schedule: next run %v", got)
	}
	if r := h.waitRuns("hung", 1)[0]; r.Code() != results.CodeCanceled {
		h.Errorf("removed probe's hung run: %s", dump(r))
	}
	h.clock.Advance(time.Second) // past a and c's next run, and b's first at its new phase
	for _, name := range []string{"a", "b", "c"} {
		h.waitRuns(name, 2)
	}
	if n := b2.requests.Load(); n != 1 {
		h.Errorf("changed b's new provider saw %d requests, want 1", n)
	}

	if err := h.d.Reload(schedConfig(8)); err != nil {
		h.Fatalf("Reload: %v", err)
	}
	if jobs := len(h.d.sched.Jobs()); jobs != 0 {
		h.Errorf("%d gocron jobs once every probe is removed, want 0", jobs)
	}
}

// TestDaemonWakesDeliverer fails a probe whose failure alerts: the run
// wakes the deliverer, which sends the alert long before its next poll,
// and Run stops the deliverer on shutdown.
func TestDaemonWakesDeliverer(t *testing.T) {
	schedCheckLeaks(t)
	url := jsonBody(500, `{"error":"down"}`)(t)
	cfg := schedConfig(4, schedProbe(t, "search", url, time.Minute))
	cfg.Notify.On = []string{"unavailable", "contract_error"}
	sender := &schedSender{}
	h := schedNew(t, cfg, func(o *Deps) {
		o.Senders = func(*checks.Config) (Senders, error) { return Senders{"default/slack": sender}, nil }
		o.Delivery = delivererOptions{PollInterval: time.Hour}
	})
	h.run()

	h.tick(1, minStartLead+schedSkew)
	h.eventually("the alert to be sent", func() bool { return len(sender.alerts()) == 1 })
	if a := sender.alerts()[0]; a.Kind != results.AlertFiring || a.Probe != "search" {
		h.Errorf("sent %+v, want a firing alert about search", a)
	}
}

// TestDaemonRunTwice: a Daemon runs once.
func TestDaemonRunTwice(t *testing.T) {
	schedCheckLeaks(t)
	h := schedNew(t, schedConfig(1), nil)
	h.run()
	h.eventually("the daemon to run", func() bool { return h.status().State == "running" })
	if err := h.d.Run(context.Background()); err == nil {
		h.Error("second Run = nil, want an error")
	}
}

// TestDaemonReloadBeforeRun: a reload before Run decides what Run
// schedules.
func TestDaemonReloadBeforeRun(t *testing.T) {
	schedCheckLeaks(t)
	a, b := schedServe(t, nil, false), schedServe(t, nil, false)
	h := schedNew(t, schedConfig(1, schedProbe(t, "a", a.URL, time.Minute)), nil)
	if err := h.d.Reload(schedConfig(1, schedProbe(t, "b", b.URL, time.Minute))); err != nil {
		h.Fatal(err)
	}
	h.run()
	h.tick(1, minStartLead+schedSkew)
	h.waitRuns("b", 1)
	if n := a.requests.Load(); n != 0 {
		h.Errorf("probe a, replaced before Run, ran %d times", n)
	}
}

// TestNewRequires names what New refuses.
func TestNewRequires(t *testing.T) {
	cfg := schedConfig(1)
	store := newTestStore(t)
	tests := map[string]struct {
		cfg  *checks.Config
		deps Deps
	}{
		"config": {nil, Deps{Store: store}},
		"store":  {cfg, Deps{}},
	}
	for name, tt := range tests {
		if _, err := New(tt.cfg, tt.deps); err == nil || !strings.Contains(strings.ToLower(err.Error()), name) {
			t.Errorf("without %s: err = %v, want one naming it", name, err)
		}
	}
	refused := errors.New("webhook URL is not https")
	if _, err := New(cfg, Deps{Store: store, Senders: func(*checks.Config) (Senders, error) { return nil, refused }}); !errors.Is(err, refused) {
		t.Errorf("with a receiver the config cannot build: err = %v, want %v", err, refused)
	}
	d, err := New(cfg, Deps{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if d.grace != defaultGracePeriod {
		t.Errorf("default grace period %v, want %v", d.grace, defaultGracePeriod)
	}
}

// TestReloadRefusesReceiverFirst: a reload whose receiver cannot be built
// fails before anything changes; a good one switches where alerts go and
// tells the Observer the new probes.
func TestReloadRefusesReceiverFirst(t *testing.T) {
	schedCheckLeaks(t)
	refused := errors.New("webhook URL is not https")
	obs := &countingObserver{}
	first, second := &schedSender{}, &schedSender{}
	h := schedNew(t, schedConfig(2), func(o *Deps) {
		o.Observer = obs
		o.Senders = func(cfg *checks.Config) (Senders, error) {
			switch cfg.MaxConcurrency {
			case 2:
				return Senders{"default/slack": first}, nil
			case 3:
				return Senders{"default/slack": second}, nil
			}
			return nil, refused
		}
	})
	if err := h.d.Reload(schedConfig(9)); !errors.Is(err, refused) {
		h.Fatalf("Reload = %v, want %v", err, refused)
	}
	if _, _, limit := h.d.limit.counts(); limit != 2 || obs.count("probes") != 1 {
		h.Errorf("a refused reload changed the daemon: limit %d, SetProbes called %d times", limit, obs.count("probes"))
	}
	if err := h.d.Reload(schedConfig(3, schedProbe(t, "a", "http://127.0.0.1:1", time.Hour))); err != nil {
		h.Fatal(err)
	}
	if _, _, limit := h.d.limit.counts(); limit != 3 || obs.count("probes") != 2 {
		h.Errorf("after the reload: limit %d, SetProbes called %d times; want 3 and 2", limit, obs.count("probes"))
	}
	if _, _, err := h.d.sender.Send(t.Context(), results.Alert{Probe: "a", Receiver: "default/slack"}); err != nil || len(second.alerts()) != 1 || len(first.alerts()) != 0 {
		h.Errorf("alerts go to the old receiver after the reload (err %v)", err)
	}
}

// TestDaemonSearchAPIVariesWithoutDrift is issue 23's first story, run
// by the daemon against a real provider and store: a search API whose
// answers vary within their contract (1-10 results whose snippet and
// author come and go, a cursor null on the last page, id-keyed facets
// whose label comes and goes) announced a field "removed" within 25
// answers on most probes. 100 such answers make no drift alert; then the
// seed-000 wrap is announced once, and so is a field that really goes.
func TestDaemonSearchAPIVariesWithoutDrift(t *testing.T) {
	schedCheckLeaks(t)
	rnd := rand.New(rand.NewPCG(23, 1))
	var layout atomic.Value // "varied", "wrapped" or "untitled"
	layout.Store("varied")
	var answers atomic.Int32
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		lastPage := answers.Add(1)%4 == 2
		io.WriteString(w, searchAnswer(rnd, layout.Load().(string), lastPage))
	})
	cfg := schedConfig(4, schedProbe(t, "search", url, time.Minute))
	cfg.Notify = notifyOn(1, time.Hour, true)
	h := schedNew(t, cfg, nil)
	h.run()
	h.tick(1, minStartLead+schedSkew)
	n := 0
	play := func(runs int) (drifts []results.Alert) {
		h.Helper()
		for range runs {
			if n++; n > 1 {
				h.tick(1, time.Minute)
			}
			h.waitRuns("search", n)
		}
		for _, a := range h.store.alerts() {
			if a.Kind == results.AlertDrift {
				drifts = append(drifts, a)
			}
		}
		return drifts
	}
	if d := play(100); len(d) != 0 {
		h.Fatalf("100 answers of an unchanged search API: %d drift alerts, first %q; want none", len(d), d[0].Drift.Diff)
	}
	for _, r := range h.runs("search") {
		if r.Outcome != results.Pass {
			h.Fatalf("run %s: %s %s, want every run to pass", r.OperationID, r.Outcome, r.Code())
		}
	}
	layout.Store("wrapped")
	if d := play(3); len(d) != 1 || !slices.Equal(d[0].Drift.Diff, []string{"results: list<object(5 keys)> -> object(1 keys)"}) {
		h.Fatalf("3 answers of the seed-000 wrap: drift alerts %v, want one with the wrap's line", driftDiffs(d))
	}
	layout.Store("untitled")
	if d := play(3); len(d) != 2 || !slices.Equal(d[1].Drift.Diff, []string{"results[].title: removed (string)"}) {
		h.Fatalf("3 answers without a title: drift alerts %v, want a second one for the title", driftDiffs(d))
	}
}

func driftDiffs(alerts []results.Alert) [][]string {
	var out [][]string
	for _, a := range alerts {
		out = append(out, a.Drift.Diff)
	}
	return out
}

// searchAnswer is one answer of a search API that varies as real ones
// do; layout "wrapped" wraps its results as seed 000's provider did, and
// "untitled" drops every result's title. The last page's cursor is null.
func searchAnswer(rnd *rand.Rand, layout string, lastPage bool) string {
	items := make([]string, 1+rnd.IntN(10))
	for i := range items {
		item := fmt.Sprintf(`"id":"doc_%d","score":0.%d`, rnd.IntN(1e6), 75+rnd.IntN(25))
		if layout != "untitled" {
			item += `,"title":"API migration guide"`
		}
		if rnd.IntN(4) > 0 {
			item += `,"snippet":"how to move to v2"`
		}
		if rnd.IntN(3) > 0 {
			item += `,"author":"Ann"`
		}
		items[i] = "{" + item + "}"
	}
	list := "[" + strings.Join(items, ",") + "]"
	if layout == "wrapped" {
		list = `{"items":` + list + `}`
	}
	var facets []string
	for range 1 + rnd.IntN(4) {
		label := ""
		if rnd.IntN(3) > 0 {
			label = `,"label":"docs"`
		}
		facets = append(facets, fmt.Sprintf(`"src_%03d":{"count":%d%s}`, rnd.IntN(1000), rnd.IntN(50), label))
	}
	cursor := fmt.Sprintf(`"c_%d"`, rnd.IntN(1e6))
	if lastPage {
		cursor = "null"
	}
	return `{"results":` + list + `,"next_cursor":` + cursor + `,"facets":{` + strings.Join(facets, ",") + `}}`
}
