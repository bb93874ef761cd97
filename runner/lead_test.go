package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

// fleetDB is one database shared by a fleet's instances: the real store
// (a SQLite file), the lease table of the elector's tests, and fencing as
// results/postgres does it: a fenced record, or a fenced outbox's
// operation, is refused with results.ErrFenced unless its epoch holds the
// lease, checked and written under the lease table's lock (Postgres's
// FOR SHARE). Each instance sees it through a fleetView.
type fleetDB struct {
	*faultStore
	leases *leaseTable

	mu       sync.Mutex
	cut      map[string]bool // nodes cut off: their lease requests, heartbeats and run writes fail
	noRelase map[string]bool // nodes that die without releasing the lease
	beats    map[string]int
	written  []written // every run record taken, in order
}

// written is a run record the fleet's store took.
type written struct {
	node, probe, op string
	epoch           int64
	handover        bool
	alerts          int
}

func newFleetDB(t *testing.T, clock clockwork.Clock) *fleetDB {
	return &fleetDB{
		faultStore: newTestStore(t),
		leases:     &leaseTable{clock: clock, leases: map[string]results.Lease{}, down: map[string]bool{}},
		cut:        map[string]bool{}, noRelase: map[string]bool{}, beats: map[string]int{},
	}
}

func (db *fleetDB) setCut(node string, cut bool) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.cut[node] = cut
}

func (db *fleetDB) isCut(node string) bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.cut[node]
}

// writes returns the run records taken of probe, from node unless node
// is "".
func (db *fleetDB) writes(probe string, node ...string) []written {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []written
	for _, w := range db.written {
		if w.probe == probe && (len(node) == 0 || w.node == node[0]) {
			out = append(out, w)
		}
	}
	return out
}

// holds reports whether f's epoch holds its lease. lt.mu must be held.
func (db *fleetDB) holdsLocked(f results.Fence) bool {
	return db.leases.leases[f.Location].Epoch == f.Epoch
}

// setHolder makes node the lease's holder under epoch, as another
// instance taking it would.
func (db *fleetDB) setHolder(node string, epoch int64) {
	db.leases.mu.Lock()
	defer db.leases.mu.Unlock()
	db.leases.leases[results.DefaultLocation] = results.Lease{Location: results.DefaultLocation, Holder: node, Epoch: epoch,
		Expires: db.leases.clock.Now().Add(time.Hour)}
}

// fleetView is the fleet's database as one instance sees it.
type fleetView struct {
	*fleetDB
	node string
}

var errCut = errors.New("connection refused")

func (v *fleetView) AcquireLease(ctx context.Context, location, node string, ttl time.Duration) (results.Lease, error) {
	if v.isCut(v.node) {
		return results.Lease{}, errCut
	}
	return v.leases.AcquireLease(ctx, location, node, ttl)
}

func (v *fleetView) ReleaseLease(ctx context.Context, location, node string, epoch int64) error {
	v.mu.Lock()
	dead := v.noRelase[v.node] || v.cut[v.node]
	v.mu.Unlock()
	if dead {
		return errCut
	}
	return v.leases.ReleaseLease(ctx, location, node, epoch)
}

