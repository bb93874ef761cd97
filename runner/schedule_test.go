package runner

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
)

func TestSchedJitterOffset(t *testing.T) {
	const j = 2 * time.Second
	tests := map[string]struct {
		r      float64
		jitter time.Duration
		want   time.Duration
	}{
		"zero":             {0, j, 0},
		"half":             {0.5, j, time.Second},
		"almost one":       {0.9999995, j, 1999999000},
		"one is clamped":   {1, j, j - 1},
		"above one":        {7, j, j - 1},
		"negative":         {-0.5, j, 0},
		"NaN":              {math.NaN(), j, 0},
		"no jitter":        {0.5, 0, 0},
		"no jitter, rand1": {1, 0, 0},
	}
	for name, tt := range tests {
		if got := jitterOffset(tt.r, tt.jitter); got != tt.want {
			t.Errorf("%s: jitterOffset(%v, %v) = %v, want %v", name, tt.r, tt.jitter, got, tt.want)
		}
	}
}

func TestSchedJobID(t *testing.T) {
	a, b := jobID("external_search"), jobID("external_search")
	if a != b {
		t.Errorf("jobID is not stable: %v, %v", a, b)
	}
	if a == jobID("external_search2") {
		t.Error("two probe names share a job id")
	}
	if a.Version() != 5 {
		t.Errorf("job id version %d, want 5 (SHA-1, name based)", a.Version())
	}
}

func TestSchedNextRun(t *testing.T) {
	t0 := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		t, now, want time.Time
	}{
		"ahead":             {t0.Add(time.Minute), t0, t0.Add(time.Minute)},
		"now":               {t0, t0, t0.Add(time.Minute)},
		"one skipped tick":  {t0, t0.Add(30 * time.Second), t0.Add(time.Minute)},
		"two skipped ticks": {t0, t0.Add(time.Minute), t0.Add(2 * time.Minute)},
		"unknown":           {time.Time{}, t0, time.Time{}},
	}
	for name, tt := range tests {
		if got := nextRun(tt.t, time.Minute, tt.now); !got.Equal(tt.want) {
			t.Errorf("%s: nextRun = %v, want %v", name, got, tt.want)
		}
	}
}

// TestCatchUpFirstRun checks the rule that tells a first run gocron
// pushed a whole interval apart from one still waiting and one that
// already fired, on a real gocron scheduler. A start in the past
// (WithStartDateTimePast) is pushed exactly as one the clock overtook
// before gocron armed it.
func TestCatchUpFirstRun(t *testing.T) {
	s, err := gocron.NewScheduler()
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { _ = s.Shutdown() })

	newJob := func(t *testing.T, start gocron.StartAtOption) (gocron.Job, *atomic.Bool, *atomic.Int32) {
		t.Helper()
		fired, runs := new(atomic.Bool), new(atomic.Int32)
		j, err := s.NewJob(gocron.DurationJob(time.Hour), gocron.NewTask(func() { runs.Add(1) }),
			gocron.WithStartAt(start),
			gocron.WithEventListeners(gocron.BeforeJobRuns(func(uuid.UUID, string) { fired.Store(true) })))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.RemoveJob(j.ID()) })
		return j, fired, runs
	}

	t.Run("pushed", func(t *testing.T) {
		start := time.Now().Add(-time.Second)
		j, fired, runs := newJob(t, gocron.WithStartDateTimePast(start))
		if next, _ := j.NextRun(); !next.After(start) {
			t.Fatalf("next run %v is not past the start %v: gocron did not push it", next, start)
		}
		if err := catchUpFirstRun(j, start, fired); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the pushed first run made up", func() bool { return runs.Load() == 1 })
		if next, _ := j.NextRun(); next.Sub(start) != time.Hour {
			t.Errorf("next run %v after the start, want the interval: the phase is kept", next.Sub(start))
		}
	})
	t.Run("still waiting", func(t *testing.T) {
		start := time.Now().Add(time.Minute)
		j, fired, runs := newJob(t, gocron.WithStartDateTime(start))
		if err := catchUpFirstRun(j, start, fired); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if n := runs.Load(); n != 0 {
			t.Errorf("%d runs, want none before the start", n)
		}
	})
	t.Run("already fired", func(t *testing.T) {
		start := time.Now().Add(20 * time.Millisecond)
		j, fired, runs := newJob(t, gocron.WithStartDateTime(start))
		waitFor(t, "the first run fired", func() bool { return runs.Load() == 1 })
		waitFor(t, "the job re-armed", func() bool { next, _ := j.NextRun(); return next.After(start) })
		if err := catchUpFirstRun(j, start, fired); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if n := runs.Load(); n != 1 {
			t.Errorf("%d runs, want the one that fired: a fired run is not made up", n)
		}
	})
}
