package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner/prober"
)

// delivererOptions are a deliverer's dependencies and limits. Every field
// is optional; zero means the default.
type delivererOptions struct {
	Logger *slog.Logger    // nil: discard
	Clock  clockwork.Clock // decides what is due; nil: the real clock
	Rand   func() float64  // in [0,1), for back-off jitter; nil: math/rand/v2
	// MaxTries is how many delivery attempts an alert gets. Default 10.
	MaxTries int
	// BaseDelay and MaxDelay shape the back-off between attempts:
	// full jitter, rand * min(MaxDelay, BaseDelay * 2^n) before retry n+1.
	// Defaults 1s and 5m.
	BaseDelay, MaxDelay time.Duration
	// MaxAge is how long after its creation an alert is still worth
	// delivering; an older one is given up. Default 24h.
	MaxAge time.Duration
	// PollInterval is the longest the deliverer sleeps between looks at
	// the outbox, so that alerts enqueued without a Wake, or by another
	// process, still go out. Default 5s.
	PollInterval time.Duration
	// Observer is told of every delivery and store failure; nil: none.
	Observer Observer
}

// Defaults of delivererOptions.
const (
	DefaultDeliveryMaxTries  = 10
	DefaultDeliveryBaseDelay = time.Second
	DefaultDeliveryMaxDelay  = 5 * time.Minute
	DefaultDeliveryMaxAge    = 24 * time.Hour
	DefaultDeliveryPoll      = 5 * time.Second
)

const (
	// deliveryBatch is how many due alerts one store read fetches.
	deliveryBatch = 16
	// sendTimeout bounds one Send: Slack that hangs must not stall the
	// alerts queued behind it forever.
	sendTimeout = 15 * time.Second
	// shutdownGrace is how long a Send in flight may go on after Run's
	// context ends, so that a message being posted is not cut in half.
	shutdownGrace = 2 * time.Second
	// markTimeout bounds a store write after a Send; it is detached from
	// Run's context so that a message delivered during shutdown is still
	// marked, and not sent again after the restart.
	markTimeout = 5 * time.Second
	// maxRetryAfter caps a receiver's Retry-After. Slack asks for seconds
	// to minutes; an hour is already more than an alert can usefully wait,
	// and sending earlier would only be refused again.
	maxRetryAfter = time.Hour
	// maxLastError bounds, in bytes, the error text stored with an alert.
	maxLastError = 500
)

// deliverer drains the alert outbox: it sends each due alert with the
// Sender, one at a time, and records the result in the store, retrying
// with back-off until the alert is delivered, refused for good, out of
// tries or too old. Delivery is at least once: an alert whose delivery
// could not be recorded may be sent again.
type deliverer struct {
	// pausedUntil holds a receiver's deliveries back after it asked for
	// it (a 429's Retry-After), by receiver key: the limit is the
	// receiver's, not one alert's, so its next alert must wait too, but
	// another receiver's need not. Only Run's goroutine touches it.
	pausedUntil map[string]time.Time
	observer    Observer
	store       Outbox
	sender      Sender
	logger      *slog.Logger
	now         func() time.Time
	rand        func() float64

	maxTries            int
	baseDelay, maxDelay time.Duration
	maxAge              time.Duration
	poll                time.Duration
	sendTimeout, grace  time.Duration // constants, fields so tests can shorten them

	wake chan struct{}

	// unmarked holds alerts the receiver took whose delivery the store
	// failed to record; the next pass records them instead of sending them
	// again. Only Run's goroutine touches it.
	unmarked map[int64]time.Time

	// fenced is called when the outbox refused an operation because a
	// newer leader holds the lease (results.ErrFenced); see use.
	fenced func()

	// grouping returns the grouping of a receiver's route now; the zero
	// Grouping (a group's alerts due at once) for one that does not group.
	grouping func(receiver string) checks.Grouping
	// silentGrouping returns the grouping of a location's location_silent
	// and location_back alerts (results.LocationGroupKey) to a receiver
	// whose route does not group; the decider's deliverer sets it.
	silentGrouping func() checks.Grouping
}

