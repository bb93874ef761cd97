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
// elector being the model: a leader renews every third of the TTL
// (jittered), trusts a lease only until a margin before the TTL counted
// from when it asked for it (by its own monotonic clock, not the store's),
// and stops trusting it as soon as it cannot vouch for it. It tells two
// ends of a term apart: deposed, another node holds the lease (or the node
// stops); lapsed, renewals failed until the trust ran out, and nobody is
// known to hold it instead. A standby asks every twentieth of the TTL, so
// that it takes a lapsed lease at most that long after it lapses, and
// takes it once it has lapsed. Every node, leader or standby, sends a
// heartbeat about every third of the TTL.
type elector struct {
	store    LeaseStore
	location string
	node     string
	ttl      time.Duration
	clock    clockwork.Clock
	rand     func() float64
	logger   *slog.Logger

	// elected is called when the node starts leading under epoch (again,
	// after a lapse, or under a new epoch), lapsed when a leader stops
	// trusting its lease, deposed when it finds another holder or stops;
	// all on the elector's goroutine, in turn, and they must not block.
	elected func(epoch int64)
	lapsed  func()
	deposed func()
	// beat sends the node's heartbeat; nil: none. Its error is only
	// logged: a heartbeat is for the fleet's view, not for leadership.
	beat func(ctx context.Context) error
}

// trustMargin is how long before its TTL runs out a leader stops trusting
// a lease it could not renew: a fifth of the TTL, so that it stops writing
// before a standby may take over, whatever the two clocks' drift.
func (e *elector) trustMargin() time.Duration { return e.ttl / 5 }

// period is the wait between two requests, ±20 %: a third of the TTL for
// a leader, a twentieth for a standby (which decides the takeover's delay
// after the lease lapses).
func (e *elector) period(leading bool) time.Duration {
	base := e.ttl / 3
	if !leading {
		base = e.ttl / 20
	}
	return base + time.Duration((e.rand()*0.4-0.2)*float64(base))
}

// run claims the lease until ctx ends, then releases it if it holds it.
func (e *elector) run(ctx context.Context) {
	var (
		leading    bool // elected, and trusting the lease
		held       bool // leading, or lapsed: epoch was the node's last
		epoch      int64
		trustUntil time.Time
		beatAt     time.Time // the last heartbeat; zero: none yet
		failing    int       // requests failed in a row
	)
	lapse := func() {
		if leading {
			leading = false
			e.lapsed()
		}
	}
	depose := func() {
		if leading || held {
			leading, held = false, false
			e.deposed()
		}
	}
	defer func() {
		if leading || held {
			release, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.ttl/3)
			if err := e.store.ReleaseLease(release, e.location, e.node, epoch); err != nil {
				e.logger.Warn("fleet: releasing the lease failed; it lapses on its own", "node", e.node, "epoch", epoch, "error", err)
			}
			cancel()
			depose()
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
		if err == nil && failing > 0 {
			e.logger.Info("fleet: the lease's store answers again", "node", e.node, "location", e.location, "failed_requests", failing)
			failing = 0
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			// Once per outage: a standby asks many times a second.
			if failing++; failing == 1 {
				e.logger.Warn("fleet: asking for the lease failed; asking again", "node", e.node, "location", e.location, "error", err)
			}
			if leading && !e.clock.Now().Before(trustUntil) {
				lapse()
			}
		case lease.Holder != e.node:
			depose()
		default:
			trustUntil = asked.Add(e.ttl - e.trustMargin())
			if !leading || lease.Epoch != epoch {
				leading, held, epoch = true, true, lease.Epoch
				e.elected(epoch)
			}
		}
		if e.beat != nil && (beatAt.IsZero() || e.clock.Since(beatAt) >= e.ttl/4) {
			beatAt = e.clock.Now()
			bctx, cancel := context.WithTimeout(ctx, e.ttl/3)
			if err := e.beat(bctx); err != nil && ctx.Err() == nil {
				e.logger.Debug("fleet: heartbeat failed", "node", e.node, "error", err)
			}
			cancel()
		}
		wait := e.period(leading)
		if leading {
			// Wake in time to stop trusting the lease even while a
			// renewal hangs.
			wait = min(wait, max(trustUntil.Sub(e.clock.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return
		case <-e.clock.After(wait):
		}
		if leading && !e.clock.Now().Before(trustUntil) {
			lapse()
		}
	}
}
