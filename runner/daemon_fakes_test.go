package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

// The daemon tests' helpers. Every name starts with sched so that they
// cannot clash with the recorder's and outbox's test helpers.

// schedWait bounds the daemon tests' waits for a reaction: a run after a
// tick of a loopback provider that answers at once, a write after the
// store recovered. Such a reaction takes milliseconds of CPU; the bound is
// generous on purpose, for a machine whose every core is busy with other
// tests, and only decides how long a broken test takes to fail. Waits
// whose length follows from what they wait for use waitWithin.
const schedWait = 20 * time.Second

// schedSkew is how far past a scheduled instant the tests advance the fake
// clock. gocron re-arms a job from the clock's current time; if the job's
// completion reaches its scheduler loop before the rescheduling does, and
// the clock stands exactly on the instant just run, the job is re-armed
// for that very instant and runs twice. A real clock never stands still
// (the next run is then computed correctly); a fake one must be nudged.
const schedSkew = time.Millisecond

// waitFor polls cond until it holds, or fails the test saying what it
// waited for.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitUntil(t, what, cond, nil)
}

// waitUntil polls cond until it holds, or fails the test after schedWait,
// saying what it waited for and, when saw is not nil, what it saw last.
func waitUntil(t testing.TB, what string, cond func() bool, saw func() string) {
	t.Helper()
	waitWithin(t, schedWait, what, cond, saw)
}

// waitWithin is waitUntil with a bound of its own, for a wait whose length
// follows from what it waits for (a fleet of runs, each bounded by its
// budget) rather than from a reaction to a tick.
func waitWithin(t testing.TB, within time.Duration, what string, cond func() bool, saw func() string) {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			msg := fmt.Sprintf("timed out after %v waiting for %s", within, what)
			if saw != nil {
				msg += "; saw " + saw()
			}
			t.Fatal(msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// schedCheckLeaks fails t if goroutines started during the test are still
// running once every cleanup registered after it has run (servers closed,
// daemon stopped). Call it first. Goroutines alive at the start (earlier
// tests' idle connections) are not this test's leaks.
func schedCheckLeaks(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
}

// schedLog collects a JSON slog stream; safe for concurrent use. It is
// shown, cut to its last lines, when the test fails.
type schedLog struct{ testkit.Log }

// records returns every logged record with message msg.
func (l *schedLog) records(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// schedGauge counts requests in flight across providers and the most seen
// at once.
type schedGauge struct {
	mu        sync.Mutex
	now, peak int
}

func (g *schedGauge) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now++
	g.peak = max(g.peak, g.now)
}

func (g *schedGauge) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now--
}

func (g *schedGauge) get() (now, peak int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now, g.peak
}

// schedProvider is a loopback provider answering the seed-000 list.
type schedProvider struct {
	URL      string
	requests atomic.Int32
	gauge    *schedGauge // requests in flight here (and wherever else it is shared)
	release  func()      // opens the gate; idempotent
}

// schedServe starts a provider. With gated, each request waits until
// release is called (or the client gives up); gauge may be shared between
// providers, and a nil one gets a gauge of its own.
func schedServe(t *testing.T, gauge *schedGauge, gated bool) *schedProvider {
	t.Helper()
	if gauge == nil {
		gauge = &schedGauge{}
	}
	gate := make(chan struct{})
	var once sync.Once
	p := &schedProvider{gauge: gauge, release: func() { once.Do(func() { close(gate) }) }}
	if !gated {
		p.release()
	}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		gauge.enter()
		defer gauge.exit()
		io.Copy(io.Discard, r.Body)
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, bodyOriginalList)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(p.release) // runs first: a handler blocked on the gate would hold Close up
	p.URL = s.URL
	return p
}

// schedProbe is a probe of url run every interval with a 2s jitter
// window. One attempt with a long timeout, so that a gated provider holds
// the run for as long as the test wants.
func schedProbe(t *testing.T, name, url string, interval time.Duration) *checks.Probe {
	p := testProbe(t, url)
	p.Name = name
	p.Interval = interval
	p.Jitter = 2 * time.Second
	p.Steps[0].Timeout = time.Minute
	p.Steps[0].Retries = checks.Retries{MaxAttempts: 1, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Budget: time.Minute}
	return p
}

// schedConfig is a config of probes with maxConcurrency slots.
func schedConfig(maxConcurrency int, probes ...*checks.Probe) *checks.Config {
	return &checks.Config{
		MaxConcurrency: maxConcurrency,
		Notify:         checks.Notify{FailureThreshold: 1, RepeatInterval: time.Hour, SendResolved: true, Slack: testSlack},
		Probes:         probes,
	}
}