// use makes the deliverer drain o from its next Run on, telling fenced
// (which must not block) of a refusal by a newer leader's epoch: a
// fleet's leader drains the outbox fenced by its term. Call it only while
// Run is not running.
func (d *deliverer) use(o Outbox, fenced func()) {
	d.store, d.fenced = o, fenced
}

// storeFailed reports a failed outbox operation op: counted, and, when the
// outbox refused it for a newer leader, told to fenced.
func (d *deliverer) storeFailed(op string, err error) {
	d.observer.StoreError(op)
	if errors.Is(err, results.ErrFenced) {
		d.fenced()
	}
}

// newDeliverer returns a deliverer that reads the outbox in store and sends
// with sender. Start it with Run.
func newDeliverer(store Outbox, sender Sender, opts delivererOptions) *deliverer {
	d := &deliverer{
		store:          store,
		sender:         sender,
		logger:         opts.Logger,
		observer:       observerOr(opts.Observer),
		rand:           opts.Rand,
		maxTries:       opts.MaxTries,
		baseDelay:      opts.BaseDelay,
		maxDelay:       opts.MaxDelay,
		maxAge:         opts.MaxAge,
		poll:           opts.PollInterval,
		sendTimeout:    sendTimeout,
		grace:          shutdownGrace,
		wake:           make(chan struct{}, 1),
		unmarked:       map[int64]time.Time{},
		pausedUntil:    map[string]time.Time{},
		fenced:         func() {},
		grouping:       func(string) checks.Grouping { return checks.Grouping{} },
		silentGrouping: func() checks.Grouping { return checks.Grouping{} },
	}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	d.now = time.Now
	if opts.Clock != nil {
		d.now = opts.Clock.Now
	}
	if d.rand == nil {
		d.rand = rand.Float64
	}
	if d.maxTries <= 0 {
		d.maxTries = DefaultDeliveryMaxTries
	}
	if d.baseDelay <= 0 {
		d.baseDelay = DefaultDeliveryBaseDelay
	}
	if d.maxDelay <= 0 {
		d.maxDelay = DefaultDeliveryMaxDelay
	}
	if d.maxAge <= 0 {
		d.maxAge = DefaultDeliveryMaxAge
	}
	if d.poll <= 0 {
		d.poll = DefaultDeliveryPoll
	}
	return d
}

// Wake asks Run to look at the outbox now; it is called (as
// RecorderOptions.Wake) once a run that enqueued pending alerts is
// written. It never blocks; wakes that arrive while one waits are merged.
func (d *deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers alerts until ctx ends, then returns promptly: a Send in
// flight gets a short grace to finish, and Run starts no goroutine that
// outlives it. Store errors are logged and retried on the next poll; they
// never end Run. Call Run once: one loop owns the outbox, which is what
// keeps alerts going out one at a time and in order.
func (d *deliverer) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		wait := d.poll
		if d.pass(ctx) {
			wait = d.sleep(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-timer.C:
		}
	}
}

// sleep returns how long Run may wait before the next pass: until the
// earliest pending alert is due, but never longer than the poll interval.
func (d *deliverer) sleep(ctx context.Context) time.Duration {
	// The earliest due alert may be one of a paused receiver, which the
	// pass left: then the end of the first pause is the next thing to do.
	pause := time.Duration(0)
	now := d.now()
	for key, until := range d.pausedUntil {
		switch left := until.Sub(now); {
		case left <= 0:
			delete(d.pausedUntil, key)
		case pause == 0 || left < pause:
			pause = left
		}
	}
	next, ok, err := d.store.NextAlertDue(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.storeFailed("next_alert_due", err)
			d.logger.Error("reading the alert outbox failed", "error", err)
		}
		return d.poll
	}
	if !ok {
		return d.poll
	}
	wait := max(next.Sub(d.now()), 0)
	if pause > 0 && wait < pause {
		wait = pause
	}
	return min(wait, d.poll)
}

