package runner

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// The store-fault tests: when RecordRun fails, runs wait in the daemon's
// write queue and are written, in order, once the store takes them again.

// sfFailing is a store failure hook that fails RecordRun while on is set.
func sfFailing(on *atomic.Bool) func(string) error {
	return func(method string) error {
		if method == "RecordRun" && on.Load() {
			return errors.New("attempt to write a readonly database")
		}
		return nil
	}
}

// sfServeFailing starts a provider that answers every request with a 500.
func sfServeFailing(t *testing.T) (url string, requests *atomic.Int32) {
	t.Helper()
	requests = new(atomic.Int32)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(s.Close)
	return s.URL, requests
}

// sfLoggedIDs returns the operation ids of the "probe run" lines of probe,
// in the order they were logged: the order its runs happened.
func sfLoggedIDs(h *schedHarness, probe string) []string {
	var out []string
	for _, l := range h.logs.records("probe run") {
		if l["probe"] == probe {
			out = append(out, l["operation_id"].(string))
		}
	}
	return out
}

func sfIDs(rs []results.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.OperationID
	}
	return out
}

// TestDaemonQueuesRunsThroughStoreFault makes RecordRun fail for four
// rounds of two probes, then recover: the providers are still called
// during the fault, every run is then recorded exactly once and in the
// order it ran, and the probe failing throughout alerts once.
func TestDaemonQueuesRunsThroughStoreFault(t *testing.T) {
	schedCheckLeaks(t)
	ok := schedServe(t, nil, false)
	badURL, badRequests := sfServeFailing(t)
	cfg := schedConfig(4,
		schedProbe(t, "ok", ok.URL, time.Minute),
		schedProbe(t, "bad", badURL, time.Minute),
	)
	cfg.Notify.On = []string{string(results.Unavailable)}
	h := schedNew(t, cfg, nil)
	var failing atomic.Bool
	failing.Store(true)
	h.store.setFail(sfFailing(&failing))
	h.run()

	const rounds = 4
	for i := range rounds {
		if i == 0 {
			h.tick(2, minStartLead+schedSkew)
		} else {
			h.idle()
			h.tick(3, time.Minute) // both jobs and the queue's back-off timer
		}
		want := 2 * (i + 1)
		h.eventually("the round's runs queued", func() bool { return h.d.Pending() == want })
	}
	h.idle() // a run is queued a moment before it is logged
	if got := ok.requests.Load() + badRequests.Load(); got != 2*rounds {
		h.Errorf("providers saw %d requests during the fault, want %d", got, 2*rounds)
	}
	if got := len(h.runs("ok")) + len(h.runs("bad")); got != 0 {
		h.Fatalf("%d runs recorded while the store failed", got)
	}

	failing.Store(false)
	// Both jobs' timers and the queue's back-off timer: waiting for fewer
	// could advance the clock before the back-off is armed, and a timer
	// armed after the advance waits on a clock that no longer moves.
	h.tick(3, writeRetryMax) // past any back-off
	h.eventually("the queue written", func() bool { return h.d.Pending() == 0 })

	for _, probe := range []string{"ok", "bad"} {
		got, want := sfIDs(h.runs(probe)), sfLoggedIDs(h, probe)
		if len(want) != rounds || !slices.Equal(got, want) {
			h.Errorf("%s recorded %v, want each run once in the order it ran, %v", probe, got, want)
		}
	}
	if got := len(h.logs.records("probe run recorded late")); got != 2*rounds {
		h.Errorf("%d runs logged as recorded late, want %d", got, 2*rounds)
	}
	_, _, states, alerts := h.store.snapshot()
	var firing []results.Alert
	for _, a := range alerts {
		if a.Probe == "ok" {
			h.Errorf("the passing probe alerted: %+v", a)
		}
		if a.Probe == "bad" && a.Kind == results.AlertFiring {
			firing = append(firing, a)
		}
	}
	if len(firing) != 1 || firing[0].OperationID != sfLoggedIDs(h, "bad")[0] {
		h.Errorf("bad alerted %+v, want one firing alert, on its first run", firing)
	}
	if st := states["bad"]; st.ConsecutiveFailures != rounds {
		h.Errorf("bad's alert state %+v, want %d consecutive failures", st, rounds)
	}
}

