package storetest

import (
	"context"
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
