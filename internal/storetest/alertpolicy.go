package storetest

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// alertPolicyRoundTrip: the verdict the alert policy counts with
// (SPEC §13) comes back as recorded: the verdict, the passes towards
// success_threshold, a failure_window mask with its top bit set, and a
// flapping probe's changes in order; and a later state without them
// clears them.
func alertPolicyRoundTrip(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)

	rec := driftRun("op-1")
	st := rec.AlertState
	st.Failing, st.ConsecutivePasses = true, 2
	st.Window, st.WindowRuns = 1<<63|0b1011, results.MaxWindowRuns
	st.Flapping, st.FlappingSince = true, t0.Add(90*time.Second)
	st.VerdictChanges = []time.Time{t0, t0.Add(30 * time.Second), t0.Add(90 * time.Second)}
	recordRun(t, s, rec)
	got, err := s.AlertStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got[st.Probe], *st) {
		t.Errorf("AlertStates:\n got  %+v\n want %+v", got[st.Probe], *st)
	}
	if got[st.Probe].Window>>63 != 1 || got[st.Probe].Window&math.MaxInt64 != 0b1011 {
		t.Errorf("window mask %b, want the top bit and 1011", got[st.Probe].Window)
	}

	next := contractError("op-2")
	next.StartedAt = next.StartedAt.Add(time.Minute)
	cleared := results.AlertState{Probe: st.Probe, ConsecutiveFailures: 1, FailingSince: next.StartedAt}
	recordRun(t, s, &results.RunRecord{Result: next, AlertState: &cleared})
	if got, _ := s.AlertStates(ctx); !reflect.DeepEqual(got[st.Probe], cleared) {
		t.Errorf("AlertStates after a state without a verdict:\n got  %+v\n want %+v", got[st.Probe], cleared)
	}
}

// outboxFiringFlapping: for a probe that is flapping, what its receiver
// was last told is the flapping alert, also when the verdict has turned
// failing since (the failure began after it); once it settled failing,
// the firing alert of the settling is.
func outboxFiringFlapping(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	const am = "routes[0]/alertmanager"
	t0 := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
	record := func(id string, at time.Duration, kind results.AlertKind, st results.AlertState) results.Alert {
		r := runAt(id, "flaky", t0.Add(at), results.Unavailable, results.CodeTimeout, 10, 1)
		a := results.NewAlert(kind, &r, r.StartedAt)
		a.FailingSince, a.Receiver, a.State = st.FailingSince, am, results.DeliveryPending
		st.Probe = "flaky"
		rec := &results.RunRecord{Result: r, AlertState: &st, Alerts: []results.Alert{a}}
		recordRun(t, s, rec)
		if err := s.MarkAlertDelivered(ctx, rec.Alerts[0].ID, r.StartedAt.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		return rec.Alerts[0]
	}
	told := func() string {
		t.Helper()
		got, err := s.FiringAlerts(ctx, am)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range got {
			out = append(out, fmt.Sprintf("%s %d", a.Kind, a.ID))
		}
		return fmt.Sprint(out)
	}
	record("f1", 0, results.AlertFiring, results.AlertState{ConsecutiveFailures: 1, FailingSince: t0, Firing: true, Failing: true})
	flapping := record("f2", 2*time.Minute, results.AlertFlapping, results.AlertState{
		Firing: true, Flapping: true, FlappingSince: t0.Add(2 * time.Minute)})
	// Failing again while flapping: the failure began after the flapping
	// alert, which stays what the receiver was told.
	r := runAt("f3", "flaky", t0.Add(3*time.Minute), results.Unavailable, results.CodeTimeout, 10, 1)
	recordRun(t, s, &results.RunRecord{Result: r, AlertState: &results.AlertState{Probe: "flaky", ConsecutiveFailures: 1,
		FailingSince: r.StartedAt, Firing: true, Failing: true, Flapping: true, FlappingSince: t0.Add(2 * time.Minute)}})
	if got, want := told(), fmt.Sprint([]string{fmt.Sprintf("flapping %d", flapping.ID)}); got != want {
		t.Errorf("FiringAlerts while flapping: %s, want %s", got, want)
	}
	settled := record("f4", 20*time.Minute, results.AlertFiring, results.AlertState{
		ConsecutiveFailures: 2, FailingSince: t0.Add(3 * time.Minute), Firing: true, Failing: true})
	if got, want := told(), fmt.Sprint([]string{fmt.Sprintf("firing %d", settled.ID)}); got != want {
		t.Errorf("FiringAlerts once settled failing: %s, want %s", got, want)
	}
}