// TestDaemonWriteQueueDropsOldest fills a queue of three with five runs:
// the two oldest are dropped, logged and counted, and the three newest are
// written once the store recovers.
func TestDaemonWriteQueueDropsOldest(t *testing.T) {
	schedCheckLeaks(t)
	prov := schedServe(t, nil, false)
	obs := &countingObserver{}
	h := schedNew(t, schedConfig(4, schedProbe(t, "search", prov.URL, time.Minute)), func(o *Deps) {
		o.WriteQueue = 3
		o.Observer = obs
	})
	var failing atomic.Bool
	failing.Store(true)
	h.store.setFail(sfFailing(&failing))
	h.run()

	h.tick(1, minStartLead+schedSkew)
	for i := 2; i <= 5; i++ {
		h.eventually(fmt.Sprintf("run %d logged", i-1), func() bool { return len(sfLoggedIDs(h, "search")) == i-1 })
		h.idle()
		h.tick(2, time.Minute)
	}
	h.eventually("five runs", func() bool { return len(sfLoggedIDs(h, "search")) == 5 })
	ids := sfLoggedIDs(h, "search")
	// A write of the oldest run in flight defers the overflow until it
	// fails: then the queue is back at its capacity.
	h.eventually("the queue at its capacity of 3, with 2 drops counted", func() bool {
		return h.d.Pending() == 3 && obs.count("dropped") == 2
	})
	var dropped []string
	for _, l := range h.logs.records("write queue full; dropped the oldest waiting run") {
		if l["level"] != "ERROR" || l["probe"] != "search" {
			h.Errorf("drop logged as %v", l)
		}
		dropped = append(dropped, l["operation_id"].(string))
	}
	if !slices.Equal(dropped, ids[:2]) {
		h.Errorf("dropped %v, want the two oldest runs %v", dropped, ids[:2])
	}

	failing.Store(false)
	h.tick(2, writeRetryMax) // the job and the queue's back-off, see above
	h.eventually("the queue written", func() bool { return h.d.Pending() == 0 })
	if got := sfIDs(h.runs("search")); !slices.Equal(got, ids[2:]) {
		h.Errorf("recorded %v, want the three newest runs %v", got, ids[2:])
	}
	if got := obs.count("run"); got != 3 {
		h.Errorf("RunFinished called %d times, want once per recorded run, 3", got)
	}
}

// TestDaemonShutdownWithQueuedRuns stops the daemon with two runs queued:
// it writes them if the store has recovered, and otherwise logs and counts
// them as lost; either way Run returns and leaves no goroutine behind.
func TestDaemonShutdownWithQueuedRuns(t *testing.T) {
	for _, tc := range []struct {
		name      string
		recovered bool
		wantRuns  int
		wantLost  int
	}{
		{name: "store recovered", recovered: true, wantRuns: 2},
		{name: "store still failing", recovered: false, wantLost: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schedCheckLeaks(t)
			prov := schedServe(t, nil, false)
			obs := &countingObserver{}
			h := schedNew(t, schedConfig(4, schedProbe(t, "search", prov.URL, time.Minute)), func(o *Deps) {
				o.Observer = obs
			})
			var failing atomic.Bool
			failing.Store(true)
			h.store.setFail(sfFailing(&failing))
			h.run()
			h.tick(1, minStartLead+schedSkew)
			h.eventually("a queued run", func() bool { return h.d.Pending() == 1 })
			h.idle()
			h.tick(2, time.Minute)
			h.eventually("two queued runs", func() bool { return h.d.Pending() == 2 })

			failing.Store(!tc.recovered)
			if err := h.stop(); err != nil {
				h.Fatalf("Run = %v, want nil", err)
			}
			if got := len(h.runs("search")); got != tc.wantRuns {
				h.Errorf("%d runs recorded at shutdown, want %d", got, tc.wantRuns)
			}
			if got := h.d.Pending(); got != 0 {
				h.Errorf("Pending = %d after Run returned, want 0", got)
			}
			if got := obs.count("dropped"); got != tc.wantLost {
				h.Errorf("ResultsDropped counted %d, want %d", got, tc.wantLost)
			}
			lost := h.logs.records("stopping with runs that could not be written; they are lost")
			switch {
			case tc.wantLost == 0 && len(lost) != 0:
				h.Errorf("runs logged as lost: %v", lost)
			case tc.wantLost > 0 && (len(lost) != 1 || lost[0]["runs"] != float64(tc.wantLost) || lost[0]["level"] != "ERROR"):
				h.Errorf("lost runs logged as %v, want one ERROR line with runs=%d", lost, tc.wantLost)
			}
		})
	}
}

