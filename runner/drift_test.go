package runner

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// The seed-000 drill (../shared/seeds/000_*.txt): the provider wraps its
// result list in an object.
const (
	seedBaselineBody = `{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":null}`
	seedWrappedBody  = `{"results":{"items":[{"id":"doc_784","title":"API migration guide","score":0.93}]},"next_cursor":null}`
	// toolpulse's own fingerprints (results/shape/testdata/seed000_*.golden),
	// not the drill's Python ones (4917809db2bdb220, b600aab8c56e2f2f):
	// SPEC §5 fixes their form, not their hash input.
	seedBaselineFP = "99ba02a8b482ce41"
	seedWrappedFP  = "3a105e99edea2dbb"
	seedDiffLine   = "results: list<object(3 keys)> -> object(1 keys)"
	// seedWrappedCode is what the strict consumer raises on the new layout.
	seedWrappedCode = results.Code("unsupported_results_container")
)

// driftFixture is a recorder over a real store with a settable clock, for
// the probe "external_search".
type driftFixture struct {
	t      *testing.T
	store  *faultStore
	clock  *clockwork.FakeClock
	p      *Recorder
	notify checks.Notify
	last   *results.Result // the last run recorded
}

func newDriftFixture(t *testing.T, n checks.Notify) *driftFixture {
	f := &driftFixture{t: t, store: newTestStore(t), clock: newTestClock(alertT0), notify: n}
	f.p = NewRecorder(f.store, n, RecorderOptions{Clock: f.clock, Deliver: true})
	return f
}

// run records one run of body, one minute after the previous one, and
// returns what the recorder decided and the alerts it recorded.
func (f *driftFixture) run(body string, code results.Code) (Decision, []results.Alert) {
	f.t.Helper()
	f.clock.Advance(time.Minute)
	r := pipelineRun(f.t, "external_search", f.clock.Now(), body, code)
	d := record(f.t, f.p, r)
	f.last = r
	return d, d.Alerts
}

// baseline processes n passing runs of the baseline layout.
func (f *driftFixture) baseline(n int) {
	f.t.Helper()
	for range n {
		r, alerts := f.run(seedBaselineBody, "")
		if len(r.Drift) != 0 || len(alerts) != 0 {
			f.t.Fatalf("baseline run drifted %v or alerted %v", r.Drift, alertKinds(alerts))
		}
	}
}

func (f *driftFixture) drifts() []results.Drift {
	_, drifts, _, _ := f.store.snapshot()
	return drifts
}

func driftAlerts(alerts []results.Alert) []results.Alert {
	var out []results.Alert
	for _, a := range alerts {
		if a.Kind == results.AlertDrift {
			out = append(out, a)
		}
	}
	return out
}

func TestDriftSeed000(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(5)
	r, alerts := f.run(seedWrappedBody, seedWrappedCode)

	runs, _, _, _ := f.store.snapshot()
	if fp := runs[len(runs)-1].Shape.Fingerprint; fp != seedWrappedFP {
		t.Fatalf("wrapped layout fingerprint = %s, want %s (seed 000)", fp, seedWrappedFP)
	}
	if f.last.Shape.Baseline != "" || len(f.last.Shape.Drift) != 0 {
		t.Errorf("the recorder wrote its decision into the caller's result: %+v", f.last.Shape)
	}
	if r.Baseline != seedBaselineFP {
		t.Errorf("Decision.Baseline = %q, want %s", r.Baseline, seedBaselineFP)
	}
	if want := []string{seedDiffLine}; !slices.Equal(r.Drift, want) {
		t.Errorf("Decision.Drift = %q, want exactly %q", r.Drift, want)
	}

	drifts := f.drifts()
	if len(drifts) != 1 {
		t.Fatalf("%d drift rows, want 1", len(drifts))
	}
	want := results.Drift{Probe: "external_search", OperationID: runs[len(runs)-1].OperationID, DetectedAt: f.clock.Now(),
		Baseline: seedBaselineFP, Current: seedWrappedFP, Diff: []string{seedDiffLine}}
	if d := drifts[0]; fmt.Sprint(d) != fmt.Sprint(want) {
		t.Errorf("drift row = %+v, want %+v", d, want)
	}

	// The drift explains the change and the failing rule proves the
	// impact: both are announced, the cause first.
	if got := alertKinds(alerts); fmt.Sprint(got) != "[shape_drift firing]" {
		t.Fatalf("alerts = %v, want [shape_drift firing]", got)
	}
	a := alerts[0]
	if a.ID == 0 || a.Drift == nil || fmt.Sprint(*a.Drift) != fmt.Sprint(want) || a.Code != seedWrappedCode ||
		a.Outcome != results.ContractError || a.State != results.DeliveryPending {
		t.Errorf("drift alert = %+v, want the drift %+v of the contract_error run, pending, with an ID", a, want)
	}
}

