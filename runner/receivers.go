package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

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
	ctx     context.Context // the loops' parent; nil until start, and after stop
	cancel  context.CancelFunc
	loops   sync.WaitGroup
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

// start runs the receivers' loops until stop; parent's values are kept.
func (s *receiverSet) start(parent context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctx = context.WithoutCancel(parent)
	s.startLoops()
}

// stop ends the loops and waits for them.
func (s *receiverSet) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.mu.RLock()
	sender := s.senders[a.Receiver]
	s.mu.RUnlock()
	if sender == nil {
		if a.Receiver == "" {
			return false, 0, fmt.Errorf("the alert names no receiver")
		}
		return false, 0, fmt.Errorf("receiver %s is not configured any more (a reload removed it)", a.Receiver)
	}
	return sender.Send(ctx, a)
}