// schedHarness is a daemon on a fake clock with a real Executor and
// Recorder over an in-memory store.
type schedHarness struct {
	*testkit.T
	clock *clockwork.FakeClock
	start time.Time // the fake clock when the harness was built
	store *faultStore
	logs  *schedLog
	d     *Daemon

	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// schedClock is the fake clock of the daemons under test. It starts
// minStartLead before a whole second, so that a first run at minStartLead
// (Rand 0) is on the grid of every start tick, where a fleet of probes
// schedules it.
func schedClock() *clockwork.FakeClock {
	return clockwork.NewFakeClockAt(time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC).Add(-minStartLead))
}

// schedNew builds a daemon for cfg; opts may adjust its dependencies (the
// defaults: a fake clock, Rand 0, a 200ms grace period, no receiver).
func schedNew(t *testing.T, cfg *checks.Config, opts func(*Deps)) *schedHarness {
	t.Helper()
	logs := &schedLog{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tt := testkit.New(t)
	tt.Attach("daemon", &logs.Log)
	h := &schedHarness{T: tt, clock: schedClock(), store: newTestStore(t), logs: logs}
	h.start = h.clock.Now()
	o := Deps{
		Logger:      logger,
		Clock:       h.clock,
		Rand:        func() float64 { return 0 },
		Store:       h.store,
		GracePeriod: 200 * time.Millisecond,
	}
	if opts != nil {
		opts(&o)
	}
	d, err := New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	h.d = d
	return h
}

// run starts Run; the test's cleanup stops it.
func (h *schedHarness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.d.Run(ctx) }()
	h.Cleanup(func() {
		if !h.stopped {
			if err := h.stop(); err != nil {
				h.Errorf("Run: %v", err)
			}
		}
	})
}

// stop ends Run's context and returns what Run returned.
func (h *schedHarness) stop() error {
	h.Helper()
	h.stopped = true
	h.cancel()
	select {
	case err := <-h.done:
		return err
	case <-time.After(schedWait):
		h.Fatal("Run did not return after its context ended")
		return nil
	}
}

// tick waits until jobs timers are armed, then advances the clock by d.
func (h *schedHarness) tick(jobs int, d time.Duration) {
	h.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), schedWait)
	defer cancel()
	if err := h.clock.BlockUntilContext(ctx, jobs); err != nil {
		h.Fatalf("waiting for %d armed jobs: %v", jobs, err)
	}
	h.clock.Advance(d)
}

// runs returns the recorded runs of probe, in order.
func (h *schedHarness) runs(probe string) []results.Result {
	all, _, _, _ := h.store.snapshot()
	var out []results.Result
	for _, r := range all {
		if r.Probe == probe {
			out = append(out, r)
		}
	}
	return out
}

// waitRuns waits until probe has n recorded runs, and the last of them
// has ended (see idle), and returns them.
func (h *schedHarness) waitRuns(probe string, n int) []results.Result {
	h.Helper()
	h.eventually(fmt.Sprintf("%d %s runs recorded and ended", n, probe), func() bool {
		return len(h.runs(probe)) >= n && !h.going(probe)
	})
	return h.runs(probe)
}

// going reports whether a run of probe is going, waiting for a slot
// included.
func (h *schedHarness) going(probe string) bool {
	l := h.d.limit
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.claimed[probe]
	return ok
}

// idle waits until no run is going. A run is recorded, logged and counted
// a moment before its task ends and gives its probe's claim back; a tick
// in that moment finds the probe still running and is skipped, as an
// overlap would be. So a test that ticks after seeing a run finish waits
// for idle first, or the tick it means for the next run can be lost.
func (h *schedHarness) idle() {
	h.Helper()
	h.eventually("every run to end", func() bool {
		l := h.d.limit
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.claimed) == 0
	})
}

// eventually polls cond until it holds, or fails the test with what it
// waited for and the daemon's state as it last saw it.
func (h *schedHarness) eventually(what string, cond func() bool) {
	h.Helper()
	waitUntil(h.T, what, cond, h.state)
}

// state describes the daemon for a failure message: the runs recorded
// per probe, the runs going and the write queue.
func (h *schedHarness) state() string {
	all, _, _, _ := h.store.snapshot()
	perProbe := map[string]int{}
	for _, r := range all {
		perProbe[r.Probe]++
	}
	st := h.status()
	var going []string
	for _, p := range st.Probes {
		if p.Running {
			going = append(going, p.Name)
		}
	}
	return fmt.Sprintf("runs recorded %v, runs going %v (%d in flight, %d waiting for a slot), %d results pending, %d probe run lines logged",
		perProbe, going, st.InFlight, st.Waiting, st.Pending, len(h.logs.records("probe run")))
}

// daemonStatus is what the tests read of a daemon's insides.
type daemonStatus struct {
	State          string
	Scheduled      int // probes with a job
	MaxConcurrency int
	InFlight       int // runs holding a concurrency slot
	Waiting        int // runs waiting for a slot
	Pending        int // results waiting to be written
	Probes         []probeStatus
}

