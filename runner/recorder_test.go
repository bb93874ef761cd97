package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// newTestClock is a clock for the recorder and the deliverer that moves
// only when a test moves it.
func newTestClock(t time.Time) *clockwork.FakeClock { return clockwork.NewFakeClockAt(t) }

// setClock moves c to t, which must not be before c's now.
func setClock(c *clockwork.FakeClock, t time.Time) { c.Advance(t.Sub(c.Now())) }

// pipelineRun returns a result of probe started at the clock's now, with
// the shape of body when body is not "" and code's failure when code is not
// "".
func pipelineRun(t testing.TB, probe string, at time.Time, body string, code results.Code) *results.Result {
	t.Helper()
	r := &results.Result{
		OperationID: fmt.Sprintf("%s@%s", probe, at.Format(time.RFC3339Nano)),
		Probe:       probe,
		StartedAt:   at,
		Duration:    40 * time.Millisecond,
		Outcome:     results.Pass,
		Attempts:    []results.Attempt{{Number: 1, StartedAt: at, HTTPStatus: 200}},
		HTTPStatus:  200,
		Consumer:    results.ConsumerRef{Name: "select_results", Version: "2", RuleHash: "abc"},
	}
	if body != "" {
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("test body %q: %v", body, err)
		}
		r.Shape = shapeOf(v)
	}
	if code != "" {
		r.Fail(results.NewError(code, "failed with %s", code))
	}
	return r
}

// mustWrite has rc write r in one store transaction, as the write queue
// does, and fails the test on an error.
func mustWrite(t testing.TB, rc *Recorder, r *results.Result) Decision {
	t.Helper()
	d, err := rc.write(context.Background(), r)
	if err != nil {
		t.Fatalf("write(%s): %v", r.OperationID, err)
	}
	return d
}

// process writes r and returns the alerts it recorded.
func process(t testing.TB, rc *Recorder, r *results.Result) []results.Alert {
	t.Helper()
	return mustWrite(t, rc, r).Alerts
}

func alertKinds(alerts []results.Alert) []results.AlertKind {
	kinds := []results.AlertKind{}
	for _, a := range alerts {
		kinds = append(kinds, a.Kind)
	}
	return kinds
}

func TestRecorderRecordFailureDoesNotAdvanceState(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	p := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Clock: clock, Deliver: true})
	if err := p.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	diskFull := errors.New("disk full")
	store.setFail(func(m string) error {
		if m == "RecordRun" {
			return diskFull
		}
		return nil
	})

	d, err := p.write(context.Background(), pipelineRun(t, "search", clock.Now(), "", results.CodeTimeout))
	if !errors.Is(err, diskFull) {
		t.Fatalf("write error = %v, want one wrapping %v", err, diskFull)
	}
	if d.Alerts != nil {
		t.Errorf("write returned alerts %v although nothing was recorded", alertKinds(d.Alerts))
	}

	store.setFail(nil)
	clock.Advance(time.Minute)
	alerts := process(t, p, pipelineRun(t, "search", clock.Now(), "", results.CodeTimeout))
	if got := alertKinds(alerts); fmt.Sprint(got) != "[firing]" {
		t.Fatalf("after a failed record, the next failing run made alerts %v, want [firing]: the state advanced without being stored", got)
	}
	_, _, states, stored := store.snapshot()
	if st := states["search"]; st.ConsecutiveFailures != 1 || !st.Firing {
		t.Errorf("stored state = %+v, want 1 failure, firing", st)
	}
	if len(stored) != 1 || stored[0].ID != alerts[0].ID || alerts[0].ID == 0 {
		t.Errorf("stored alerts %+v, returned %+v: want the one firing alert with its ID", stored, alerts)
	}
}

func TestRecorderDeliverFlag(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	n := notifyOn(1, time.Hour, true)
	p := NewRecorder(store, n, RecorderOptions{Clock: clock, Deliver: false})

	alerts := process(t, p, pipelineRun(t, "search", clock.Now(), "", results.CodeTimeout))
	if len(alerts) != 1 || alerts[0].State != results.DeliverySkipped {
		t.Fatalf("with Deliver false, alerts = %+v, want one skipped", alerts)
	}

	p.SetConfig(&checks.Config{Notify: n}, true)
	clock.Advance(time.Minute)
	alerts = process(t, p, pipelineRun(t, "search", clock.Now(), "", ""))
	if len(alerts) != 1 || alerts[0].Kind != results.AlertResolved || alerts[0].State != results.DeliveryPending ||
		!alerts[0].NextAttemptAt.Equal(clock.Now()) {
		t.Fatalf("after SetConfig(deliver), alerts = %+v, want one pending resolved alert due now", alerts)
	}
}

func TestRecorderLoadRestoresState(t *testing.T) {
	store := newTestStore(t)
	store.seedState(results.AlertState{Probe: "search", ConsecutiveFailures: 3,
		FailingSince: alertT0.Add(-time.Hour), Firing: true, LastNotifiedAt: alertT0.Add(-10 * time.Minute)}, alertT0.Add(-time.Minute))
	clock := newTestClock(alertT0)
	p := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Clock: clock, Deliver: true})
	if err := p.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := alertKinds(process(t, p, pipelineRun(t, "search", clock.Now(), "", results.CodeTimeout))); len(got) != 0 {
		t.Errorf("a failure already announced before the restart alerted %v again", got)
	}
	clock.Advance(time.Minute)
	alerts := process(t, p, pipelineRun(t, "search", clock.Now(), "", ""))
	if got := alertKinds(alerts); fmt.Sprint(got) != "[resolved]" || !alerts[0].FailingSince.Equal(alertT0.Add(-time.Hour)) {
		t.Errorf("the pass after the restart made %+v, want a resolved alert failing since %v", alerts, alertT0.Add(-time.Hour))
	}

	store.setFail(func(string) error { return errors.New("locked") })
	if err := NewRecorder(store, checks.Notify{}, RecorderOptions{}).Load(context.Background()); err == nil {
		t.Error("Load hid a store error")
	}
}

