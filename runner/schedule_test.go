package runner

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"

	"github.com/toolpulse/toolpulse/checks"
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

// TestStartTick sizes the grid of first runs from the probes' runs per
// second and the concurrency slots.
func TestStartTick(t *testing.T) {
	probes := func(n int, interval time.Duration) []*checks.Probe {
		out := make([]*checks.Probe, n)
		for i := range out {
			out[i] = &checks.Probe{Interval: interval}
		}
		return out
	}
	tests := map[string]struct {
		probes []*checks.Probe
		slots  int
		want   time.Duration
	}{
		"100 @1s, 64 slots: 32 runs a tick":    {probes(100, time.Second), 64, 200 * time.Millisecond},
		"100 @1s, 200 slots: 50 runs a tick":   {probes(100, time.Second), 200, 500 * time.Millisecond},
		"1,000 @1s":                            {probes(1000, time.Second), 64, 20 * time.Millisecond},
		"100 @10s":                             {probes(100, 10*time.Second), 64, time.Second},
		"10,000 @1m":                           {probes(10000, time.Minute), 64, 100 * time.Millisecond},
		"100 @1s, 4 slots: two runs a tick":    {probes(100, time.Second), 4, 20 * time.Millisecond},
		"10 @10s: under two runs a second":     {probes(10, 10*time.Second), 64, 0},
		"100,000 @1s: shorter than every size": {probes(100000, time.Second), 64, 0},
		"none":                                 {nil, 64, 0},
	}
	for name, tt := range tests {
		if got := startTick(tt.probes, tt.slots); got != tt.want {
			t.Errorf("%s: startTick = %v, want %v", name, got, tt.want)
		}
	}
}

// TestFirstRun keeps every first run within [minStartLead, jitter) of now
// and puts it on the tick's grid whenever a tick fits there.
func TestFirstRun(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 300_000_000, time.UTC) // 300 ms past a second
	const jitter = 2 * time.Second
	tests := map[string]struct {
		offset, tick time.Duration
		want         time.Duration // after now
	}{
		"no tick":                     {offset: 250 * time.Millisecond, want: 250 * time.Millisecond},
		"rounded up":                  {offset: 250 * time.Millisecond, tick: 100 * time.Millisecond, want: 300 * time.Millisecond},
		"on the grid already":         {offset: 200 * time.Millisecond, tick: 100 * time.Millisecond, want: 200 * time.Millisecond},
		"up leaves the window: down":  {offset: 1950 * time.Millisecond, tick: time.Second, want: 1700 * time.Millisecond},
		"below the lead: up":          {offset: 0, tick: 100 * time.Millisecond, want: 100 * time.Millisecond},
		"a second tick":               {offset: 0, tick: time.Second, want: 700 * time.Millisecond},
		"last tick before the window": {offset: 1699 * time.Millisecond, tick: time.Second, want: 1700 * time.Millisecond},
		"just after the last tick":    {offset: 1701 * time.Millisecond, tick: time.Second, want: 1700 * time.Millisecond},
		"lead applies without a tick": {offset: 0, want: minStartLead},
		"tick longer than the window": {offset: 100 * time.Millisecond, tick: 10 * time.Second, want: 100 * time.Millisecond},
	}
	for name, tt := range tests {
		got := firstRun(now, tt.offset, jitter, tt.tick).Sub(now)
		if got != tt.want {
			t.Errorf("%s: first run %v after now, want %v", name, got, tt.want)
		}
		if got < minStartLead || got >= jitter {
			t.Errorf("%s: first run %v after now, outside [%v, %v)", name, got, minStartLead, jitter)
		}
	}
}

// TestDaemonFirstRunsOnTicks schedules 100 probes every 10s, 10 runs a
// second: their first runs fall on a one-second grid, each within its
// jitter window, so that the daemon wakes for groups of runs.
func TestDaemonFirstRunsOnTicks(t *testing.T) {
	schedCheckLeaks(t)
	prov := schedServe(t, nil, false)
	probes := make([]*checks.Probe, 100)
	for i := range probes {
		probes[i] = schedProbe(t, fmt.Sprintf("probe_%03d", i), prov.URL, 10*time.Second)
	}
	var n atomic.Int64
	h := schedNew(t, schedConfig(64, probes...), func(o *Deps) {
		o.Rand = func() float64 { return math.Mod(float64(n.Add(1))*0.618, 1) }
	})
	h.run()
	jobs := h.armAll(len(probes))
	starts := map[time.Time]int{}
	for _, p := range probes {
		next := h.probeStatus(p.Name).NextRun
		if off := next.Sub(h.start); off < minStartLead || off >= p.Jitter {
			t.Errorf("%s: first run %v after the start, outside [%v, %v)", p.Name, off, minStartLead, p.Jitter)
		}
		if !next.Truncate(time.Second).Equal(next) {
			t.Errorf("%s: first run at %v, not on the one-second grid", p.Name, next)
		}
		starts[next]++
	}
	if len(starts) > 2 {
		t.Errorf("first runs at %d instants, want the two ticks of the jitter window: %v", len(starts), starts)
	}
	// The probes of a tick share its job.
	if jobs != len(starts) {
		t.Errorf("%d gocron jobs for first runs at %d instants, want one job per instant", jobs, len(starts))
	}
}