func (v *fleetView) Heartbeat(_ context.Context, n results.FleetNode) error {
	if v.isCut(v.node) {
		return errCut
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.beats[n.Node]++
	return nil
}

func (v *fleetView) AlertStates(ctx context.Context) (map[string]results.AlertState, error) {
	if v.isCut(v.node) {
		return nil, errCut
	}
	return v.faultStore.AlertStates(ctx)
}

func (v *fleetView) RecordRun(ctx context.Context, rec *results.RunRecord) error {
	if v.isCut(v.node) {
		return errCut
	}
	v.leases.mu.Lock()
	defer v.leases.mu.Unlock()
	if rec.Fence.Fenced() && !v.holdsLocked(rec.Fence) {
		return results.ErrFenced
	}
	w := written{node: v.node, probe: rec.Result.Probe, op: rec.Result.OperationID, epoch: rec.Fence.Epoch,
		handover: rec.Handover, alerts: len(rec.Alerts)}
	if rec.Handover {
		// History only, and once: a result already stored is success.
		v.mu.Lock()
		for _, o := range v.written {
			if o.op == w.op {
				v.mu.Unlock()
				return nil
			}
		}
		v.mu.Unlock()
		if err := v.faultStore.RecordRun(ctx, &results.RunRecord{Result: rec.Result}); err != nil {
			return err
		}
	} else {
		// The fence is checked: SQLite, which keeps no lease, takes the
		// record without it (the alerts share rec's, and get their IDs).
		unfenced := *rec
		unfenced.Fence = results.Fence{}
		if err := v.faultStore.RecordRun(ctx, &unfenced); err != nil {
			return err
		}
	}
	v.mu.Lock()
	v.written = append(v.written, w)
	v.mu.Unlock()
	return nil
}

func (v *fleetView) FencedOutbox(f results.Fence) Outbox { return &fencedOutbox{v, f} }

// fencedOutbox is the outbox as the holder of f drains it.
type fencedOutbox struct {
	v *fleetView
	f results.Fence
}

func (o *fencedOutbox) check() error {
	o.v.leases.mu.Lock()
	defer o.v.leases.mu.Unlock()
	if !o.v.holdsLocked(o.f) {
		return results.ErrFenced
	}
	return nil
}

// DueAlerts and NextAlertDue see only the alerts of runs from the fence's
// location, as results/postgres's fenced outbox does.
func (o *fencedOutbox) DueAlerts(ctx context.Context, now time.Time, limit int) ([]results.Alert, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	due, err := o.v.faultStore.DueAlerts(ctx, now, limit)
	if err != nil {
		return nil, err
	}
	var out []results.Alert
	for _, a := range due {
		if o.ofLocation(ctx, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

func (o *fencedOutbox) NextAlertDue(ctx context.Context) (time.Time, bool, error) {
	if err := o.check(); err != nil {
		return time.Time{}, false, err
	}
	if _, ok, err := o.v.faultStore.NextAlertDue(ctx); err != nil || !ok {
		return time.Time{}, false, err
	}
	due, err := o.DueAlerts(ctx, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 1000)
	if err != nil || len(due) == 0 {
		return time.Time{}, false, err
	}
	var next time.Time
	for _, a := range due {
		at := a.NextAttemptAt
		if at.IsZero() {
			at = a.CreatedAt
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next, true, nil
}

// ofLocation reports whether a is an alert of a run from o's location;
// an alert without a stored run goes with the default location.
func (o *fencedOutbox) ofLocation(ctx context.Context, a results.Alert) bool {
	r, err := o.v.faultStore.Result(ctx, a.OperationID)
	if err != nil {
		return o.f.Location == results.DefaultLocation
	}
	return r.RanFrom() == o.f.Location
}

func (o *fencedOutbox) MarkAlertDelivered(ctx context.Context, id int64, at time.Time) error {
	if err := o.check(); err != nil {
		return err
	}
	return o.v.faultStore.MarkAlertDelivered(ctx, id, at)
}

func (o *fencedOutbox) MarkAlertRetry(ctx context.Context, id int64, tries int, next time.Time, lastErr string) error {
	if err := o.check(); err != nil {
		return err
	}
	return o.v.faultStore.MarkAlertRetry(ctx, id, tries, next, lastErr)
}

func (o *fencedOutbox) MarkAlertFailed(ctx context.Context, id int64, tries int, lastErr string) error {
	if err := o.check(); err != nil {
		return err
	}
	return o.v.faultStore.MarkAlertFailed(ctx, id, tries, lastErr)
}

func (o *fencedOutbox) PendingGroup(ctx context.Context, key string) (results.AlertGroup, error) {
	if err := o.check(); err != nil {
		return results.AlertGroup{}, err
	}
	return o.v.faultStore.PendingGroup(ctx, key)
}

var _ FleetStore = (*fleetView)(nil)
var _ Store = (*fleetView)(nil)

// leaderObserver records the SetLeader calls.
type leaderObserver struct {
	nopObserver
	mu    sync.Mutex
	calls []bool
}

func (o *leaderObserver) SetLeader(leading bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, leading)
}

func (o *leaderObserver) get() []bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]bool(nil), o.calls...)
}

// fleetTTL is the tests' lease: a leader renews every 2.4 s (rand 0: the
// period less 20 %), trusts its lease for 8 s; a standby asks every 0.4 s.
const fleetTTL = 10 * time.Second

// fleetTest is a fleet of daemons on one fake clock and one fleetDB.
type fleetTest struct {
	t     *testing.T
	clock *clockwork.FakeClock
	db    *fleetDB
}

func newFleetTest(t *testing.T) *fleetTest {
	clock := clockwork.NewFakeClock()
	return &fleetTest{t: t, clock: clock, db: newFleetDB(t, clock)}
}

// fleetNode is one instance of the fleet.
type fleetNode struct {
	*schedHarness
	name     string
	sender   *schedSender
	observer *leaderObserver
}

// node builds (without running) the instance name of cfg, with a sender
// that takes every alert; opts may adjust its dependencies.
func (ft *fleetTest) node(name string, cfg *checks.Config, opts ...func(*Deps)) *fleetNode {
	t := ft.t
	t.Helper()
	cfg.Fleet = checks.Fleet{Node: name, Lease: fleetTTL}
	logs := &schedLog{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tt := testkit.New(t)
	tt.Attach(name, &logs.Log)
	n := &fleetNode{name: name, sender: &schedSender{}, observer: &leaderObserver{}}
	view := &fleetView{fleetDB: ft.db, node: name}
	deps := Deps{
		Logger: logger, Clock: ft.clock, Rand: func() float64 { return 0 },
		Store: view, GracePeriod: 200 * time.Millisecond, Observer: n.observer,
		Senders:  func(*checks.Config) (Senders, error) { return Senders{"default/slack": n.sender}, nil },
		Delivery: delivererOptions{PollInterval: 20 * time.Millisecond},
		Fleet:    &Fleet{Store: view, TTL: fleetTTL, Version: "test"},
	}
	for _, o := range opts {
		o(&deps)
	}
	d, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	n.schedHarness = &schedHarness{T: tt, clock: ft.clock, start: ft.clock.Now(), store: ft.db.faultStore, logs: logs, d: d}
	return n
}

// waiters waits until n timers are armed on the fleet's clock: one per
// elector, one per scheduled probe.
func (ft *fleetTest) waiters(n int) {
	ft.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), schedWait)
	defer cancel()
	if err := ft.clock.BlockUntilContext(ctx, n); err != nil {
		ft.t.Fatalf("waiting for %d timers: %v", n, err)
	}
}

// step advances the clock by d once n timers are armed, then waits for
// them to be armed again.
func (ft *fleetTest) step(d time.Duration, n int) {
	ft.t.Helper()
	ft.waiters(n)
	ft.clock.Advance(d)
	ft.waiters(n)
}

// leading waits until node's role leads (or not).
func (n *fleetNode) leading(want bool) {
	n.Helper()
	n.eventually(fmt.Sprintf("%s leading=%v", n.name, want), func() bool { return n.d.Role().Leading == want })
}

// failingConfig is a config of one probe, "search", whose provider answers
// 500: its first run fires an alert.
func failingConfig(t *testing.T, url string, interval ...time.Duration) *checks.Config {
	every := 5 * time.Second
	if len(interval) > 0 {
		every = interval[0]
	}
	cfg := schedConfig(4, schedProbe(t, "search", url, every))
	cfg.Notify.On = []string{"unavailable", "contract_error"}
	return cfg
}

// TestFleetElectionStartsRuns: of two instances, the one elected schedules
// the probe, writes its runs fenced by its epoch and delivers the alert;
// the standby runs nothing, sends nothing and heartbeats too. Both report
// their role to the Observer.
func TestFleetElectionStartsRuns(t *testing.T) {
	schedCheckLeaks(t)
	url := jsonBody(500, `{"error":"down"}`)(t)
	ft := newFleetTest(t)
	a := ft.node("a", failingConfig(t, url))
	a.run()
	a.leading(true)
	b := ft.node("b", failingConfig(t, url))
	b.run()
	ft.waiters(3) // two electors, a's probe
	for range 3 {
		a.idle()
		ft.step(5*time.Second, 3)
	}
	a.eventually("the alert sent", func() bool { return len(a.sender.alerts()) == 1 })

	ws := ft.db.writes("search")
	if len(ws) < 2 {
		t.Fatalf("%d runs written, want at least 2", len(ws))
	}
	for _, w := range ws {
		if w.node != "a" || w.epoch != 1 || w.handover {
			t.Errorf("run written %+v, want a's, fenced by epoch 1", w)
		}
	}
	if got := b.sender.alerts(); len(got) != 0 {
		t.Errorf("the standby sent %d alerts", len(got))
	}
	if r := b.d.Role(); r.Leading || r.Epoch != 0 {
		t.Errorf("b's role %+v, want a standby", r)
	}
	if r := a.d.Role(); !r.Leading || r.Epoch != 1 || r.Node != "a" || r.Location != results.DefaultLocation {
		t.Errorf("a's role %+v, want leading under epoch 1", r)
	}
	if got := a.observer.get(); len(got) != 1 || !got[0] {
		t.Errorf("a's SetLeader calls %v, want [true]", got)
	}
	if got := b.observer.get(); len(got) != 0 {
		t.Errorf("b's SetLeader calls %v, want none", got)
	}
	ft.db.mu.Lock()
	beats := map[string]int{"a": ft.db.beats["a"], "b": ft.db.beats["b"]}
	ft.db.mu.Unlock()
	if beats["a"] < 2 || beats["b"] < 2 {
		t.Errorf("heartbeats %v, want several from each node", beats)
	}
}

// TestFleetDepositionStopsRuns: a leader that finds another holder at its
// next renewal stops running probes and delivering, and says so.
func TestFleetDepositionStopsRuns(t *testing.T) {
	schedCheckLeaks(t)
	p := schedServe(t, nil, false)
	ft := newFleetTest(t)
	a := ft.node("a", schedConfig(4, schedProbe(t, "search", p.URL, 5*time.Second)))
	a.run()
	a.leading(true)
	ft.step(5*time.Second, 2)
	a.waitRuns("search", 1)

	ft.db.setHolder("b", 2)
	a.idle()
	ft.waiters(2)
	ft.clock.Advance(3 * time.Second) // a renews and finds b
	a.leading(false)
	ft.waiters(1) // a's probe is unscheduled
	before := p.requests.Load()
	for range 5 {
		a.idle()
		ft.step(5*time.Second, 1)
	}
	if n := p.requests.Load(); n != before {
		t.Errorf("the deposed instance ran the probe %d more times", n-before)
	}
	if got := a.observer.get(); len(got) != 2 || !got[0] || got[1] {
		t.Errorf("SetLeader calls %v, want [true false]", got)
	}
}

// TestFleetFencedRunHandsOverAndStepsDown: a run written under an epoch
// the store no longer grants (a newer leader took the lease while this one
// was paused) is refused, written again as a handover (history, no alert),
// and the instance steps down at once, before its next renewal.
func TestFleetFencedRunHandsOverAndStepsDown(t *testing.T) {
	schedCheckLeaks(t)
	url := jsonBody(500, `{"error":"down"}`)(t)
	ft := newFleetTest(t)
	// The deliverer looks at the outbox once, at its start: its refusal
	// would depose a as well.
	a := ft.node("a", failingConfig(t, url), func(d *Deps) { d.Delivery.PollInterval = time.Hour })
	a.run()
	a.leading(true)
	ft.waiters(2)
	a.eventually("the deliverer's first look", func() bool { return ft.db.callCount("NextAlertDue") > 0 })

	ft.db.setHolder("b", 2) // a does not know yet: its renewal is 2.6 s away
	for len(a.runs("search")) == 0 && ft.clock.Since(a.start) < 2*time.Second {
		ft.clock.Advance(50 * time.Millisecond)
		time.Sleep(5 * time.Millisecond)
	}
	a.waitRuns("search", 1)
	a.leading(false)
	if now := ft.clock.Since(a.start); now >= 2*time.Second {
		t.Fatalf("the clock moved %v: a could have renewed", now)
	}
	ws := ft.db.writes("search")
	if len(ws) != 1 || !ws[0].handover || ws[0].alerts != 0 || ws[0].epoch != 0 {
		t.Fatalf("runs written %+v, want one handover without alerts", ws)
	}
	if st := ft.db.states(); len(st) != 0 {
		t.Errorf("alert states %v, want none: a handover decides nothing", st)
	}
	if recs := a.logs.records("probe run"); len(recs) != 1 || recs[0]["handover"] != true {
		t.Errorf("probe run lines %v, want one saying handover", recs)
	}
	time.Sleep(100 * time.Millisecond)
	if got := a.sender.alerts(); len(got) != 0 {
		t.Errorf("sent %v, want nothing", got)
	}
}

// TestFleetLapseProbesOnWithoutDelivering: a leader cut off from the
// database (its lease and its writes fail) stops trusting its lease
// before it lapses: it runs the probe on into the write queue, but
// delivers nothing, even an alert the outbox offers. When the database
// comes back after the lease lapsed and nobody took it, it writes what it
// queued (no other epoch holds the lease), leads again under a new epoch,
// and delivers.
func TestFleetLapseProbesOnWithoutDelivering(t *testing.T) {
	schedCheckLeaks(t)
	p := schedServe(t, nil, false)
	ft := newFleetTest(t)
	a := ft.node("a", schedConfig(4, schedProbe(t, "search", p.URL, 2*time.Second)))
	a.run()
	a.leading(true)
	ft.step(2*time.Second, 2)
	a.waitRuns("search", 1)

	ft.db.setCut("a", true)
	for a.d.Role().Leading {
		a.idle()
		ft.step(time.Second, 2)
	}
	if r := a.d.Role(); !r.Lapsed || r.Epoch != 1 {
		t.Fatalf("role %+v, want lapsed under epoch 1", r)
	}
	pending := testAlert(ft.clock.Now())
	pending.Probe, pending.Receiver = "other", "default/slack"
	id := ft.db.enqueue(pending)
	requests := p.requests.Load()
	for i := 0; p.requests.Load() < requests+3; i++ {
		if i == 20 {
			t.Fatalf("%d runs in 40 s while lapsed, want 3 every 6 s", p.requests.Load()-requests)
		}
		a.idle()
		ft.step(2*time.Second, 3) // the elector, the probe, the write queue's back-off
	}
	a.idle()
	if n := a.d.Pending(); n < 3 {
		t.Errorf("%d runs queued, want at least 3", n)
	}
	time.Sleep(200 * time.Millisecond) // ten of the deliverer's polls
	if got := a.sender.alerts(); len(got) != 0 {
		t.Fatalf("the lapsed instance sent %v", got)
	}

	ft.db.setCut("a", false)
	a.idle()
	ft.step(2*time.Second, 2)
	a.leading(true)
	if r := a.d.Role(); r.Epoch != 2 {
		t.Errorf("role %+v, want leading under epoch 2: the lease had lapsed", r)
	}
	a.eventually("the outbox's alert delivered", func() bool {
		got := a.sender.alerts()
		return len(got) == 1 && got[0].ID == id
	})
	for i := 0; a.d.Pending() > 0; i++ { // the write queue's back-off: up to 30 s
		if i == 20 {
			t.Fatalf("%d runs still queued 100 s after the database came back", a.d.Pending())
		}
		a.idle()
		ft.step(5*time.Second, 2)
		time.Sleep(5 * time.Millisecond)
	}
	// Nobody took the lease meanwhile: what was queued is written under
	// epoch 1 until the elector renews it, then under epoch 2 (a write of
	// epoch 1 that the store refused in between is a handover). Each once.
	ops := map[string]bool{}
	for _, w := range ft.db.writes("search") {
		if ops[w.op] {
			t.Errorf("run %s written twice", w.op)
		}
		ops[w.op] = true
	}
}

// TestFleetTakeoverAnnouncesOnce: a leader fires a failing probe's alert
// and dies without releasing its lease; the standby, which has read no
// alert state since it started, takes over within the lease and one
// interval of the death, reads the alert states at its election, and does
// not announce the failure again.
func TestFleetTakeoverAnnouncesOnce(t *testing.T) {
	schedCheckLeaks(t)
	url := jsonBody(500, `{"error":"down"}`)(t)
	const interval = time.Second
	ft := newFleetTest(t)
	a := ft.node("a", failingConfig(t, url, interval))
	b := ft.node("b", failingConfig(t, url, interval))
	a.run()
	a.leading(true)
	b.run()
	ft.waiters(3)
	ft.step(interval, 3)
	a.eventually("a's alert sent", func() bool { return len(a.sender.alerts()) == 1 })
	a.idle()

	ft.db.mu.Lock()
	ft.db.noRelase["a"] = true
	ft.db.mu.Unlock()
	died := ft.clock.Now()
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	ft.waiters(1) // b's elector
	for len(ft.db.writes("search", "b")) == 0 {
		if ft.clock.Since(died) > 3*fleetTTL {
			t.Fatalf("no run by b within %v of a's death", 3*fleetTTL)
		}
		b.idle()
		n := 1
		if b.d.Role().Leading {
			n = 2
		}
		ft.step(100*time.Millisecond, n)
		time.Sleep(time.Millisecond) // lets a run of b start
	}
	b.waitRuns("search", 2)
	if took := ft.clock.Since(died); took > fleetTTL+interval {
		t.Errorf("b's first run came %v after a died, want within the lease and one interval (%v)", took, fleetTTL+interval)
	}
	for range 3 {
		b.idle()
		ft.step(interval, 2)
	}
	b.waitRuns("search", 5)
	time.Sleep(100 * time.Millisecond)
	if got := b.sender.alerts(); len(got) != 0 {
		t.Errorf("b sent %d alerts (%v), want none: a announced the failure", len(got), got[0].Kind)
	}
	if r := b.d.Role(); !r.Leading || r.Epoch != 2 {
		t.Errorf("b's role %+v, want leading under epoch 2", r)
	}
}

// TestFleetFencedOutboxStepsDown: a leader whose outbox is refused for a
// newer epoch (the deliverer's next look) stands by at once, without
// waiting for its next renewal: the fake clock does not move.
func TestFleetFencedOutboxStepsDown(t *testing.T) {
	schedCheckLeaks(t)
	p := schedServe(t, nil, false)
	ft := newFleetTest(t)
	a := ft.node("a", schedConfig(4, schedProbe(t, "search", p.URL, time.Hour)))
	a.run()
	a.leading(true)
	ft.db.setHolder("b", 2)
	a.leading(false)
	if moved := ft.clock.Since(a.start); moved != 0 {
		t.Errorf("the clock moved %v", moved)
	}
	if recs := a.logs.records("fleet: standing by"); len(recs) != 1 || !strings.Contains(fmt.Sprint(recs[0]["why"]), "refused") {
		t.Errorf("standing by lines %v, want one saying the store refused the epoch", recs)
	}
}