// TestRecorderSerializesProbe processes runs of one probe from many
// goroutines: without the per-probe lock, two of them read the same state
// and one failure is lost.
func TestRecorderSerializesProbe(t *testing.T) {
	store := newTestStore(t)
	store.setFail(func(m string) error {
		if m == "RecordRun" {
			time.Sleep(time.Millisecond) // widen the read-to-write window
		}
		return nil
	})
	p := NewRecorder(store, notifyOn(1000, time.Hour, true), RecorderOptions{Deliver: true})
	const runs = 40
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			for _, probe := range []string{"a", "b"} {
				r := pipelineRun(t, probe, alertT0.Add(time.Duration(i)*time.Second), "", results.CodeTimeout)
				if _, err := p.write(context.Background(), r); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() { p.SetConfig(&checks.Config{Notify: notifyOn(1000, time.Hour, i%2 == 0)}, true) })
	}
	wg.Wait()
	_, _, states, _ := store.snapshot()
	for _, probe := range []string{"a", "b"} {
		if got := states[probe].ConsecutiveFailures; got != runs {
			t.Errorf("probe %s: %d consecutive failures stored after %d failing runs", probe, got, runs)
		}
	}
}

// TestRecorderIgnoresCancellation: a run that finished while shutdown began
// is still recorded.
func TestRecorderIgnoresCancellation(t *testing.T) {
	store := newTestStore(t)
	p := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Deliver: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Record(ctx, pipelineRun(t, "search", alertT0, "", "")); err != nil {
		t.Fatalf("Record with a cancelled context: %v", err)
	}
	if runs, _, _, _ := store.snapshot(); len(runs) != 1 {
		t.Errorf("%d runs recorded, want 1", len(runs))
	}
}

func TestRecorderLogsEachAlert(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	store := newTestStore(t)
	p := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Logger: logger, Deliver: true})
	r := pipelineRun(t, "search", alertT0, "", results.CodeServerError)
	r.Error.Message = "server said secret-token-123"
	alerts := process(t, p, r)

	var lines []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "alert enqueued" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d 'alert enqueued' lines for one alert:\n%s", len(lines), buf.String())
	}
	want := map[string]any{"probe": "search", "kind": "firing", "alert_id": float64(alerts[0].ID), "code": "server_error"}
	for k, v := range want {
		if lines[0][k] != v {
			t.Errorf("log %s = %v, want %v", k, lines[0][k], v)
		}
	}
	if strings.Contains(buf.String(), "secret-token-123") {
		t.Errorf("the log repeats the run's message, which may quote a provider:\n%s", buf.String())
	}
}

// TestRecorderNotBlockedBySlowDelivery: with the receiver hanging, runs are
// still recorded at once; the Recorder and the deliverer share only the store.
func TestRecorderNotBlockedBySlowDelivery(t *testing.T) {
	verifyNoLeaks(t)
	store := newTestStore(t)
	sender := &fakeSender{block: true}
	d := newDeliverer(store, sender, delivererOptions{PollInterval: 10 * time.Millisecond})
	d.grace = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { cancel(); <-done }()

	p := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Deliver: true})
	start := time.Now()
	for i := range 20 {
		code := results.CodeTimeout
		if i%2 == 1 {
			code = ""
		}
		process(t, p, pipelineRun(t, "search", alertT0.Add(time.Duration(i)*time.Minute), "", code))
		d.Wake()
		if i == 0 {
			sender.waitCalls(t, 1)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("20 runs took %v while Slack hung", took)
	}
}

// TestRecorderModeChangeSurvivesRestart is the on-call story of SPEC §8: a
// probe alerting on a contract error turns unavailable (timeout, then
// server_error). Each change is an update, also after a restart between
// them (the modes are kept with the alert state), and the resolved alert,
// read back from the outbox, lists every mode.
func TestRecorderModeChangeSurvivesRestart(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	n := notifyOn(1, time.Hour, true)
	start := func() *Recorder {
		p := NewRecorder(store, n, RecorderOptions{Clock: clock, Deliver: true})
		if err := p.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := start()
	var kinds []results.AlertKind
	for i, code := range []results.Code{results.CodeSelectionNotList, results.CodeTimeout, results.CodeServerError, ""} {
		if i == 2 {
			p = start() // a restart: only the store remembers
		}
		clock.Advance(time.Minute)
		kinds = append(kinds, alertKinds(process(t, p, pipelineRun(t, "search", clock.Now(), "", code)))...)
	}
	if fmt.Sprint(kinds) != "[firing update update resolved]" {
		t.Fatalf("alerts %v, want [firing update update resolved]", kinds)
	}
	due, err := store.DueAlerts(context.Background(), clock.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 4 {
		t.Fatalf("%d alerts in the outbox, want 4", len(due))
	}
	if got, want := due[2].Previous, (results.Mode{Outcome: results.Unavailable, Code: results.CodeTimeout}); got != want {
		t.Errorf("second update replaces %v, want %v", got, want)
	}
	want := []results.Mode{
		{Outcome: results.ContractError, Code: results.CodeSelectionNotList},
		{Outcome: results.Unavailable, Code: results.CodeTimeout},
		{Outcome: results.Unavailable, Code: results.CodeServerError},
	}
	if fmt.Sprint(due[3].Modes) != fmt.Sprint(want) {
		t.Errorf("resolved alert lists modes %v, want %v", due[3].Modes, want)
	}
}
