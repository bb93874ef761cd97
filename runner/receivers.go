package runner

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// Senders are the alert receivers a config asks for, by receiver key
// ("default/slack", "routes[0]/webhook"; see checks.Route.Receivers).
type Senders map[string]Sender

// Looper is a Sender with work of its own between alerts (the
// Alertmanager receiver re-posts firing alerts). The daemon runs it while
// the Sender is configured: Run must return soon after ctx ends.
type Looper interface {
	Run(ctx context.Context)
}

// receiverSet lets a reload change the receivers without restarting the
// deliverer, and runs the Loopers among them: from start until stop, each
// set's loops end (and are waited for) when a reload replaces them.
type receiverSet struct {
	mu      sync.RWMutex
	senders Senders
	groups  map[string]checks.Grouping // by receiver key; see groupings
	ctx     context.Context            // the loops' parent; nil until start, and after stop
	cancel  context.CancelFunc
	loops   sync.WaitGroup
	users   int // starts not yet stopped
}

// set replaces the receivers. The loops of the old ones are ended and
// waited for before those of the new ones start, so that two re-post
// loops of one Alertmanager never overlap.
func (s *receiverSet) set(senders Senders) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLoops()
	s.senders = senders
	if s.ctx != nil {
		s.startLoops()
	}
}

// setGroups replaces the receivers' groupings, those of n's routes.
func (s *receiverSet) setGroups(n checks.Notify) {
	groups := groupings(n)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups = groups
}

// grouping returns the grouping of receiver's route; the zero Grouping
// when it does not group.
func (s *receiverSet) grouping(receiver string) checks.Grouping {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.groups[receiver]
}

// start runs the receivers' loops until stop; parent's values are kept.
// Each start needs its stop: the loops run while any caller that started
// them (a location's leader delivering, the fleet's decider) has not
// stopped, once whatever the number of callers.
func (s *receiverSet) start(parent context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users++; s.users > 1 {
		return
	}
	s.ctx = context.WithoutCancel(parent)
	s.startLoops()
}

// stop ends the loops and waits for them, once every start has its stop.
func (s *receiverSet) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users--; s.users > 0 {
		return
	}
	s.users = 0
	s.stopLoops()
	s.ctx = nil
}

// startLoops and stopLoops need s.mu held.
func (s *receiverSet) startLoops() {
	ctx, cancel := context.WithCancel(s.ctx)
	s.cancel = cancel
	for _, sender := range s.senders {
		if l, ok := sender.(Looper); ok {
			s.loops.Go(func() { l.Run(ctx) })
		}
	}
}

func (s *receiverSet) stopLoops() {
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	s.loops.Wait()
}

// Send implements Sender: it sends a to the receiver its key names. An
// alert whose receiver is not configured (a reload removed it) is refused
// for good: the deliverer records it as failed, with the reason.
func (s *receiverSet) Send(ctx context.Context, a results.Alert) (bool, time.Duration, error) {
	sender, err := s.receiver(a.Receiver)
	if err != nil {
		return false, 0, err
	}
	return sender.Send(ctx, a)
}

// SendGroup implements Sender as Send does, for the receiver of g's
// alerts.
func (s *receiverSet) SendGroup(ctx context.Context, g results.AlertGroup) (bool, time.Duration, error) {
	if len(g.Alerts) == 0 {
		return false, 0, fmt.Errorf("group %s has no alert", g.Key)
	}
	sender, err := s.receiver(g.Alerts[0].Receiver)
	if err != nil {
		return false, 0, err
	}
	return sender.SendGroup(ctx, g)
}

// receiver returns the Sender of key, or why there is none.
func (s *receiverSet) receiver(key string) (Sender, error) {
	s.mu.RLock()
	sender := s.senders[key]
	s.mu.RUnlock()
	if sender == nil {
		if key == "" {
			return nil, fmt.Errorf("the alert names no receiver")
		}
		return nil, fmt.Errorf("receiver %s is not configured any more (a reload removed it)", key)
	}
	return sender, nil
}

// Restorer is a receiver that keeps telling what is active (Alertmanager
// re-posts it): Restore takes what the store says it was last told is
// active, as if it had sent it.
type Restorer interface {
	Restore(ctx context.Context, alerts []results.Alert) error
}

// ActiveAlerts is the store's record of what each receiver was last told
// is active: each firing probe's newest firing, reminder, update or
// flapping alert, and each silent location's location_silent alert,
// delivered to receiver (results/postgres's FiringAlerts).
type ActiveAlerts interface {
	FiringAlerts(ctx context.Context, receiver string) ([]results.Alert, error)
}

// restoreTimeout bounds restore's reads: a slow store must not hold up a
// decider's term.
const restoreTimeout = 5 * time.Second

// restore gives every Restorer receiver what store says it was last told
// is active. A new decider calls it as its term begins: what the last
// decider told Alertmanager (a probe firing, a location silent) stays
// active through the failover, re-posted by this instance, instead of
// ending within Alertmanager's TTL. A read that fails is logged and the
// next receiver is tried.
func (s *receiverSet) restore(ctx context.Context, store ActiveAlerts, logger *slog.Logger) {
	s.mu.RLock()
	senders := maps.Clone(s.senders)
	s.mu.RUnlock()
	for _, key := range slices.Sorted(maps.Keys(senders)) {
		r, ok := senders[key].(Restorer)
		if !ok {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, restoreTimeout)
		alerts, err := store.FiringAlerts(rctx, key)
		if err == nil {
			err = r.Restore(rctx, alerts)
		}
		cancel()
		if err != nil {
			logger.Warn("could not read what this receiver was told is active; it ends within its TTL unless alerted again",
				"receiver", key, "error", err)
			continue
		}
		if len(alerts) > 0 {
			logger.Info("re-posting the alerts still active", "receiver", key, "alerts", len(alerts))
		}
	}
}
