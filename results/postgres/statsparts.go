package postgres

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolpulse/toolpulse/results"
)

// statsParts is how many parts Stats cuts the probes into. Its
// transaction and a helper's, on a second connection, take the parts in
// turn, so that the server reads on two cores and Go parses one part's
// answer while the server reads the next. Two transactions, not more, so
// that Stats never holds more than two of the pool's connections; the
// helper's sees the same snapshot (pg_export_snapshot), so the answer is
// the one a single transaction gives.
const statsParts = 8

// statsWork is Stats' reading of the sums and last runs of every probe,
// cut into parts that transactions claim in turn.
type statsWork struct {
	all    []results.ProbeStats
	found  []bool // the probe has a run in the window
	window statsWindow
	lo, hi time.Time
	// locations are the locations whose runs count; nil: every one.
	locations []string
	mu        sync.Mutex
	next      int // the first part not claimed
	helped    int // parts the helper claimed
	bounds    []int
	claimed   chan struct{} // closed once every part is claimed
}

func newStatsWork(all []results.ProbeStats, since, until time.Time, locations []string) *statsWork {
	w := &statsWork{all: all, found: make([]bool, len(all)), window: splitWindow(since, until),
		lo: minTime, hi: maxTime, claimed: make(chan struct{})}
	if len(locations) > 0 {
		w.locations = locations
	}
	if !since.IsZero() {
		w.lo = storedTime(since)
	}
	if !until.IsZero() {
		w.hi = storedTime(until)
	}
	parts := min(statsParts, len(all))
	for k := range parts + 1 {
		w.bounds = append(w.bounds, k*len(all)/parts)
	}
	return w
}

// claim returns the probes of the next part not yet claimed, as the
// range [from, to) of all; ok is false when there is none.
func (w *statsWork) claim(helper bool) (from, to int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next == len(w.bounds)-1 {
		return 0, 0, false
	}
	from, to = w.bounds[w.next], w.bounds[w.next+1]
	w.next++
	if helper {
		w.helped++
	}
	if w.next == len(w.bounds)-1 {
		close(w.claimed)
	}
	return from, to, true
}

// read reads parts in tx until none is left; helper says whose tx it is.
func (w *statsWork) read(ctx context.Context, tx pgx.Tx, helper bool) error {
	// The sums' plan costs enough for a server with JIT on (Debian's
	// default) to compile it, some 40 ms a call, for loops over small
	// index ranges that compiled code does not speed up. A generic plan,
	// made once per connection, serves every part: the plan is the same
	// index ranges whatever the window, and a command's new connections
	// would otherwise plan each part anew (10-25 ms of server CPU a
	// process on the 10 M database).
	if _, err := tx.Exec(ctx, "SET LOCAL jit = off; SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		return err
	}
	for {
		from, to, ok := w.claim(helper)
		if !ok {
			return nil
		}
		if err := w.readPart(ctx, tx, from, to); err != nil {
			return err
		}
	}
}

// readPart reads the sums and last runs of the probes [from, to) of all,
// in one round trip.
func (w *statsWork) readPart(ctx context.Context, tx pgx.Tx, from, to int) (err error) {
	ps := w.all[from:to]
	probes := make([]string, len(ps))
	for i, p := range ps {
		probes[i] = p.Probe
	}
	var b pgx.Batch
	sums := append([]any{probes}, w.window.args()...)
	if w.locations == nil {
		b.Queue(statsSums, sums...)
		b.Queue(statsLatest, probes, w.lo, w.hi, outcomeNames, minTime)
	} else {
		b.Queue(statsSumsIn, append(sums, w.locations)...)
		b.Queue(statsLatestIn, probes, w.lo, w.hi, outcomeNames, minTime, w.locations)
	}
	br := tx.SendBatch(ctx, &b)
	defer func() {
		if cerr := br.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	rows, err := br.Query()
	if err != nil {
		return err
	}
	if err := summarize(rows, ps); err != nil {
		return err
	}
	if rows, err = br.Query(); err != nil {
		return fmt.Errorf("last run: %w", err)
	}
	return latest(rows, ps, w.found[from:to])
}

// statsTestHook, when a test sets it, runs in Stats twice once the
// snapshot is exported: before the helper is given the work, and after,
// before Stats reads a part itself.
var statsTestHook func(w *statsWork, started bool)

// outcomeNames is results.Outcomes as statsLatest takes them.
var outcomeNames = func() []string {
	out := make([]string, len(results.Outcomes))
	for i, o := range results.Outcomes {
		out[i] = string(o)
	}
	return out
}()

// statsHelper is the second transaction of a Stats call. It gets a
// connection while Stats reads the probe names, then, once start gives it
// the work and the snapshot to see, claims parts alongside Stats. It gives
// up without a word when it cannot take part before every part is claimed
// (no connection free, a snapshot it cannot import): Stats then reads
// every part itself.
type statsHelper struct {
	ctx     context.Context    // its queries
	cancel  context.CancelFunc // ends them: Stats has failed
	waiting context.Context    // its waits before it has claimed a part
	give    context.CancelFunc // ends them: nothing is left to claim
	begin   chan helperStart
	done    chan struct{}
	err     error // what went wrong reading the parts it claimed
}

type helperStart struct {
	work     *statsWork
	snapshot string
}

func (s *Store) startStatsHelper(ctx context.Context) *statsHelper {
	h := &statsHelper{begin: make(chan helperStart, 1), done: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancel(ctx)
	h.waiting, h.give = context.WithCancel(h.ctx)
	go func() {
		defer close(h.done)
		h.err = h.run(s.pool)
	}()
	return h
}

// start hands the helper the work and the snapshot it is to see. Once
// every part is claimed, a helper still waiting to take part stops.
func (h *statsHelper) start(w *statsWork, snapshot string) {
	h.begin <- helperStart{w, snapshot}
	go func() {
		select {
		case <-w.claimed:
			h.give()
		case <-h.waiting.Done():
		}
	}()
}

// wait waits for the helper to finish the parts it claimed, and returns
// what went wrong reading them.
func (h *statsHelper) wait() error {
	<-h.done
	return h.err
}

// stop ends the helper, whatever it is doing, and waits for it.
func (h *statsHelper) stop() {
	h.cancel()
	<-h.done
}

// snapshotID is what pg_export_snapshot returns, checked before it is
// quoted into SET TRANSACTION SNAPSHOT, which takes no parameters.
var snapshotID = regexp.MustCompile(`^[0-9A-F]+(-[0-9A-F]+)+$`)

// run is the helper's goroutine.
func (h *statsHelper) run(pool *pgxpool.Pool) error {
	defer h.give()
	conn, err := pool.Acquire(h.waiting)
	if err != nil {
		return nil
	}
	defer conn.Release()
	var start helperStart
	select {
	case start = <-h.begin:
	case <-h.waiting.Done():
		return nil
	}
	if !snapshotID.MatchString(start.snapshot) {
		return nil
	}
	tx, err := conn.BeginTx(h.waiting, snapshot)
	if err != nil {
		return nil
	}
	defer tx.Rollback(context.WithoutCancel(h.ctx))
	if _, err := tx.Exec(h.waiting, "SET TRANSACTION SNAPSHOT '"+start.snapshot+"'"); err != nil {
		return nil
	}
	if err := start.work.read(h.ctx, tx, true); err != nil {
		return fmt.Errorf("second transaction: %w", err)
	}
	return nil
}
