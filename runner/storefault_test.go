package runner

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

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
			h.tick(3, time.Minute) // both jobs and the queue's back-off timer
		}
		want := 2 * (i + 1)
		schedEventually(t, "the round's runs queued", func() bool { return h.d.Pending() == want })
	}
	if got := ok.requests.Load() + badRequests.Load(); got != 2*rounds {
		t.Errorf("providers saw %d requests during the fault, want %d", got, 2*rounds)
	}
	if got := len(h.runs("ok")) + len(h.runs("bad")); got != 0 {
		t.Fatalf("%d runs recorded while the store failed", got)
	}

	failing.Store(false)
	h.tick(1, writeRetryMax) // past any back-off
	schedEventually(t, "the queue written", func() bool { return h.d.Pending() == 0 })

	for _, probe := range []string{"ok", "bad"} {
		got, want := sfIDs(h.runs(probe)), sfLoggedIDs(h, probe)
		if len(want) != rounds || !slices.Equal(got, want) {
			t.Errorf("%s recorded %v, want each run once in the order it ran, %v", probe, got, want)
		}
	}
	if got := len(h.logs.records("probe run recorded late")); got != 2*rounds {
		t.Errorf("%d runs logged as recorded late, want %d", got, 2*rounds)
	}
	_, _, states, alerts := h.store.snapshot()
	var firing []results.Alert
	for _, a := range alerts {
		if a.Probe == "ok" {
			t.Errorf("the passing probe alerted: %+v", a)
		}
		if a.Probe == "bad" && a.Kind == results.AlertFiring {
			firing = append(firing, a)
		}
	}
	if len(firing) != 1 || firing[0].OperationID != sfLoggedIDs(h, "bad")[0] {
		t.Errorf("bad alerted %+v, want one firing alert, on its first run", firing)
	}
	if st := states["bad"]; st.ConsecutiveFailures != rounds {
		t.Errorf("bad's alert state %+v, want %d consecutive failures", st, rounds)
	}
}

// TestDaemonWriteQueueDropsOldest fills a queue of three with five runs:
// the two oldest are dropped, logged and counted, and the three newest are
// written once the store recovers.
func TestDaemonWriteQueueDropsOldest(t *testing.T) {
	schedCheckLeaks(t)
	prov := schedServe(t, nil, false)
	obs := &countingObserver{}
	h := schedNew(t, schedConfig(4, schedProbe(t, "search", prov.URL, time.Minute)), func(o *DaemonOptions) {
		o.WriteQueue = 3
		o.Observer = obs
	})
	var failing atomic.Bool
	failing.Store(true)
	h.store.setFail(sfFailing(&failing))
	h.run()

	h.tick(1, minStartLead+schedSkew)
	for i := 2; i <= 5; i++ {
		schedEventually(t, "a run", func() bool { return len(sfLoggedIDs(h, "search")) == i-1 })
		h.tick(2, time.Minute)
	}
	schedEventually(t, "five runs", func() bool { return len(sfLoggedIDs(h, "search")) == 5 })
	ids := sfLoggedIDs(h, "search")
	if got := h.d.Pending(); got != 3 {
		t.Errorf("Pending = %d, want the capacity, 3", got)
	}
	if got := obs.count("dropped"); got != 2 {
		t.Errorf("ResultsDropped counted %d, want 2", got)
	}
	var dropped []string
	for _, l := range h.logs.records("write queue full; dropped the oldest waiting run") {
		if l["level"] != "ERROR" || l["probe"] != "search" {
			t.Errorf("drop logged as %v", l)
		}
		dropped = append(dropped, l["operation_id"].(string))
	}
	if !slices.Equal(dropped, ids[:2]) {
		t.Errorf("dropped %v, want the two oldest runs %v", dropped, ids[:2])
	}

	failing.Store(false)
	h.tick(1, writeRetryMax)
	schedEventually(t, "the queue written", func() bool { return h.d.Pending() == 0 })
	if got := sfIDs(h.runs("search")); !slices.Equal(got, ids[2:]) {
		t.Errorf("recorded %v, want the three newest runs %v", got, ids[2:])
	}
	if got := obs.count("run"); got != 3 {
		t.Errorf("RunFinished called %d times, want once per recorded run, 3", got)
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
			h := schedNew(t, schedConfig(4, schedProbe(t, "search", prov.URL, time.Minute)), func(o *DaemonOptions) {
				o.Observer = obs
			})
			var failing atomic.Bool
			failing.Store(true)
			h.store.setFail(sfFailing(&failing))
			h.run()
			h.tick(1, minStartLead+schedSkew)
			schedEventually(t, "a queued run", func() bool { return h.d.Pending() == 1 })
			h.tick(2, time.Minute)
			schedEventually(t, "two queued runs", func() bool { return h.d.Pending() == 2 })

			failing.Store(!tc.recovered)
			if err := h.stop(); err != nil {
				t.Fatalf("Run = %v, want nil", err)
			}
			if got := len(h.runs("search")); got != tc.wantRuns {
				t.Errorf("%d runs recorded at shutdown, want %d", got, tc.wantRuns)
			}
			if got := h.d.Pending(); got != 0 {
				t.Errorf("Pending = %d after Run returned, want 0", got)
			}
			if got := obs.count("dropped"); got != tc.wantLost {
				t.Errorf("ResultsDropped counted %d, want %d", got, tc.wantLost)
			}
			lost := h.logs.records("stopping with runs that could not be written; they are lost")
			switch {
			case tc.wantLost == 0 && len(lost) != 0:
				t.Errorf("runs logged as lost: %v", lost)
			case tc.wantLost > 0 && (len(lost) != 1 || lost[0]["runs"] != float64(tc.wantLost) || lost[0]["level"] != "ERROR"):
				t.Errorf("lost runs logged as %v, want one ERROR line with runs=%d", lost, tc.wantLost)
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
		t.Errorf("Pending = %d before Run, want 0", got)
	}
	var failing atomic.Bool
	failing.Store(true)
	h.store.setFail(sfFailing(&failing))
	h.run()

	h.tick(1, minStartLead+schedSkew)
	schedEventually(t, "a run", func() bool { return prov.requests.Load() == 1 })
	for i := 1; i <= 3; i++ {
		schedEventually(t, "the run queued", func() bool { return h.d.Pending() == i })
		if got := h.d.Status().Pending; got != i {
			t.Errorf("Status().Pending = %d, want %d", got, i)
		}
		if i < 3 {
			h.tick(2, time.Minute)
		}
	}
	failing.Store(false)
	h.tick(1, writeRetryMax)
	schedEventually(t, "the queue written", func() bool { return h.d.Pending() == 0 })
	if got := h.d.Status().Pending; got != 0 {
		t.Errorf("Status().Pending = %d once written, want 0", got)
	}
}