// TestDaemonPendingReportsDepth: Pending and Status count the results
// waiting to be written, and fall to 0 once they are.
func TestDaemonPendingReportsDepth(t *testing.T) {
	schedCheckLeaks(t)
	prov := schedServe(t, nil, false)
	h := schedNew(t, schedConfig(4, schedProbe(t, "search", prov.URL, time.Minute)), nil)
	if got := h.d.Pending(); got != 0 {
		h.Errorf("Pending = %d before Run, want 0", got)
	}
	var failing atomic.Bool
	failing.Store(true)
	h.store.setFail(sfFailing(&failing))
	h.run()

	h.tick(1, minStartLead+schedSkew)
	h.eventually("a run", func() bool { return prov.requests.Load() == 1 })
	for i := 1; i <= 3; i++ {
		h.eventually("the run queued", func() bool { return h.d.Pending() == i })
		if got := h.status().Pending; got != i {
			h.Errorf("Status().Pending = %d, want %d", got, i)
		}
		if i < 3 {
			h.idle()
			h.tick(2, time.Minute)
		}
	}
	failing.Store(false)
	h.tick(2, writeRetryMax) // the job and the queue's back-off
	h.eventually("the queue written", func() bool { return h.d.Pending() == 0 })
	if got := h.status().Pending; got != 0 {
		h.Errorf("Status().Pending = %d once written, want 0", got)
	}
}

// sfOver builds the harness's daemon over store, which has a record hook
// set, instead of the harness's own store; the harness then reads what
// store keeps.
func sfOver(t *testing.T, cfg *checks.Config, store *faultStore, opts func(*Deps)) *schedHarness {
	t.Helper()
	h := schedNew(t, cfg, func(o *Deps) {
		o.Store = store
		if opts != nil {
			opts(o)
		}
	})
	h.store = store
	return h
}

// sfAllLoggedIDs returns the operation ids of every "probe run" line, in
// the order they were logged.
func sfAllLoggedIDs(h *schedHarness) []string {
	var out []string
	for _, l := range h.logs.records("probe run") {
		out = append(out, l["operation_id"].(string))
	}
	return out
}

// sfRand returns the given numbers in turn, then 0: the first calls place
// the probes' first runs in their jitter windows, in config order.
func sfRand(first ...float64) func() float64 {
	var mu sync.Mutex
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		if len(first) == 0 {
			return 0
		}
		v := first[0]
		first = first[1:]
		return v
	}
}

// TestDaemonWriteQueueIsFIFOAcrossProbes: while results wait, a new run
// joins the tail even when the store would take it, so the store receives
// every probe's runs in the order they joined the queue. The store
// recovers while the oldest waiting run is being written, and holds that
// write: a run that jumped the queue would be stored before it.
func TestDaemonWriteQueueIsFIFOAcrossProbes(t *testing.T) {
	schedCheckLeaks(t)
	prov := schedServe(t, nil, false)
	cfg := schedConfig(1,
		schedProbe(t, "old", prov.URL, time.Hour), // runs once, first: the head of the queue
		schedProbe(t, "a", prov.URL, time.Minute),
		schedProbe(t, "b", prov.URL, time.Minute),
	)
	const (
		failing = iota
		holdingHead
	)
	var mode atomic.Int32
	var headID atomic.Value // string
	entered, release := make(chan struct{}), make(chan struct{})
	var enterOnce, releaseOnce sync.Once
	store := newTestStore(t)
	store.hook = func(rec *results.RunRecord) error {
		if mode.Load() == failing {
			return errors.New("database is locked")
		}
		if rec.Result.OperationID == headID.Load() {
			enterOnce.Do(func() { close(entered) })
			<-release
		}
		return nil
	}
	h := sfOver(t, cfg, store, func(o *Deps) {
		o.Rand = sfRand(0, 0.5, 0.5) // old at the start, a and b a second later
	})
	h.run()
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })

	h.tick(3, minStartLead+schedSkew)
	h.eventually("old's run queued", func() bool { return h.d.Pending() == 1 })
	h.idle()
	h.tick(4, time.Second) // a and b, and the queue's back-off timer
	h.eventually("a's and b's runs queued", func() bool { return h.d.Pending() == 3 })
	h.idle()
	h.tick(4, time.Minute)
	h.eventually("the second round queued", func() bool { return h.d.Pending() == 5 })
	h.idle() // a run is queued a moment before it is logged
	if got := sfAllLoggedIDs(h); len(got) != 5 {
		h.Fatalf("%d runs logged, want 5", len(got))
	}
	headID.Store(sfAllLoggedIDs(h)[0])

	// The store takes writes again, but the head's write is held; a and
	// b run meanwhile.
	mode.Store(holdingHead)
	h.idle()
	h.tick(4, time.Minute)
	select {
	case <-entered:
	case <-time.After(schedWait):
		h.Fatal("the head of the queue was never written")
	}
	h.eventually("the third round", func() bool { return len(sfAllLoggedIDs(h)) == 7 })
	if got := sfIDs(h.runs("a")); len(got) > 0 {
		h.Errorf("a recorded %v while older runs waited to be written", got)
	}
	if got := sfIDs(h.runs("b")); len(got) > 0 {
		h.Errorf("b recorded %v while older runs waited to be written", got)
	}
	for _, l := range h.logs.records("recording the run failed")[5:] {
		if msg, _ := l["error"].(string); !strings.HasPrefix(msg, "not tried: ") {
			h.Errorf("a run made while others waited went to the store: %v", l)
		}
	}

	releaseOnce.Do(func() { close(release) })
	h.eventually("the queue written", func() bool { return h.d.Pending() == 0 })
	all, _, _, _ := h.store.snapshot()
	if got, want := sfIDs(all), sfQueuedIDs(h); !slices.Equal(got, want) {
		h.Errorf("stored in the order\n%v\nwant the order the runs joined the queue\n%v", got, want)
	}
}