// probeStatus is one scheduled probe in a daemonStatus.
type probeStatus struct {
	Name string
	// NextRun is the next scheduled run on the daemon's clock; zero when
	// the scheduler is not running.
	NextRun time.Time
	Running bool // a run is going, waiting for a slot included
	// LastOutcome is how the probe's last recorded run ended.
	LastOutcome results.Outcome
}

// status reads the daemon's state, its probes sorted by name.
func (h *schedHarness) status() daemonStatus {
	d := h.d
	d.mu.Lock()
	st := daemonStatus{State: d.state.String(), Scheduled: len(d.probes)}
	intervals := map[string]time.Duration{}
	for name, p := range d.probes {
		st.Probes = append(st.Probes, probeStatus{Name: name, Running: h.going(name)})
		intervals[name] = p.Interval
	}
	s, state := d.sched, d.state
	d.mu.Unlock()
	st.InFlight, st.Waiting, st.MaxConcurrency = d.limit.counts()
	st.Pending = d.Pending()
	slices.SortFunc(st.Probes, func(a, b probeStatus) int { return strings.Compare(a.Name, b.Name) })
	all, _, _, _ := h.store.snapshot()
	for _, r := range all {
		for i := range st.Probes {
			if st.Probes[i].Name == r.Probe {
				st.Probes[i].LastOutcome = r.Outcome
			}
		}
	}
	if state == stateRunning {
		next := map[string]time.Time{} // by job name
		for _, j := range s.Jobs() {
			if t, err := j.NextRun(); err == nil {
				next[j.Name()] = t
			}
		}
		d.jobsMu.Lock()
		job := map[string]string{} // probe name → its group's job name
		for name, sp := range d.scheduled {
			job[name] = sp.group.key.name()
		}
		d.jobsMu.Unlock()
		now := d.clock.Now()
		for i := range st.Probes {
			name := st.Probes[i].Name
			st.Probes[i].NextRun = nextRun(next[job[name]], intervals[name], now)
		}
	}
	return st
}

// armAll waits until the daemon has scheduled probes probes and every
// job is armed, and returns how many jobs there are: one per group of
// probes that share a start tick (see jobGroup).
func (h *schedHarness) armAll(probes int) int {
	h.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), schedWait)
	defer cancel()
	jobs, err := waitArmed(ctx, h.d, h.clock, probes)
	if err != nil {
		h.Fatalf("waiting for %d probes' jobs to be armed: %v", probes, err)
	}
	return jobs
}

// waitArmed waits until d has scheduled probes probes and every job is
// armed on clock, and returns how many jobs there are.
func waitArmed(ctx context.Context, d *Daemon, clock *clockwork.FakeClock, probes int) (jobs int, err error) {
	for {
		d.jobsMu.Lock()
		n := len(d.scheduled)
		d.jobsMu.Unlock()
		if n == probes {
			break
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%d of %d probes scheduled: %w", n, probes, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	d.mu.Lock()
	jobs = len(d.sched.Jobs())
	d.mu.Unlock()
	return jobs, clock.BlockUntilContext(ctx, jobs)
}

// nextRun is the first run of a job strictly after now, given one of its
// scheduled runs t. gocron's NextRun reports the oldest entry of its queue,
// and a tick skipped because the probe was still running stays in it, in
// the past, until a run completes.
func nextRun(t time.Time, interval time.Duration, now time.Time) time.Time {
	if t.IsZero() || interval <= 0 || t.After(now) {
		return t
	}
	return t.Add((now.Sub(t)/interval + 1) * interval)
}

// probeStatus returns the status of probe, failing the test without one.
func (h *schedHarness) probeStatus(name string) probeStatus {
	h.Helper()
	for _, p := range h.status().Probes {
		if p.Name == name {
			return p
		}
	}
	h.Fatalf("no status for probe %s", name)
	return probeStatus{}
}

// schedSender is a Sender that accepts every alert.
type schedSender struct {
	mu   sync.Mutex
	sent []results.Alert
}

func (s *schedSender) Send(_ context.Context, a results.Alert) (bool, time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, a)
	return false, 0, nil
}

func (s *schedSender) SendGroup(_ context.Context, g results.AlertGroup) (bool, time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, g.Alerts...)
	return false, 0, nil
}

func (s *schedSender) alerts() []results.Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]results.Alert(nil), s.sent...)
}

// schedPanicHandler is a slog handler that panics on the records it is
// told to, and passes the rest on.
type schedPanicHandler struct {
	slog.Handler
	panics func(slog.Record) bool
}

func (h schedPanicHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.panics(r) {
		panic("log handler exploded on " + r.Message)
	}
	return h.Handler.Handle(ctx, r)
}

func (h schedPanicHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return schedPanicHandler{h.Handler.WithAttrs(as), h.panics}
}

func (h schedPanicHandler) WithGroup(name string) slog.Handler {
	return schedPanicHandler{h.Handler.WithGroup(name), h.panics}
}