func TestDriftNeedsFiveObservations(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(4)
	r, alerts := f.run(seedWrappedBody, seedWrappedCode)
	if len(r.Drift) != 0 || r.Baseline != "" {
		t.Errorf("with 4 baseline observations the run drifted: baseline %q, drift %q", r.Baseline, r.Drift)
	}
	if len(f.drifts()) != 0 || len(driftAlerts(alerts)) != 0 {
		t.Errorf("with 4 baseline observations: %d drift rows, alerts %v", len(f.drifts()), alertKinds(alerts))
	}
}

// TestDriftBaselineWindow: observations older than 24 hours are no baseline.
func TestDriftBaselineWindow(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	// The baseline ends at 13:59, the drifted run comes at 14:00 a day
	// later: its window starts on the hour, so that a store counting from
	// the start of since's hour (as runner.Store allows) sees no more
	// than the window either.
	setClock(f.clock, alertT0.Add(54*time.Minute))
	f.baseline(5)
	f.clock.Advance(24 * time.Hour)
	r, _ := f.run(seedWrappedBody, seedWrappedCode)
	if len(r.Drift) != 0 {
		t.Errorf("drifted %q against a baseline last seen more than 24h ago", r.Drift)
	}
}

func TestDriftDeduplicatedForAnHour(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(10)
	_, alerts := f.run(seedWrappedBody, seedWrappedCode)
	first := f.last
	if len(driftAlerts(alerts)) != 1 {
		t.Fatalf("first drifted run made alerts %v", alertKinds(alerts))
	}
	firstAt := f.clock.Now()

	f.store.resetCalls()
	second, alerts := f.run(seedWrappedBody, seedWrappedCode)
	if !slices.Equal(second.Drift, []string{seedDiffLine}) || second.Baseline != seedBaselineFP {
		t.Errorf("second drifted run: baseline %q, drift %q; every drifted run must show its drift", second.Baseline, second.Drift)
	}
	if len(f.drifts()) != 1 || len(driftAlerts(alerts)) != 0 {
		t.Errorf("second drifted run within the hour: %d drift rows, alerts %v; want 1 row, no drift alert",
			len(f.drifts()), alertKinds(alerts))
	}
	if n := f.store.callCount("ShapeText"); n != 0 {
		t.Errorf("second drifted run read the baseline shape text %d times; it is immutable and cached", n)
	}

	// Just before the hour: still quiet. At the hour: again.
	setClock(f.clock, firstAt.Add(time.Hour-time.Minute-time.Millisecond))
	_, alerts = f.run(seedWrappedBody, seedWrappedCode)
	if len(f.drifts()) != 1 || len(driftAlerts(alerts)) != 0 {
		t.Errorf("drifted run 1ms before the hour: %d drift rows, alerts %v", len(f.drifts()), alertKinds(alerts))
	}
	setClock(f.clock, firstAt.Add(time.Hour-time.Minute))
	_, alerts = f.run(seedWrappedBody, seedWrappedCode)
	third := f.last
	if len(f.drifts()) != 2 || len(driftAlerts(alerts)) != 1 {
		t.Fatalf("drifted run an hour later: %d drift rows, alerts %v; want 2 rows and a drift alert",
			len(f.drifts()), alertKinds(alerts))
	}
	if d := f.drifts()[1]; d.OperationID != third.OperationID || d.OperationID == first.OperationID {
		t.Errorf("the second drift row names operation %s, want %s", d.OperationID, third.OperationID)
	}
}

func TestDriftOfPassingRun(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(5)
	// A consumer that supports both layouts passes; the contract still
	// changed.
	r, alerts := f.run(seedWrappedBody, "")
	if !slices.Equal(r.Drift, []string{seedDiffLine}) {
		t.Errorf("passing drifted run: drift %q, want %q", r.Drift, seedDiffLine)
	}
	if got := alertKinds(alerts); fmt.Sprint(got) != "[shape_drift]" {
		t.Fatalf("passing drifted run made alerts %v, want [shape_drift]", got)
	}
	if a := alerts[0]; a.Outcome != results.Pass || a.Code != "" || a.Drift == nil {
		t.Errorf("drift alert of a passing run = %+v", a)
	}
	if len(f.drifts()) != 1 {
		t.Errorf("%d drift rows, want 1", len(f.drifts()))
	}
}

func TestDriftNotInNotifyOn(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true, "contract_error", "unavailable"))
	f.baseline(5)
	r, alerts := f.run(seedWrappedBody, seedWrappedCode)
	if len(r.Drift) == 0 {
		t.Error("the run's drift was not reported without shape_drift in notify.on")
	}
	if len(f.drifts()) != 1 {
		t.Errorf("%d drift rows, want 1: drift events are recorded whatever notify.on says", len(f.drifts()))
	}
	if got := alertKinds(alerts); fmt.Sprint(got) != "[firing]" {
		t.Errorf("alerts = %v, want [firing] only", got)
	}
}