// sfQueuedIDs returns the operation ids of the runs that joined the write
// queue, in the order they joined it: each run's error line says how many
// results waited before it ("not tried: N earlier ..."); the head's says
// why its own write failed. Two runs may be recorded at once (a run gives
// its slot back before it is recorded), so the order of their log lines
// need not be the queue's. Only for a queue that nothing left meanwhile.
func sfQueuedIDs(h *schedHarness) []string {
	h.Helper()
	byPos := map[int]string{}
	for _, l := range h.logs.records("recording the run failed") {
		msg, _ := l["error"].(string)
		pos := 0
		if strings.HasPrefix(msg, "not tried: ") {
			if _, err := fmt.Sscanf(msg, "not tried: %d", &pos); err != nil {
				h.Fatalf("queue position in %q: %v", msg, err)
			}
		}
		if prev, ok := byPos[pos]; ok {
			h.Fatalf("two runs at queue position %d: %s and %v", pos, prev, l["operation_id"])
		}
		byPos[pos] = l["operation_id"].(string)
	}
	out := make([]string, len(byPos))
	for pos, id := range byPos {
		if pos >= len(out) {
			h.Fatalf("queue positions are not 0 to %d: %v", len(out)-1, byPos)
		}
		out[pos] = id
	}
	return out
}

// sfRefusal is a store error that says it is final, as results/sqlite marks
// a record that breaks a constraint.
type sfRefusal struct{ permanent bool }

func (e sfRefusal) Error() string {
	if e.permanent {
		return "constraint failed: CHECK constraint failed: results"
	}
	return "database or disk is full"
}

func (e sfRefusal) Permanent() bool { return e.permanent }