// pass delivers every alert due now whose receiver is not paused, and
// reports false when the store
// failed, so that Run waits a full poll interval before it asks again
// rather than spinning on alerts the store cannot mark. Each alert is tried
// at most once per pass, so that a retry due at once (full jitter may draw
// 0) waits for the next pass. Alerts already tried in this pass may still
// be due and come back first, so each read asks for that many more rows, or
// they could fill every batch and starve the alerts behind them.
func (d *deliverer) pass(ctx context.Context) (storeOK bool) {
	tried := map[int64]bool{}
	for ctx.Err() == nil {
		limit := deliveryBatch + len(tried)
		due, err := d.store.DueAlerts(ctx, d.now(), limit)
		if err != nil {
			if ctx.Err() == nil {
				d.storeFailed("due_alerts", err)
				d.logger.Error("reading the alert outbox failed", "error", err)
			}
			return false
		}
		fresh := 0
		for _, a := range due {
			if ctx.Err() != nil {
				return true
			}
			if tried[a.ID] {
				continue
			}
			tried[a.ID] = true
			fresh++
			if a.GroupKey != "" {
				if !d.deliverGroup(ctx, a.GroupKey, tried) {
					return false
				}
				continue
			}
			if d.now().Before(d.pausedUntil[a.Receiver]) {
				// Its receiver asked to wait; the others need not.
				continue
			}
			if !d.deliver(ctx, a) {
				return false
			}
		}
		if len(due) < limit || fresh == 0 {
			return true
		}
	}
	return true
}

// deliver makes one delivery attempt of a and records its result. It
// returns false when the store could not record it.
func (d *deliverer) deliver(ctx context.Context, a results.Alert) bool {
	if at, ok := d.unmarked[a.ID]; ok {
		return d.markDelivered(ctx, a, a.DeliveryTries, at)
	}
	now := d.now()
	if age := now.Sub(a.CreatedAt); age > d.maxAge {
		return d.giveUp(ctx, a, a.DeliveryTries, fmt.Sprintf("gave up: alert is %s old, older than the %s limit", age.Round(time.Second), d.maxAge))
	}
	if a.DeliveryTries >= d.maxTries {
		return d.giveUp(ctx, a, a.DeliveryTries, fmt.Sprintf("gave up after %d tries", a.DeliveryTries))
	}

	tries := a.DeliveryTries + 1
	retry, retryAfter, err := d.send(ctx, a)
	if retryAfter > 0 {
		d.pausedUntil[a.Receiver] = d.now().Add(min(retryAfter, maxRetryAfter))
	}
	switch {
	case err == nil:
		return d.markDelivered(ctx, a, tries, d.now())
	case ctx.Err() != nil:
		// Shutdown cut the attempt short: that says nothing about the
		// receiver, so it is not counted, and the alert stays pending for
		// the next start.
		d.logger.Info("alert delivery interrupted by shutdown", d.attrs(a, tries, err)...)
		return true
	case !retry:
		return d.giveUp(ctx, a, tries, "not retryable: "+err.Error())
	case tries >= d.maxTries:
		return d.giveUp(ctx, a, tries, fmt.Sprintf("gave up after %d tries: %v", tries, err))
	}
	return d.markRetry(ctx, a, tries, d.now().Add(d.backoff(tries, retryAfter)), err)
}

// send calls the Sender with a timeout of its own and the shutdown grace,
// and turns a panic in it into a failure that is not retried: one bad
// alert must not take down the daemon or block the outbox forever.
func (d *deliverer) send(ctx context.Context, a results.Alert) (retry bool, retryAfter time.Duration, err error) {
	return d.guard(ctx, func(sctx context.Context) (bool, time.Duration, error) { return d.sender.Send(sctx, a) })
}

