package runner

import (
	"context"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/results"
)

// LeaseStore grants the leadership of a location (results/postgres keeps
// it in a row with its epoch; expiry is judged by the store's clock, so
// that instances with skewed clocks agree on it).
type LeaseStore interface {
	// AcquireLease makes node the holder of location's lease until ttl
	// from now when the lease is free, lapsed or already node's, and
	// returns the lease as it stands afterwards, whoever holds it. Taking
	// the lease from another holder, or after it lapsed, raises its epoch.
	AcquireLease(ctx context.Context, location, node string, ttl time.Duration) (results.Lease, error)
	// ReleaseLease ends node's lease of epoch now, so that a standby need
	// not wait for it to lapse; a lease held under another epoch is left.
	ReleaseLease(ctx context.Context, location, node string, epoch int64) error
}

// An elector keeps one node's claim on its location's lease, River's
// elector being the model: it renews every third of the TTL (jittered),
// trusts a lease only until a margin before the TTL counted from when it
// asked for it (by its own monotonic clock, not the store's), and steps
// down as soon as it cannot vouch for it: another holds it, or renewals
// failed until that point. A standby asks as often, and takes the lease
// once it has lapsed.
type elector struct {
	store    LeaseStore
	location string
	node     string
	ttl      time.Duration
	clock    clockwork.Clock
	rand     func() float64
	logger   *slog.Logger

	// elected is called when the node starts leading under epoch, and
	// deposed when it stops; both on the elector's goroutine, in turn.
	elected func(epoch int64)
	deposed func()
}

// trustMargin is how long before its TTL runs out a leader stops trusting
// a lease it could not renew: a fifth of the TTL, so that it stops writing
// before a standby may take over, whatever the two clocks' drift.
func (e *elector) trustMargin() time.Duration { return e.ttl / 5 }

// period is the wait between two requests: a third of the TTL, ±20 %.
func (e *elector) period() time.Duration {
	third := e.ttl / 3
	return third + time.Duration((e.rand()*0.4-0.2)*float64(third))
}

// run claims the lease until ctx ends, then releases it if it holds it.
func (e *elector) run(ctx context.Context) {
	var (
		leading    bool
		epoch      int64
		trustUntil time.Time
	)
	stepDown := func(why string) {
		if leading {
			leading = false
			e.logger.Warn("fleet: stepping down", "node", e.node, "location", e.location, "epoch", epoch, "why", why)
			e.deposed()
		}
	}
	defer func() {
		if leading {
			release, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.ttl/3)
			if err := e.store.ReleaseLease(release, e.location, e.node, epoch); err != nil {
				e.logger.Warn("fleet: releasing the lease failed; it lapses on its own", "node", e.node, "epoch", epoch, "err", err)
			}
			cancel()
			stepDown("stopping")
		}
	}()
	for {
		asked := e.clock.Now()
		limit := e.ttl / 3
		if leading {
			// A renewal that hangs must not outlast the trust it renews.
			limit = min(limit, max(trustUntil.Sub(asked), time.Millisecond))
		}
		call, cancel := context.WithTimeout(ctx, limit)
		lease, err := e.store.AcquireLease(call, e.location, e.node, e.ttl)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			e.logger.Warn("fleet: asking for the lease failed", "node", e.node, "location", e.location, "err", err)
			if leading && !e.clock.Now().Before(trustUntil) {
				stepDown("the lease could not be renewed before it would lapse")
			}
		case lease.Holder != e.node:
			stepDown("another node holds the lease: " + lease.Holder)
		default:
			trustUntil = asked.Add(e.ttl - e.trustMargin())
			if !leading || lease.Epoch != epoch {
				stepDown("the lease changed epoch")
				leading, epoch = true, lease.Epoch
				e.logger.Info("fleet: leading", "node", e.node, "location", e.location, "epoch", epoch)
				e.elected(epoch)
			}
		}
		wait := e.period()
		if leading {
			// Wake in time to step down even while a renewal hangs.
			wait = min(wait, max(trustUntil.Sub(e.clock.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return
		case <-e.clock.After(wait):
		}
		if leading && !e.clock.Now().Before(trustUntil) {
			stepDown("the lease could not be renewed before it would lapse")
		}
	}
}