// TestDaemonDropsRunTheStoreRefuses: a run the store refuses for good is
// tried maxRefusals times, then dropped (logged, counted), and the runs
// behind it are written; a store fault that lasts longer than that, for
// one run, never drops it.
func TestDaemonDropsRunTheStoreRefuses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		permanent bool
		refusals  int // how many writes of the first run of a fail
		wantTries int
		wantKept  bool
	}{
		{name: "refused for good", permanent: true, refusals: 1 << 30, wantTries: maxRefusals},
		{name: "a fault outlasting the refusal limit", permanent: false, refusals: maxRefusals + 1, wantTries: maxRefusals + 2, wantKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schedCheckLeaks(t)
			prov := schedServe(t, nil, false)
			obs := &countingObserver{}
			var mu sync.Mutex
			refusedID, tries := "", 0
			store := newTestStore(t)
			store.hook = func(rec *results.RunRecord) error {
				mu.Lock()
				defer mu.Unlock()
				if rec.Result.Probe == "a" && refusedID == "" {
					refusedID = rec.Result.OperationID
				}
				if rec.Result.OperationID != refusedID {
					return nil
				}
				tries++
				if tries <= tc.refusals {
					return sfRefusal{permanent: tc.permanent}
				}
				return nil
			}
			// Real time: the queue's back-off (0.25 s, 0.5 s, 1 s ... with
			// Rand 0) runs on its own. a runs first, b a little later,
			// behind a's waiting run.
			h := sfOver(t, schedConfig(1,
				schedProbe(t, "a", prov.URL, time.Hour),
				schedProbe(t, "b", prov.URL, time.Hour),
			), store, func(o *Deps) {
				o.Clock = clockwork.NewRealClock()
				// a at 0.5 s, b at 1 s: a first start close to now could be
				// overtaken on a busy machine before gocron arms it, and
				// gocron then pushes it a whole interval (an hour) later.
				o.Rand = sfRand(0.25, 0.5)
				o.Observer = obs
			})
			h.run()

			h.eventually("both runs logged", func() bool { return len(sfAllLoggedIDs(h)) == 2 })
			h.eventually("the queue emptied", func() bool { return h.d.Pending() == 0 })
			mu.Lock()
			id, gotTries := refusedID, tries
			mu.Unlock()
			if gotTries != tc.wantTries {
				h.Errorf("the run of a was tried %d times, want %d", gotTries, tc.wantTries)
			}
			if got := len(h.runs("b")); got != 1 {
				h.Errorf("b recorded %d runs, want 1", got)
			}
			drops := h.logs.records("the store refuses the run for good; dropped")
			if tc.wantKept {
				if got := sfIDs(h.runs("a")); !slices.Equal(got, []string{id}) {
					h.Errorf("a recorded %v, want its run %s", got, id)
				}
				if obs.count("dropped") != 0 || len(drops) != 0 {
					h.Errorf("a run was dropped for a fault (%d counted, logged %v)", obs.count("dropped"), drops)
				}
				return
			}
			if got := h.runs("a"); len(got) != 0 {
				h.Errorf("a recorded %v, want nothing: the store refused it", sfIDs(got))
			}
			if got := obs.count("dropped"); got != 1 {
				h.Errorf("ResultsDropped counted %d, want 1", got)
			}
			if len(drops) != 1 || drops[0]["operation_id"] != id || drops[0]["level"] != "ERROR" ||
				drops[0]["refusals"] != float64(maxRefusals) || !strings.Contains(drops[0]["error"].(string), "constraint failed") {
				h.Errorf("the drop was logged as %v, want one ERROR line naming %s, %d refusals and the store's reason", drops, id, maxRefusals)
			}
		})
	}
}

// TestDaemonCountsRunFinishingAfterTheQueueClosed: a run held up in the
// store through the whole shutdown returns after the write queue has
// closed, and its write fails (the store is closing): it is logged and
// counted as lost, not left in a queue nobody writes.
func TestDaemonCountsRunFinishingAfterTheQueueClosed(t *testing.T) {
	schedCheckLeaks(t)
	prov := schedServe(t, nil, false)
	obs := &countingObserver{}
	entered, release := make(chan struct{}), make(chan struct{})
	var enterOnce, releaseOnce sync.Once
	store := newTestStore(t)
	store.hook = func(*results.RunRecord) error {
		enterOnce.Do(func() { close(entered) })
		<-release // ignores the context, as a stuck store would
		return errors.New("sql: database is closed")
	}
	h := sfOver(t, schedConfig(4, schedProbe(t, "stuck", prov.URL, time.Hour)), store, func(o *Deps) {
		o.Observer = obs
	})
	h.d.drainWait = 300 * time.Millisecond
	h.run()
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })

	h.tick(1, minStartLead+schedSkew)
	select {
	case <-entered:
	case <-time.After(schedWait):
		h.Fatal("the run never reached the store")
	}
	if err := h.stop(); err != nil {
		h.Fatalf("Run = %v, want nil", err)
	}
	if got := len(h.logs.records("runs did not return after cancellation; stopping without them")); got != 1 {
		h.Fatalf("the stuck run did not outlast the shutdown (%d lines say so)", got)
	}

	releaseOnce.Do(func() { close(release) })
	h.eventually("the late run reported", func() bool { return len(h.logs.records("probe run")) == 1 })
	h.eventually("the late run counted", func() bool { return obs.count("dropped") == 1 })
	run := h.logs.records("probe run")[0]
	if run["recorded"] != false || run["queued"] != false {
		h.Errorf("the late run was logged as %v, want recorded=false queued=false", run)
	}
	lost := h.logs.records("the run finished after the daemon stopped writing; it is lost")
	if len(lost) != 1 || lost[0]["level"] != "ERROR" || lost[0]["operation_id"] != run["operation_id"] {
		h.Errorf("the lost run was logged as %v, want one ERROR line with its operation id", lost)
	}
	if got := h.d.Pending(); got != 0 {
		h.Errorf("Pending = %d, want 0: nothing writes the queue any more", got)
	}
}