// guard runs one call of the Sender, send or sendGroup, as send says.
func (d *deliverer) guard(ctx context.Context, call func(context.Context) (bool, time.Duration, error)) (retry bool, retryAfter time.Duration, err error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.sendTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(d.grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-sctx.Done():
		}
	})
	// stop alone would leave a started grace goroutine waiting for sctx;
	// the deferred cancel above, which runs after it, releases it.
	defer stop()
	defer func() {
		if v := recover(); v != nil {
			retry, retryAfter, err = false, 0, fmt.Errorf("sender panicked: %v", v)
		}
	}()
	return call(sctx)
}

// markRetry records a failed attempt of a, to be tried again at next.
func (d *deliverer) markRetry(ctx context.Context, a results.Alert, tries int, next time.Time, err error) bool {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
	defer cancel()
	d.observer.AlertFailed(&a, false)
	if merr := d.store.MarkAlertRetry(mctx, a.ID, tries, next, results.ClipBytes(err.Error(), maxLastError)); merr != nil {
		d.storeFailed("mark_alert_retry", merr)
		d.logger.Error("recording an alert retry failed", append(d.attrs(a, tries, err), "store_error", merr)...)
		return false
	}
	attrs := d.attrs(a, tries, err)
	if a.GroupKey != "" {
		attrs = append(attrs, "group", a.GroupKey)
	}
	d.logger.Warn("alert delivery failed; will retry", append(attrs, "next_attempt_at", next)...)
	return true
}

// backoff returns the wait before the retry that follows try number tries
// (1 after the first attempt): full jitter, so that alerts queued during an
// outage do not hit a recovering Slack in lockstep, and never less than the
// receiver's Retry-After, capped at maxRetryAfter.
func (d *deliverer) backoff(tries int, retryAfter time.Duration) time.Duration {
	wait := time.Duration(d.rand() * float64(prober.BackoffCeiling(d.baseDelay, d.maxDelay, tries-1)))
	if retryAfter > 0 {
		wait = max(wait, min(retryAfter, maxRetryAfter))
	}
	return wait
}

func (d *deliverer) markDelivered(ctx context.Context, a results.Alert, tries int, at time.Time) bool {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
	defer cancel()
	if err := d.store.MarkAlertDelivered(mctx, a.ID, at); err != nil {
		d.storeFailed("mark_alert_delivered", err)
		d.unmarked[a.ID] = at
		d.logger.Error("recording an alert delivery failed; it will be recorded, not sent, again",
			append(d.attrs(a, tries, nil), "store_error", err)...)
		return false
	}
	delete(d.unmarked, a.ID)
	d.observer.AlertDelivered(&a)
	d.logger.Info("alert delivered", d.attrs(a, tries, nil)...)
	return true
}

func (d *deliverer) giveUp(ctx context.Context, a results.Alert, tries int, why string) bool {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
	defer cancel()
	d.observer.AlertFailed(&a, true)
	if err := d.store.MarkAlertFailed(mctx, a.ID, tries, results.ClipBytes(why, maxLastError)); err != nil {
		d.storeFailed("mark_alert_failed", err)
		d.logger.Error("recording an alert delivery failure failed",
			append(d.attrs(a, tries, errors.New(why)), "store_error", err)...)
		return false
	}
	d.logger.Error("alert delivery failed for good", d.attrs(a, tries, errors.New(why))...)
	return true
}

// attrs are the log attributes of a delivery result. The error comes from
// the Sender, whose contract keeps secrets out of it.
func (d *deliverer) attrs(a results.Alert, tries int, err error) []any {
	attrs := []any{"probe", a.Probe, "kind", a.Kind, "alert_id", a.ID, "tries", tries}
	if a.Receiver != "" {
		attrs = append(attrs, "receiver", a.Receiver)
	}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	return attrs
}
