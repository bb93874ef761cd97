package runner

import (
	"context"
	"sync"
)

// limiter bounds the runs in flight: one per probe (claim), and
// max_concurrency across all probes (acquire). Unlike a buffered channel it
// can be resized while runs hold slots, and it hands slots out first come,
// first served, so that no probe starves behind faster ones. The zero value
// admits nothing; use newLimiter.
type limiter struct {
	mu      sync.Mutex
	limit   int
	active  int
	waiters []chan struct{} // closed when granted a slot
	// claimed holds the names of the probes with a run going, waiting for
	// a slot included; it holds nothing for a probe between runs.
	claimed map[string]struct{}
}

func newLimiter(n int) *limiter { return &limiter{limit: max(n, 1)} }

// claim marks a run of probe as going and reports true, or reports false
// when one already is; unclaim ends it.
func (l *limiter) claim(probe string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.claimed[probe]; ok {
		return false
	}
	if l.claimed == nil {
		l.claimed = map[string]struct{}{}
	}
	l.claimed[probe] = struct{}{}
	return true
}

// unclaim ends a run claim admitted.
func (l *limiter) unclaim(probe string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.claimed, probe)
}

// acquire waits for a slot until ctx ends, and returns ctx's error if it
// ends first; a slot granted at the same moment is given back.
func (l *limiter) acquire(ctx context.Context) error {
	l.mu.Lock()
	if l.active < l.limit && len(l.waiters) == 0 {
		l.active++
		l.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()

	select {
	case <-w:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-w:
		l.active--
		l.grant()
	default:
		for i, x := range l.waiters {
			if x == w {
				l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
				break
			}
		}
	}
	return ctx.Err()
}

// release gives a slot back.
func (l *limiter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active--
	l.grant()
}

// resize sets the number of slots. Shrinking never interrupts a run: the
// extra holders finish, and no slot is handed out until active is below the
// new limit.
func (l *limiter) resize(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = max(n, 1)
	l.grant()
}

// grant hands free slots to waiters, oldest first. l.mu must be held.
func (l *limiter) grant() {
	for l.active < l.limit && len(l.waiters) > 0 {
		w := l.waiters[0]
		l.waiters[0] = nil
		l.waiters = l.waiters[1:]
		l.active++
		close(w)
	}
}

// counts returns the slots in use, the runs waiting and the limit.
func (l *limiter) counts() (active, waiting, limit int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active, len(l.waiters), l.limit
}
