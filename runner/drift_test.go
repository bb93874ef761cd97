package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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

// restart replaces the recorder with a new one over the same store, as a
// restart of the daemon does.
func (f *driftFixture) restart() {
	f.p = NewRecorder(f.store, f.notify, RecorderOptions{Clock: f.clock, Deliver: true})
}

// run records one run of body, one minute after the previous one, and
// returns what the recorder decided and the alerts it recorded.
func (f *driftFixture) run(body string, code results.Code) (Decision, []results.Alert) {
	f.t.Helper()
	f.clock.Advance(time.Minute)
	r := pipelineRun(f.t, "external_search", f.clock.Now(), body, code)
	d := mustWrite(f.t, f.p, r)
	f.last = r
	return d, d.Alerts
}

// baseline processes n passing runs of the baseline layout.
func (f *driftFixture) baseline(n int) {
	f.t.Helper()
	for range n {
		r, alerts := f.run(seedBaselineBody, "")
		if len(r.Diff) != 0 || len(alerts) != 0 {
			f.t.Fatalf("baseline run drifted %v or alerted %v", r.Diff, alertKinds(alerts))
		}
	}
}

func (f *driftFixture) drifts() []results.Drift {
	_, drifts, _, _ := f.store.snapshot()
	return drifts
}

func alertsOfDrift(alerts []results.Alert) []results.Alert {
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
	latest := runs[len(runs)-1]
	if fp := latest.Shape.Fingerprint; fp != seedWrappedFP {
		t.Fatalf("wrapped layout fingerprint = %s, want %s (seed 000)", fp, seedWrappedFP)
	}
	if f.last.Shape.Baseline != "" || len(f.last.Shape.Drift) != 0 || f.last.Shape.Profile != nil {
		t.Errorf("the recorder wrote its decision into the caller's result: %+v", f.last.Shape)
	}
	if r.Baseline != seedBaselineFP {
		t.Errorf("Decision.Baseline = %q, want %s", r.Baseline, seedBaselineFP)
	}
	if want := []string{seedDiffLine}; !slices.Equal(r.Diff, want) {
		t.Errorf("Decision.Drift = %q, want exactly %q", r.Diff, want)
	}
	// The stored run says it drifted, for the API and the status page.
	if latest.Shape.Baseline != seedBaselineFP || !slices.Equal(latest.Shape.Drift, []string{seedDiffLine}) {
		t.Errorf("stored run's shape = %+v, want the baseline and the drift line", latest.Shape)
	}
	if env := latest.Envelope(); env.Shape == nil || !slices.Equal(env.Shape.Drift, []string{seedDiffLine}) {
		t.Errorf("stored run's envelope shape = %+v, want the drift line", env.Shape)
	}

	drifts := f.drifts()
	if len(drifts) != 1 {
		t.Fatalf("%d drift rows, want 1", len(drifts))
	}
	want := results.Drift{Kind: results.DriftResponse, Probe: "external_search", OperationID: latest.OperationID, DetectedAt: f.clock.Now(),
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
	if len(r.Diff) != 0 || r.Baseline != "" {
		t.Errorf("with 4 baseline observations the run drifted: baseline %q, drift %q", r.Baseline, r.Diff)
	}
	if len(f.drifts()) != 0 || len(alertsOfDrift(alerts)) != 0 {
		t.Errorf("with 4 baseline observations: %d drift rows, alerts %v", len(f.drifts()), alertKinds(alerts))
	}
}

// TestDriftBaselineWindow: a profile without an answer for 24 hours starts
// over.
func TestDriftBaselineWindow(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(5)
	f.clock.Advance(24 * time.Hour)
	r, _ := f.run(seedWrappedBody, seedWrappedCode)
	if len(r.Diff) != 0 {
		t.Errorf("drifted %q against a baseline last seen more than 24h ago", r.Diff)
	}
}

// TestDriftAlertsOnceThenLearns: a real change alerts on its first answer;
// the second still drifts, without an alert or a drift row; from then on
// the profile has learned the new shape. No reminder comes an hour later.
func TestDriftAlertsOnceThenLearns(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(10)
	_, alerts := f.run(seedWrappedBody, "")
	if len(alertsOfDrift(alerts)) != 1 {
		t.Fatalf("first drifted run made alerts %v", alertKinds(alerts))
	}
	second, alerts := f.run(seedWrappedBody, "")
	if !slices.Equal(second.Diff, []string{seedDiffLine}) || second.Baseline != seedBaselineFP {
		t.Errorf("second drifted run: baseline %q, drift %q; the profile has not learned it yet", second.Baseline, second.Diff)
	}
	if len(f.drifts()) != 1 || len(alerts) != 0 {
		t.Errorf("second drifted run: %d drift rows, alerts %v; want 1 row, no alert", len(f.drifts()), alertKinds(alerts))
	}
	for i := range 3 {
		if i == 2 {
			f.clock.Advance(time.Hour)
		}
		d, alerts := f.run(seedWrappedBody, "")
		if d.Diff != nil || len(alerts) != 0 {
			t.Errorf("drifted run %d: drift %q, alerts %v; want the new shape learned", i+3, d.Diff, alertKinds(alerts))
		}
	}
	if n := len(f.drifts()); n != 1 {
		t.Errorf("%d drift rows, want 1", n)
	}
	runs := f.store.recorded()
	var drifted []bool
	for _, r := range runs[len(runs)-5:] {
		drifted = append(drifted, r.Shape.Drift != nil)
	}
	if fmt.Sprint(drifted) != "[true true false false false]" {
		t.Errorf("stored drift marks of the wrapped runs: %v", drifted)
	}
	// The old layout is still part of the profile (for a day).
	if d, _ := f.run(seedBaselineBody, ""); d.Diff != nil {
		t.Errorf("back to the old layout: drift %q", d.Diff)
	}
}

// TestDriftEachChangeAlerts: a second, different change after the first
// was learned is announced too.
func TestDriftEachChangeAlerts(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(6)
	for range 3 {
		f.run(seedWrappedBody, "")
	}
	retyped := strings.Replace(seedWrappedBody, "0.93", `"0.93"`, 1)
	d, alerts := f.run(retyped, "")
	if want := []string{"results.items[].score: number -> string"}; !slices.Equal(d.Diff, want) || len(alertsOfDrift(alerts)) != 1 {
		t.Errorf("second change: drift %q, alerts %v; want %q alerted", d.Diff, alertKinds(alerts), want)
	}
	if n := len(f.drifts()); n != 2 {
		t.Errorf("%d drift rows, want 2", n)
	}
}

func TestDriftOfPassingRun(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(5)
	// A consumer that supports both layouts passes; the contract still
	// changed.
	r, alerts := f.run(seedWrappedBody, "")
	if !slices.Equal(r.Diff, []string{seedDiffLine}) {
		t.Errorf("passing drifted run: drift %q, want %q", r.Diff, seedDiffLine)
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
	if len(r.Diff) == 0 {
		t.Error("the run's drift was not reported without shape_drift in notify.on")
	}
	if len(f.drifts()) != 1 {
		t.Errorf("%d drift rows, want 1: drift events are recorded whatever notify.on says", len(f.drifts()))
	}
	if got := alertKinds(alerts); fmt.Sprint(got) != "[firing]" {
		t.Errorf("alerts = %v, want [firing] only", got)
	}
}

// TestDriftNoDriftPathIsCheap: once a probe's profile is in memory, a run
// reads nothing of it from the store; the resets are read at most every
// SilenceRefresh, for every probe at once; the profile is written only when
// what it learned changed, or profileFlush after the last write.
func TestDriftNoDriftPathIsCheap(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	var saved int
	f.store.setHook(func(rec *results.RunRecord) error {
		if rec.Result.Shape != nil && rec.Result.Shape.Profile != nil {
			saved++
		}
		return nil
	})
	f.baseline(6)
	if n := f.store.callCount("ShapeProfile") + f.store.callCount("RecentShapes"); n != 2 {
		t.Errorf("the first runs read the profile %d times, want once (ShapeProfile, RecentShapes)", n)
	}
	// Learned on the 2nd answer, established on the 5th; the first is
	// saved because nothing was.
	if saved != 3 {
		t.Errorf("%d of the first 6 runs saved the profile, want 3", saved)
	}
	f.store.resetCalls()
	saved = 0
	for range 8 {
		f.run(seedBaselineBody, "") // one a minute, the last save was at the 5th
	}
	if n := f.store.callCount("ShapeProfile") + f.store.callCount("RecentShapes"); n != 0 {
		t.Errorf("runs with the established shape read the profile %d times, want 0", n)
	}
	// A minute apart, each run reads the resets; a run of another probe
	// within SilenceRefresh does not read them again.
	if n := f.store.callCount("ProfileResets"); n != 8 {
		t.Errorf("8 runs a minute apart read the resets %d times, want 8", n)
	}
	mustWrite(t, f.p, pipelineRun(t, "another_probe", f.clock.Now().Add(time.Second), seedBaselineBody, ""))
	if n := f.store.callCount("ProfileResets"); n != 8 {
		t.Errorf("a run within %v of the last read read the resets again (%d reads)", SilenceRefresh, n)
	}
	if saved != 1 {
		t.Fatalf("%d runs saved a profile, want 1 (another_probe's first)", saved)
	}
	saved = 0
	if saved != 0 {
		t.Errorf("%d runs that changed only counts saved the profile, want 0", saved)
	}
	f.run(seedBaselineBody, "")
	if saved != 1 {
		t.Errorf("the run %v after the last write saved %d times, want once", profileFlush, saved)
	}

	f.store.resetCalls()
	f.run("", results.CodeConnectionRefused)
	if n := f.store.callCount("ProfileResets") + f.store.callCount("ShapeProfile"); n != 0 {
		t.Errorf("a run without a body made %d drift reads", n)
	}
}

// TestDriftProfileSurvivesRestart: a restarted daemon judges the next
// answer against the stored profile, without a new warm-up.
func TestDriftProfileSurvivesRestart(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(6)
	f.restart()
	d, alerts := f.run(seedWrappedBody, "")
	if !slices.Equal(d.Diff, []string{seedDiffLine}) || len(alertsOfDrift(alerts)) != 1 {
		t.Errorf("after a restart: drift %q, alerts %v; want the drift alerted", d.Diff, alertKinds(alerts))
	}
}

// TestDriftRecordRetriedLearnsOnce: a run the store refused is recorded
// again later (the write queue); it must not have been learned by the
// attempt that failed, or its retry would lose the alert.
func TestDriftRecordRetriedLearnsOnce(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(6)
	f.clock.Advance(time.Minute)
	r := pipelineRun(t, "external_search", f.clock.Now(), seedWrappedBody, "")
	f.store.setFail(func(m string) error {
		if m == "RecordRun" {
			return errors.New("disk I/O error")
		}
		return nil
	})
	if _, err := f.p.write(context.Background(), r); err == nil {
		t.Fatal("write: no error from a failing store")
	}
	f.store.setFail(nil)
	d, err := f.p.write(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(alertsOfDrift(d.Alerts)) != 1 || len(f.drifts()) != 1 {
		t.Errorf("the retried run: alerts %v, %d drift rows; want its drift alerted once", alertKinds(d.Alerts), len(f.drifts()))
	}
}

// TestDriftStoreErrors: the run is recorded even when drift detection
// could not read the profile, and a later run detects the drift.
func TestDriftStoreErrors(t *testing.T) {
	for _, method := range []string{"ShapeProfile", "RecentShapes", "ProfileResets"} {
		t.Run(method, func(t *testing.T) {
			f := newDriftFixture(t, notifyOn(1, time.Hour, true))
			f.baseline(6)
			f.restart() // the profile is read again on the next run
			f.store.setFail(func(m string) error {
				if m == method {
					return errors.New("database is locked")
				}
				return nil
			})
			if method == "RecentShapes" {
				// Only a probe without a profile row reads its recent
				// shapes: one recorded before profiles existed.
				f.store.seedShape("legacy", seedBaselineFP, "object{next_cursor:null,results:list<object{id:string,score:number,title:string}>}", f.clock.Now())
				f.clock.Advance(time.Minute)
				r := pipelineRun(t, "legacy", f.clock.Now(), seedWrappedBody, "")
				if _, err := f.p.write(context.Background(), r); err != nil {
					t.Fatalf("a run whose drift lookup failed was not recorded: %v", err)
				}
				return
			}
			d, alerts := f.run(seedWrappedBody, seedWrappedCode)
			if got := alertKinds(alerts); fmt.Sprint(got) != "[firing]" && method != "ProfileResets" {
				t.Errorf("alerts = %v, want the failure's [firing] only", got)
			}
			if method == "ProfileResets" {
				// Resets are a side read: detection goes on without them.
				if len(d.Diff) == 0 || len(alertsOfDrift(alerts)) != 1 {
					t.Errorf("ProfileResets failing: drift %q, alerts %v; want the drift detected", d.Diff, alertKinds(alerts))
				}
				return
			}
			if runs := f.store.recorded(); len(runs) != 7 {
				t.Fatalf("%d runs recorded, want 7: a drift lookup error lost the run", len(runs))
			}
			f.store.setFail(nil)
			d, alerts = f.run(seedWrappedBody, seedWrappedCode)
			if len(d.Diff) == 0 || len(f.drifts()) != 1 || len(alertsOfDrift(alerts)) != 1 {
				t.Errorf("the next drifted run: drift %q, %d rows, alerts %v; want the drift detected",
					d.Diff, len(f.drifts()), alertKinds(alerts))
			}
		})
	}
}

// TestDriftCarriesOverRecordedShapes: a probe recorded before profiles
// existed (no profile row) starts from the shapes of its last 24 hours,
// collapsing the maps that older canonical text spelt as objects: the
// upgrade neither warms up again nor alerts on answers it knew.
func TestDriftCarriesOverRecordedShapes(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	// What an older release recorded: an id-keyed object, keys and all.
	old := []string{
		"object{facets:object{f3a9c1:object{n:number}},next_cursor:null,results:list<object{id:string,score:number,title:string}>}",
		"object{facets:object{0b77e2:object{n:number},9a8b7c:object{n:number}},next_cursor:null,results:list<object{id:string,score:number,title:string}>}",
	}
	for i, text := range old {
		for j := range 3 {
			f.store.seedShape("external_search", fmt.Sprintf("00000000000000%02x", i), text, f.clock.Now().Add(time.Duration(j)*time.Minute))
		}
	}
	f.clock.Advance(10 * time.Minute)
	d, alerts := f.run(`{"facets":{"d00d12":{"n":4}},"next_cursor":null,"results":[{"id":"a","score":1,"title":"t"}]}`, "")
	if d.Diff != nil || len(alerts) != 0 {
		t.Errorf("first run after the upgrade: drift %q, alerts %v; want it to fit the carried-over profile", d.Diff, alertKinds(alerts))
	}
	d, alerts = f.run(`{"facets":{"d00d12":{"n":4}},"next_cursor":null,"results":{"items":[]}}`, "")
	if want := []string{seedDiffLine}; !slices.Equal(d.Diff, want) || len(alertsOfDrift(alerts)) != 1 {
		t.Errorf("the seed-000 wrap after the upgrade: drift %q, alerts %v; want %q alerted", d.Diff, alertKinds(alerts), want)
	}
}

// TestDriftBaselineReset: after `toolpulse baseline reset`, the daemon
// learns afresh within SilenceRefresh, and a profile it learned before the
// reset is never written over it.
func TestDriftBaselineReset(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(6)
	if _, err := f.store.ResetProfile(context.Background(), "external_search", f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	// The intended change, announced with the reset: the new layout.
	f.clock.Advance(SilenceRefresh)
	for i := range 8 {
		d, alerts := f.run(seedWrappedBody, "")
		if d.Diff != nil || len(alerts) != 0 {
			t.Fatalf("wrapped run %d after the reset: drift %q, alerts %v; want a new baseline learned", i+1, d.Diff, alertKinds(alerts))
		}
	}
	d, _ := f.run(seedBaselineBody, "")
	if want := []string{"results: object(1 keys) -> list<object(3 keys)>"}; !slices.Equal(d.Diff, want) {
		t.Errorf("the old layout after the reset: drift %q, want %q", d.Diff, want)
	}
}

// TestDriftResetNotOverwritten: a run recorded between a reset and the
// daemon noticing it does not write the old profile back.
func TestDriftResetNotOverwritten(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	f.baseline(5) // saved last on the 5th run
	setClock(f.clock, f.clock.Now().Add(profileFlush-2*time.Second-time.Minute))
	f.run(seedBaselineBody, "") // a minute later; reads the resets: none
	if _, err := f.store.ResetProfile(context.Background(), "external_search", f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	// profileFlush after the last save, within SilenceRefresh of the last
	// read of the resets: this run saves, over a reset it has not seen.
	f.clock.Advance(2 * time.Second)
	mustWrite(t, f.p, pipelineRun(t, "external_search", f.clock.Now(), seedBaselineBody, ""))
	sp, _, err := f.store.ShapeProfile(context.Background(), "external_search")
	if err != nil || sp.Data != "" || sp.ResetAt.IsZero() {
		t.Errorf("stored profile after the reset: %+v, %v; want it still empty", sp, err)
	}
}

// recordedPattern plays n runs of gen through the recorder and returns the
// drift alerts and rows they made and the distinct fingerprints they had.
func recordedPattern(t *testing.T, f *driftFixture, n int, gen func(i int, rnd *rand.Rand) string) (alerts, fingerprints int) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, 16))
	for i := range n {
		_, as := f.run(gen(i, rnd), "")
		alerts += len(alertsOfDrift(as))
	}
	seen := map[string]bool{}
	for _, r := range f.store.recorded() {
		if r.Shape != nil {
			seen[r.Shape.Fingerprint] = true
		}
	}
	return alerts, len(seen)
}

// TestDriftPaginationScenario is issue 16's first story: a paginated
// search (next_cursor a string, null on the last page) that sometimes
// finds nothing and has a field that is sometimes absent made 3 drift
// alerts in 30 runs. It makes none now.
func TestDriftPaginationScenario(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	alerts, fps := recordedPattern(t, f, 30, func(i int, _ *rand.Rand) string {
		cursor := fmt.Sprintf(`"c_%d"`, i)
		if i%4 == 3 {
			cursor = "null"
		}
		item := `{"id":"doc_1","title":"t","score":0.5}`
		if i%3 == 0 {
			item = `{"id":"doc_1","title":"t","score":1,"author":"Ann"}`
		}
		if i%5 == 2 {
			return `{"results":[],"next_cursor":null}`
		}
		return `{"results":[` + item + `],"next_cursor":` + cursor + `}`
	})
	if alerts != 0 || len(f.drifts()) != 0 {
		t.Errorf("30 runs of normal variation: %d drift alerts, %d drift rows; want none", alerts, len(f.drifts()))
	}
	if fps > 8 {
		t.Errorf("%d fingerprints in 30 runs", fps)
	}
}

// TestDriftIDKeyedMapScenario is issue 16's second story: an answer with
// an object keyed by ids that change every call minted a fingerprint per
// run, so drift detection never had a baseline and missed the seed-000
// wrap, and the shapes table gained a row per run. Now the fingerprint is
// stable and the wrap is announced once.
func TestDriftIDKeyedMapScenario(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	facets := func(rnd *rand.Rand) string {
		var out []string
		for range 1 + rnd.IntN(3) {
			out = append(out, fmt.Sprintf(`"%06x":{"label":"docs","count":%d}`, 0xa00000+rnd.IntN(0x5fffff), rnd.IntN(9)))
		}
		return "{" + strings.Join(out, ",") + "}"
	}
	body := func(results string) func(int, *rand.Rand) string {
		return func(_ int, rnd *rand.Rand) string {
			return `{"results":` + results + `,"next_cursor":null,"facets":` + facets(rnd) + `}`
		}
	}
	list := `[{"id":"doc_784","title":"API migration guide","score":0.93}]`
	alerts, fps := recordedPattern(t, f, 36, body(list))
	if alerts != 0 || fps != 1 {
		t.Errorf("36 runs with id-keyed facets: %d drift alerts, %d fingerprints; want 0 and 1", alerts, fps)
	}
	wrapped := `{"items":` + list + `}`
	alerts, fps = recordedPattern(t, f, 5, body(wrapped))
	if alerts != 1 || fps != 2 {
		t.Errorf("5 runs of the seed-000 wrap: %d drift alerts, %d fingerprints; want 1 and 2", alerts, fps)
	}
	if d := f.drifts(); len(d) != 1 || !slices.Equal(d[0].Diff, []string{seedDiffLine}) {
		t.Errorf("drift rows: %+v, want one with %q", d, seedDiffLine)
	}
}

// TestDriftKeyedMapScenario: an object keyed by ids of no pattern the
// shape recognises ("doc_784") is learned as a map across answers: no
// alerts, a fingerprint that stops changing once learned (so the shapes
// table stops growing), and a change of its values is announced once.
func TestDriftKeyedMapScenario(t *testing.T) {
	f := newDriftFixture(t, notifyOn(1, time.Hour, true))
	body := func(score string) func(int, *rand.Rand) string {
		return func(i int, rnd *rand.Rand) string {
			var docs []string
			for range 1 + rnd.IntN(3) {
				docs = append(docs, fmt.Sprintf(`"doc_%d":{"title":"t","score":%s}`, rnd.IntN(1e6), score))
			}
			return `{"by_id":{` + strings.Join(docs, ",") + `},"next_cursor":null}`
		}
	}
	alerts, fps := recordedPattern(t, f, 30, body("0.5"))
	if alerts != 0 || fps > 4 {
		t.Errorf("30 runs keyed by doc ids: %d drift alerts, %d fingerprints; want 0 and a few of the warm-up", alerts, fps)
	}
	runs := f.store.recorded()
	last := runs[len(runs)-1].Shape
	if last.Canonical != "object{by_id:map<object{score:number,title:string}>,next_cursor:null}" {
		t.Errorf("recorded shape %s, want the map", last.Canonical)
	}
	for _, r := range runs[10:] {
		if r.Shape.Fingerprint != last.Fingerprint {
			t.Errorf("run %s has fingerprint %s, want the map's %s", r.OperationID, r.Shape.Fingerprint, last.Fingerprint)
		}
	}
	alerts, _ = recordedPattern(t, f, 4, body(`"high"`))
	if d := f.drifts(); alerts != 1 || len(d) != 1 || fmt.Sprint(d[0].Diff) != "[by_id.*.score: number -> string]" {
		t.Errorf("retyped values: %d alerts, drifts %+v; want one by_id.*.score line", alerts, d)
	}
}
