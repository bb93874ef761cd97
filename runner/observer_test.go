package runner

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// countingObserver counts each Observer call by name.
type countingObserver struct {
	mu    sync.Mutex
	calls map[string]int
}

func (o *countingObserver) inc(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.calls == nil {
		o.calls = map[string]int{}
	}
	o.calls[name]++
}

func (o *countingObserver) count(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls[name]
}

func (o *countingObserver) RunFinished(*results.Result)   { o.inc("run") }
func (o *countingObserver) DriftDetected(*results.Drift)  { o.inc("drift") }
func (o *countingObserver) AlertDelivered(*results.Alert) { o.inc("delivered") }
func (o *countingObserver) AlertFailed(_ *results.Alert, f bool) {
	o.inc(map[bool]string{false: "retry", true: "final"}[f])
}
func (o *countingObserver) StoreError(op string)  { o.inc("store:" + op) }
func (o *countingObserver) SetProbes([]string)    { o.inc("probes") }
func (o *countingObserver) SetReceivers([]string) { o.inc("receivers") }
func (o *countingObserver) SetLeader(bool)        { o.inc("leader") }
func (o *countingObserver) ResultsDropped(n int) {
	for range n {
		o.inc("dropped")
	}
}

// TestRecorderObserver: metrics see each recorded drift event once and
// every failed record, or a dashboard would miss what the store shows.
func TestRecorderObserver(t *testing.T) {
	obs := &countingObserver{}
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.p = NewRecorder(f.store, f.notify, RecorderOptions{Clock: f.clock, Deliver: true, Observer: obs})
	f.baseline(5)
	f.run(seedWrappedBody, seedWrappedCode)
	f.run(seedWrappedBody, seedWrappedCode) // the same drift within the hour: no new event
	if got := obs.count("drift"); got != 1 {
		t.Errorf("DriftDetected called %d times, want 1", got)
	}

	f.store.setFail(func(method string) error {
		if method == "RecordRun" {
			return errors.New("disk full")
		}
		return nil
	})
	r := pipelineRun(t, "external_search", f.clock.Now().Add(time.Minute), seedBaselineBody, "")
	if _, err := f.p.write(t.Context(), r); err == nil {
		t.Fatal("write succeeded with a failing store")
	}
	if got := obs.count("store:record_run"); got != 1 {
		t.Errorf("StoreError(record_run) called %d times, want 1", got)
	}
}

// TestDelivererObserver: every delivery outcome reaches the metrics.
func TestDelivererObserver(t *testing.T) {
	verifyNoLeaks(t)
	obs := &countingObserver{}
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	sender := &fakeSender{reply: func(n int, a results.Alert) (bool, time.Duration, error) {
		if a.OperationID == "op-retry" && n == 1 {
			return true, 0, errors.New("HTTP 500")
		}
		if a.OperationID == "op-refused" {
			return false, 0, errors.New("invalid_payload")
		}
		return false, 0, nil
	}}
	retry, refused := testAlert(alertT0), testAlert(alertT0)
	retry.OperationID, refused.OperationID = "op-retry", "op-refused"
	retryID, refusedID := store.enqueue(retry), store.enqueue(refused)
	d := newDeliverer(store, sender, delivererOptions{Clock: clock, Rand: fixedRand(0), Observer: obs})
	stop := runDeliverer(t, d, time.Second)
	waitFor(t, "both alerts settled", func() bool {
		return store.storedAlert(retryID).State == results.DeliveryDelivered &&
			store.storedAlert(refusedID).State == results.DeliveryFailed
	})
	stop()
	for name, want := range map[string]int{"retry": 1, "final": 1, "delivered": 1} {
		if got := obs.count(name); got != want {
			t.Errorf("observer %s = %d, want %d", name, got, want)
		}
	}
}
