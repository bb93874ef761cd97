package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// TestDeliverByReceiver: each alert goes to the Sender of its receiver
// key and to no other; one whose receiver a reload removed fails for good,
// saying so.
func TestDeliverByReceiver(t *testing.T) {
	verifyNoLeaks(t)
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	slack, hook := &fakeSender{}, &fakeSender{}
	set := &receiverSet{}
	set.set(Senders{"default/slack": slack, "routes[0]/webhook": hook})

	ids := map[string]int64{}
	for _, key := range []string{"default/slack", "routes[0]/webhook", "routes[1]/alertmanager", ""} {
		a := testAlert(alertT0)
		a.Receiver = key
		ids[key] = store.enqueue(a)
	}
	d := newDeliverer(store, set, delivererOptions{Clock: clock})
	stop := runDeliverer(t, d, time.Second)
	waitFor(t, "every alert delivered or failed", func() bool {
		for _, id := range ids {
			if store.storedAlert(id).State == results.DeliveryPending {
				return false
			}
		}
		return true
	})
	stop()

	if got := slack.calls; len(got) != 1 || got[0].Receiver != "default/slack" {
		t.Errorf("Slack got %+v, want the default/slack alert only", got)
	}
	if got := hook.calls; len(got) != 1 || got[0].Receiver != "routes[0]/webhook" {
		t.Errorf("webhook got %+v, want the routes[0]/webhook alert only", got)
	}
	for key, want := range map[string]string{
		"routes[1]/alertmanager": "not retryable: receiver routes[1]/alertmanager is not configured any more (a reload removed it)",
		"":                       "not retryable: the alert names no receiver",
	} {
		a := store.storedAlert(ids[key])
		if a.State != results.DeliveryFailed || a.LastError != want || a.DeliveryTries != 1 {
			t.Errorf("alert for %q: %s after %d tries, last_error %q; want failed after 1, %q", key, a.State, a.DeliveryTries, a.LastError, want)
		}
	}
}

// loopSender is a Sender with a Run loop that counts its lives.
type loopSender struct {
	fakeSender
	mu            sync.Mutex
	running, runs int
	overlapped    bool
}

func (l *loopSender) Run(ctx context.Context) {
	l.mu.Lock()
	l.running++
	l.runs++
	l.overlapped = l.overlapped || l.running > 1
	l.mu.Unlock()
	<-ctx.Done()
	l.mu.Lock()
	l.running--
	l.mu.Unlock()
}

func (l *loopSender) state() (running, runs int, overlapped bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running, l.runs, l.overlapped
}

// TestReceiverLoops: a receiver's loop runs from start to stop, a reload
// ends the old set's loops before the new ones start, and nothing is left
// running at the end.
func TestReceiverLoops(t *testing.T) {
	verifyNoLeaks(t)
	first, second := &loopSender{}, &loopSender{}
	set := &receiverSet{}
	set.set(Senders{"routes[0]/alertmanager": first, "default/slack": &fakeSender{}})
	if running, _, _ := first.state(); running != 0 {
		t.Fatalf("a loop runs before start")
	}
	set.start(context.Background())
	waitFor(t, "the first loop", func() bool { r, _, _ := first.state(); return r == 1 })

	set.set(Senders{"routes[0]/alertmanager": second})
	if running, runs, _ := first.state(); running != 0 || runs != 1 {
		t.Errorf("after a reload the old loop: running %d, runs %d; want ended, once", running, runs)
	}
	waitFor(t, "the second loop", func() bool { r, _, _ := second.state(); return r == 1 })

	set.stop()
	for i, l := range []*loopSender{first, second} {
		if running, runs, overlapped := l.state(); running != 0 || runs != 1 || overlapped {
			t.Errorf("loop %d after stop: running %d, runs %d, overlapped %v; want ended, once, never twice at once", i, running, runs, overlapped)
		}
	}
	// After stop, a reload starts nothing.
	third := &loopSender{}
	set.set(Senders{"routes[0]/alertmanager": third})
	time.Sleep(10 * time.Millisecond)
	if _, runs, _ := third.state(); runs != 0 {
		t.Errorf("a reload after stop started a loop")
	}
}

// TestReceiverLoopsSharedStarts: a location's leader and the fleet's
// decider both start the loops: they run once while either has not
// stopped, and end with the last stop.
func TestReceiverLoopsSharedStarts(t *testing.T) {
	verifyNoLeaks(t)
	l := &loopSender{}
	set := &receiverSet{}
	set.set(Senders{"routes[0]/alertmanager": l})
	set.start(context.Background()) // leading a location
	set.start(context.Background()) // deciding
	waitFor(t, "the loop", func() bool { r, _, _ := l.state(); return r == 1 })
	set.stop() // no longer leading the location
	time.Sleep(10 * time.Millisecond)
	if running, runs, overlapped := l.state(); running != 1 || runs != 1 || overlapped {
		t.Errorf("after one of two stops: running %d, runs %d, overlapped %v; want running, once", running, runs, overlapped)
	}
	set.stop()
	if running, _, _ := l.state(); running != 0 {
		t.Errorf("after both stops the loop runs")
	}
}

// TestDaemonRunsReceiverLoops: the daemon runs its receivers' loops while
// it runs, replaces them on a reload and ends them when it stops.
func TestDaemonRunsReceiverLoops(t *testing.T) {
	schedCheckLeaks(t)
	first, second := &loopSender{}, &loopSender{}
	h := schedNew(t, schedConfig(2), func(o *Deps) {
		o.Senders = func(cfg *checks.Config) (Senders, error) {
			if cfg.MaxConcurrency == 2 {
				return Senders{"routes[0]/alertmanager": first}, nil
			}
			return Senders{"routes[0]/alertmanager": second}, nil
		}
	})
	if r, _, _ := first.state(); r != 0 {
		h.Fatalf("a receiver loop runs before the daemon does")
	}
	h.run()
	h.eventually("the loop running", func() bool { r, _, _ := first.state(); return r == 1 })
	if err := h.d.Reload(schedConfig(3)); err != nil {
		h.Fatal(err)
	}
	h.eventually("the new loop running", func() bool { r, _, _ := second.state(); return r == 1 })
	if r, _, _ := first.state(); r != 0 {
		h.Errorf("the replaced receiver's loop still runs")
	}
	if err := h.stop(); err != nil {
		h.Fatal(err)
	}
	if r, _, _ := second.state(); r != 0 {
		h.Errorf("a receiver loop outlives the daemon")
	}
}