// TestDriftNoDriftPathIsCheap: a run with its probe's established shape
// costs no store read while the baseline read last is fresh, one
// DominantShape once it is older than baselineTTL, and a run without a
// body none.
func TestDriftNoDriftPathIsCheap(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(6)
	driftReads := func() int {
		return f.store.callCount("DominantShape") + f.store.callCount("ShapeText") + f.store.callCount("LastDriftAt")
	}
	f.store.resetCalls()
	f.run(seedBaselineBody, "") // one minute after the last read
	if n := driftReads(); n != 0 {
		t.Errorf("a run with the established shape made %d drift reads, want 0", n)
	}

	f.clock.Advance(baselineTTL)
	f.store.resetCalls()
	f.run(seedBaselineBody, "")
	if n := driftReads(); n != 1 || f.store.callCount("DominantShape") != 1 {
		t.Errorf("a run after the baseline went stale made %d drift reads, want DominantShape only", n)
	}

	f.store.resetCalls()
	f.run("", results.CodeConnectionRefused)
	if n := f.store.callCount("DominantShape"); n != 0 {
		t.Errorf("a run without a body asked for the dominant shape %d times", n)
	}
}

// TestDriftCachedBaselineStillSeesDrift: the cached baseline only spares
// runs with that very shape; a run with another shape asks the store and
// reports its drift, every time, and a drift back to the old shape after
// the new one took over is seen too.
func TestDriftCachedBaselineStillSeesDrift(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(6)
	for i := range 3 {
		r, _ := f.run(seedWrappedBody, seedWrappedCode)
		if len(r.Drift) == 0 {
			t.Fatalf("drifted run %d: no drift reported", i+1)
		}
	}
	// Enough wrapped runs to make it the dominant shape; then the old
	// layout is the drift, although it was the cached baseline once.
	for range 10 {
		f.run(seedWrappedBody, seedWrappedCode)
	}
	r, _ := f.run(seedBaselineBody, "")
	if len(r.Drift) == 0 {
		t.Fatal("a run back on the old layout after the new one took over reported no drift")
	}
}

// TestDriftStoreErrors: the run is recorded even when drift detection
// could not ask the store, and a later run detects the drift.
func TestDriftStoreErrors(t *testing.T) {
	for _, method := range []string{"DominantShape", "ShapeText", "LastDriftAt"} {
		t.Run(method, func(t *testing.T) {
			f := newDriftFixture(t, notifyOn(1, time.Hour, true))
			f.baseline(5)
			f.store.setFail(func(m string) error {
				if m == method {
					return errors.New("database is locked")
				}
				return nil
			})
			_, alerts := f.run(seedWrappedBody, seedWrappedCode)
			if runs, _, _, _ := f.store.snapshot(); len(runs) != 6 {
				t.Fatalf("%d runs recorded, want 6: a drift lookup error lost the run", len(runs))
			}
			if len(f.drifts()) != 0 || len(driftAlerts(alerts)) != 0 {
				t.Errorf("drift recorded or alerted %v despite %s failing", alertKinds(alerts), method)
			}
			if got := alertKinds(alerts); fmt.Sprint(got) != "[firing]" {
				t.Errorf("alerts = %v, want the failure's [firing] still", got)
			}

			f.store.setFail(nil)
			r, alerts := f.run(seedWrappedBody, seedWrappedCode)
			if len(r.Drift) == 0 || len(f.drifts()) != 1 || len(driftAlerts(alerts)) != 1 {
				t.Errorf("the next drifted run: drift %q, %d rows, alerts %v; want the drift detected",
					r.Drift, len(f.drifts()), alertKinds(alerts))
			}
		})
	}
}

// TestDriftUnparsableShape: a stored shape text that does not parse still
// yields a drift, with a line that says no diff is available.
func TestDriftUnparsableShape(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	// A store keeps the first text of a fingerprint: the broken one goes
	// in before the baseline's runs, with a run of another probe, which
	// the baseline's dominant shape does not count.
	f.store.seedShape("another_probe", seedBaselineFP, "object{ not canonical }", alertT0)
	f.baseline(5)
	r, alerts := f.run(seedWrappedBody, "")
	want := []string{fmt.Sprintf("$: shape %s -> %s (no path diff available)", seedBaselineFP, seedWrappedFP)}
	if !slices.Equal(r.Drift, want) || len(driftAlerts(alerts)) != 1 {
		t.Errorf("drift %q, alerts %v; want %q and a drift alert", r.Drift, alertKinds(alerts), want)
	}
}
