package runner

import (
	"context"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results/shape"
)

// BenchmarkDriftLookup is the recorder's drift detection for one run,
// over the real store holding a profile learned from the seed-000 list
// layout: "same shape" is the common case (the profile in memory judges
// and learns the answer, no store read); "drifted" is a run in the wrapped
// layout, whose drift is novel. The profile learns nothing in either case,
// since learn is never called.
func BenchmarkDriftLookup(b *testing.B) {
	tests := []struct {
		name      string
		body      string
		wantDrift bool // a drift event is returned
	}{
		{"same shape", seedBaselineBody, false},
		{"drifted", seedWrappedBody, true},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			ctx := context.Background()
			store := newTestStore(b)
			clock := newTestClock(alertT0)
			p := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Clock: clock})
			if err := p.Load(ctx); err != nil {
				b.Fatal(err)
			}
			for range shape.ProfileWarmup + 1 {
				clock.Advance(time.Minute)
				process(b, p, pipelineRun(b, "external_search", clock.Now(), seedBaselineBody, ""))
			}
			clock.Advance(time.Minute)
			now := clock.Now()
			r := pipelineRun(b, "external_search", now, tt.body, "")
			run := &recording{r: r, probe: r.Probe, now: now}
			j, err := p.judgeAnswer(ctx, run, answersOf(r, nil)[0])
			run.answers = []judgedAnswer{j}
			switch d := run.decision(); {
			case err != nil:
				b.Fatal(err)
			case j.novel != tt.wantDrift:
				b.Fatalf("drift event = %+v, want one: %t", j.drift, tt.wantDrift)
			case (d.Baseline == seedBaselineFP) != (tt.body != seedBaselineBody):
				b.Fatalf("Decision.Baseline = %q for the %s case", d.Baseline, tt.name)
			}
			store.resetCalls()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.judgeAnswer(ctx, run, answersOf(r, nil)[0]); err != nil {
					b.Fatal(err)
				}
			}
			if n := store.callCount("ShapeProfile") + store.callCount("RecentShapes"); n != 0 {
				b.Fatalf("%d profile reads from the store in the loop, want 0", n)
			}
		})
	}
}
