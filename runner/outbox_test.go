package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

// verifyNoLeaks fails the test if a goroutine started after the call is
// still running when the test and its cleanups are done (after a short
// grace for goroutines on their way out). Goroutines alive at the start
// (other tests' leftovers) do not count. Cleanups run last registered
// first, so a store the test opens after the call (newTestStore) is
// closed, and its goroutines gone, before the check.
func verifyNoLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(testkit.NoLeaks(t))
}

// fakeSender is a Sender that records every alert it is given and answers
// with reply (nil: success). With block set it instead waits for its
// context, or for release when that is not nil.
type fakeSender struct {
	mu      sync.Mutex
	calls   []results.Alert
	reply   func(n int, a results.Alert) (bool, time.Duration, error) // n counts calls from 1
	block   bool
	release chan struct{}
	ctxErrs []error // the context's error when a blocked Send returned

	groups     []results.AlertGroup
	groupReply func(n int, g results.AlertGroup) (bool, time.Duration, error)
}

func (s *fakeSender) Send(ctx context.Context, a results.Alert) (bool, time.Duration, error) {
	s.mu.Lock()
	s.calls = append(s.calls, a)
	n, reply, block, release := len(s.calls), s.reply, s.block, s.release
	s.mu.Unlock()
	if block {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.ctxErrs = append(s.ctxErrs, ctx.Err())
			s.mu.Unlock()
			return true, 0, fmt.Errorf("posting to slack: %w", ctx.Err())
		case <-release:
			return false, 0, nil
		}
	}
	if reply != nil {
		return reply(n, a)
	}
	return false, 0, nil
}

// SendGroup records g, and answers with groupReply (nil: success).
func (s *fakeSender) SendGroup(_ context.Context, g results.AlertGroup) (bool, time.Duration, error) {
	s.mu.Lock()
	s.groups = append(s.groups, g)
	n, reply := len(s.groups), s.groupReply
	s.mu.Unlock()
	if reply != nil {
		return reply(n, g)
	}
	return false, 0, nil
}

func (s *fakeSender) sentGroups() []results.AlertGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.groups)
}

func (s *fakeSender) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func (s *fakeSender) waitCalls(t testing.TB, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d Send calls", n), func() bool { return s.callCount() >= n })
}

// runDeliverer starts d.Run and returns a stop that cancels it and waits
// for it to return, failing the test if that takes longer than limit.
func runDeliverer(t *testing.T, d *deliverer, limit time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	return func() {
		t.Helper()
		cancel()
		select {
		case <-done:
		case <-time.After(limit):
			t.Fatalf("Run did not return within %v of its context ending", limit)
		}
	}
}

func testAlert(at time.Time) results.Alert {
	return results.Alert{Kind: results.AlertFiring, Probe: "search", CreatedAt: at, NextAttemptAt: at,
		OperationID: "op-1", Outcome: results.ContractError, Code: results.CodeRuleError}
}

func retryable(msg string) func(int, results.Alert) (bool, time.Duration, error) {
	return func(int, results.Alert) (bool, time.Duration, error) { return true, 0, errors.New(msg) }
}

func fixedRand(v float64) func() float64 { return func() float64 { return v } }

func TestDeliverSuccess(t *testing.T) {
	verifyNoLeaks(t)
	var logs bytes.Buffer
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	sender := &fakeSender{}
	id := store.enqueue(testAlert(alertT0))
	d := newDeliverer(store, sender, delivererOptions{Clock: clock, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	stop := runDeliverer(t, d, time.Second)
	waitFor(t, "the alert delivered", func() bool { return store.storedAlert(id).State == results.DeliveryDelivered })
	stop()

	if a := store.storedAlert(id); !a.DeliveredAt.Equal(alertT0) {
		t.Errorf("DeliveredAt = %v, want %v", a.DeliveredAt, alertT0)
	}
	if n := sender.callCount(); n != 1 {
		t.Errorf("Send called %d times, want 1", n)
	}
	var line map[string]any
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, `"alert delivered"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]any{"probe": "search", "kind": "firing", "alert_id": float64(id), "tries": float64(1)}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("'alert delivered' log %s = %v, want %v (log: %s)", k, line[k], v, logs.String())
		}
	}
}

func TestDeliverRetryBackoff(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	sender := &fakeSender{reply: retryable("slack: 503 Service Unavailable")}
	d := newDeliverer(store, sender, delivererOptions{Clock: clock, Rand: fixedRand(0.5),
		BaseDelay: time.Second, MaxDelay: 5 * time.Second})
	id := store.enqueue(testAlert(alertT0))
	ctx := context.Background()

	// rand * min(MaxDelay, BaseDelay * 2^n) before retry n+1.
	waits := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 2500 * time.Millisecond, 2500 * time.Millisecond}
	for i, wait := range waits {
		d.pass(ctx)
		a := store.storedAlert(id)
		if a.State != results.DeliveryPending || a.DeliveryTries != i+1 || a.LastError != "slack: 503 Service Unavailable" {
			t.Fatalf("after try %d: state %s, tries %d, last error %q", i+1, a.State, a.DeliveryTries, a.LastError)
		}
		if got := a.NextAttemptAt.Sub(clock.Now()); got != wait {
			t.Fatalf("after try %d: next attempt in %v, want %v", i+1, got, wait)
		}
		clock.Advance(wait - time.Nanosecond)
		d.pass(ctx)
		if n := sender.callCount(); n != i+1 {
			t.Fatalf("Send called %d times before the retry was due, want %d", n, i+1)
		}
		clock.Advance(time.Nanosecond)
	}
}

func TestDeliverRetryAfter(t *testing.T) {
	cases := []struct {
		name       string
		rand       float64
		triesDone  int
		retryAfter time.Duration
		want       time.Duration
	}{
		{"no Retry-After: full jitter", 0.25, 0, 0, 250 * time.Millisecond},
		{"jitter may draw zero", 0, 3, 0, 0},
		{"Retry-After longer than the jitter wins", 0.5, 0, 30 * time.Second, 30 * time.Second},
		{"jitter longer than Retry-After wins", 0.5, 3, time.Second, 4 * time.Second},
		{"Retry-After beyond MaxDelay is honoured", 0.5, 0, 20 * time.Minute, 20 * time.Minute},
		{"Retry-After is capped at an hour", 0.5, 0, 3 * time.Hour, time.Hour},
		{"MaxDelay caps the jitter", 0.5, 40, 0, 150 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := newTestStore(t)
			clock := newTestClock(alertT0)
			sender := &fakeSender{reply: func(int, results.Alert) (bool, time.Duration, error) {
				return true, c.retryAfter, errors.New("slack: rate limited")
			}}
			d := newDeliverer(store, sender, delivererOptions{Clock: clock, Rand: fixedRand(c.rand), MaxTries: 100})
			a := testAlert(alertT0)
			a.DeliveryTries = c.triesDone
			id := store.enqueue(a)
			d.pass(context.Background())
			got := store.storedAlert(id)
			if got.State != results.DeliveryPending || got.DeliveryTries != c.triesDone+1 {
				t.Fatalf("state %s, tries %d; want pending, %d", got.State, got.DeliveryTries, c.triesDone+1)
			}
			if wait := got.NextAttemptAt.Sub(alertT0); wait != c.want {
				t.Errorf("next attempt in %v, want %v", wait, c.want)
			}
		})
	}
}

func TestDeliverPermanentFailure(t *testing.T) {
	store := newTestStore(t)
	sender := &fakeSender{reply: func(int, results.Alert) (bool, time.Duration, error) {
		return false, 0, errors.New("slack: invalid_blocks")
	}}
	d := newDeliverer(store, sender, delivererOptions{Clock: newTestClock(alertT0)})
	id := store.enqueue(testAlert(alertT0))
	d.pass(context.Background())
	d.pass(context.Background())
	a := store.storedAlert(id)
	if a.State != results.DeliveryFailed || a.DeliveryTries != 1 || !strings.Contains(a.LastError, "invalid_blocks") {
		t.Errorf("alert after a refusal: state %s, tries %d, error %q; want failed, 1, the reason", a.State, a.DeliveryTries, a.LastError)
	}
	if n := sender.callCount(); n != 1 {
		t.Errorf("Send called %d times for an alert refused for good", n)
	}
}

func TestDeliverMaxTries(t *testing.T) {
	store := newTestStore(t)
	sender := &fakeSender{reply: retryable("slack: 500")}
	d := newDeliverer(store, sender, delivererOptions{Clock: newTestClock(alertT0), Rand: fixedRand(0), MaxTries: 3})
	id := store.enqueue(testAlert(alertT0))
	for range 5 {
		d.pass(context.Background())
	}
	a := store.storedAlert(id)
	if a.State != results.DeliveryFailed || a.DeliveryTries != 3 || !strings.Contains(a.LastError, "slack: 500") {
		t.Errorf("after 5 passes with MaxTries 3: state %s, tries %d, error %q", a.State, a.DeliveryTries, a.LastError)
	}
	if n := sender.callCount(); n != 3 {
		t.Errorf("Send called %d times, want MaxTries = 3", n)
	}

	// MaxTries lowered below an alert's tries (a restart with new
	// options): it is given up without another send.
	b := testAlert(alertT0)
	b.DeliveryTries = 4
	id = store.enqueue(b)
	d.pass(context.Background())
	if a := store.storedAlert(id); a.State != results.DeliveryFailed || sender.callCount() != 3 {
		t.Errorf("alert with 4 tries and MaxTries 3: state %s, %d sends", a.State, sender.callCount())
	}
}

func TestDeliverMaxAge(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	sender := &fakeSender{}
	d := newDeliverer(store, sender, delivererOptions{Clock: clock})
	old := store.enqueue(testAlert(alertT0.Add(-24*time.Hour - time.Millisecond)))
	edge := store.enqueue(testAlert(alertT0.Add(-24 * time.Hour)))
	d.pass(context.Background())
	if a := store.storedAlert(old); a.State != results.DeliveryFailed || !strings.Contains(a.LastError, "older") {
		t.Errorf("alert older than MaxAge: state %s, error %q; want failed", a.State, a.LastError)
	}
	if a := store.storedAlert(edge); a.State != results.DeliveryDelivered {
		t.Errorf("alert exactly MaxAge old: state %s, want delivered", a.State)
	}
	if n := sender.callCount(); n != 1 {
		t.Errorf("Send called %d times, want 1 (the old alert is not sent)", n)
	}
}

// TestDeliverOnePassDrainsBatches: more due alerts than one batch all go
// out in one pass, and an alert whose retry is due at once is not retried
// in the same pass.
func TestDeliverOnePassDrainsBatches(t *testing.T) {
	store := newTestStore(t)
	sender := &fakeSender{reply: func(n int, a results.Alert) (bool, time.Duration, error) {
		if a.ID%2 == 0 {
			return true, 0, errors.New("slack: 500")
		}
		return false, 0, nil
	}}
	d := newDeliverer(store, sender, delivererOptions{Clock: newTestClock(alertT0), Rand: fixedRand(0)})
	const total = 3*deliveryBatch + 1
	for range total {
		store.enqueue(testAlert(alertT0))
	}
	d.pass(context.Background())
	if n := sender.callCount(); n != total {
		t.Errorf("one pass made %d sends for %d due alerts, want one each", n, total)
	}
}

func TestDeliverWake(t *testing.T) {
	verifyNoLeaks(t)
	store := newTestStore(t)
	sender := &fakeSender{}
	d := newDeliverer(store, sender, delivererOptions{PollInterval: time.Hour})
	stop := runDeliverer(t, d, time.Second)
	defer stop()
	waitFor(t, "Run to go to sleep", func() bool { return store.callCount("NextAlertDue") >= 1 })

	id := store.enqueue(testAlert(time.Now()))
	start := time.Now()
	d.Wake()
	d.Wake() // merged, never blocks
	waitFor(t, "the woken deliverer to deliver", func() bool { return store.storedAlert(id).State == results.DeliveryDelivered })
	if took := time.Since(start); took > time.Second {
		t.Errorf("delivery took %v after Wake", took)
	}
}

// TestDeliverSleepsUntilNextDue: without a Wake, Run wakes up when the
// earliest pending alert is due, not only at the poll interval.
func TestDeliverSleepsUntilNextDue(t *testing.T) {
	verifyNoLeaks(t)
	store := newTestStore(t)
	sender := &fakeSender{}
	id := store.enqueue(testAlert(time.Now().Add(50 * time.Millisecond)))
	d := newDeliverer(store, sender, delivererOptions{PollInterval: time.Hour})
	stop := runDeliverer(t, d, time.Second)
	defer stop()
	waitFor(t, "the alert delivered when due", func() bool { return store.storedAlert(id).State == results.DeliveryDelivered })
}

func TestDeliverRunStopsOnCancel(t *testing.T) {
	verifyNoLeaks(t)
	store := newTestStore(t)
	sender := &fakeSender{block: true}
	d := newDeliverer(store, sender, delivererOptions{})
	d.grace = 50 * time.Millisecond
	id := store.enqueue(testAlert(time.Now()))
	stop := runDeliverer(t, d, time.Second)
	sender.waitCalls(t, 1)
	stop()

	if a := store.storedAlert(id); a.State != results.DeliveryPending || a.DeliveryTries != 0 {
		t.Errorf("alert cut short by shutdown: state %s, tries %d; want pending, 0 (not counted)", a.State, a.DeliveryTries)
	}
	sender.mu.Lock()
	defer sender.mu.Unlock()
	if len(sender.ctxErrs) != 1 || !errors.Is(sender.ctxErrs[0], context.Canceled) {
		t.Errorf("blocked Send saw %v, want its context canceled after the grace", sender.ctxErrs)
	}
}

// TestDeliverGraceOnShutdown: a Send that finishes within the grace after
// shutdown began is recorded as delivered, so it is not sent again after
// the restart.
func TestDeliverGraceOnShutdown(t *testing.T) {
	verifyNoLeaks(t)
	store := newTestStore(t)
	sender := &fakeSender{block: true, release: make(chan struct{})}
	d := newDeliverer(store, sender, delivererOptions{})
	d.grace = 5 * time.Second
	id := store.enqueue(testAlert(time.Now()))
	stop := runDeliverer(t, d, 2*time.Second)
	sender.waitCalls(t, 1)
	time.AfterFunc(20*time.Millisecond, func() { close(sender.release) })
	stop()
	if a := store.storedAlert(id); a.State != results.DeliveryDelivered {
		t.Errorf("alert whose Send finished within the grace: state %s, want delivered", a.State)
	}
}

func TestDeliverStoreErrors(t *testing.T) {
	t.Run("DueAlerts fails, Run keeps going", func(t *testing.T) {
		verifyNoLeaks(t)
		store := newTestStore(t)
		var failures int
		store.setFail(func(m string) error {
			if m == "DueAlerts" && failures < 3 {
				failures++
				return errors.New("database is locked")
			}
			return nil
		})
		id := store.enqueue(testAlert(time.Now()))
		d := newDeliverer(store, &fakeSender{}, delivererOptions{PollInterval: 5 * time.Millisecond})
		stop := runDeliverer(t, d, time.Second)
		defer stop()
		waitFor(t, "delivery after the store recovered", func() bool { return store.storedAlert(id).State == results.DeliveryDelivered })
	})

	t.Run("MarkAlertDelivered fails, the alert is not sent twice", func(t *testing.T) {
		store := newTestStore(t)
		sender := &fakeSender{}
		d := newDeliverer(store, sender, delivererOptions{Clock: newTestClock(alertT0)})
		id := store.enqueue(testAlert(alertT0))
		store.setFail(func(m string) error {
			if m == "MarkAlertDelivered" {
				return errors.New("disk I/O error")
			}
			return nil
		})
		d.pass(context.Background())
		if a := store.storedAlert(id); a.State != results.DeliveryPending {
			t.Fatalf("state %s after a failed mark, want pending", a.State)
		}
		store.setFail(nil)
		d.pass(context.Background())
		if a := store.storedAlert(id); a.State != results.DeliveryDelivered || sender.callCount() != 1 {
			t.Errorf("after the store recovered: state %s, %d sends; want delivered, 1 send", a.State, sender.callCount())
		}
	})

	t.Run("a store that cannot mark is polled, not spun on", func(t *testing.T) {
		verifyNoLeaks(t)
		store := newTestStore(t)
		store.setFail(func(m string) error {
			if m == "MarkAlertDelivered" {
				return errors.New("disk I/O error")
			}
			return nil
		})
		store.enqueue(testAlert(time.Now()))
		d := newDeliverer(store, &fakeSender{}, delivererOptions{PollInterval: 50 * time.Millisecond})
		stop := runDeliverer(t, d, time.Second)
		time.Sleep(200 * time.Millisecond)
		stop()
		// The alert stays due, so only the poll interval paces Run.
		if n := store.callCount("DueAlerts"); n > 10 {
			t.Errorf("%d outbox reads in 200ms with a 50ms poll interval", n)
		}
	})

	t.Run("MarkAlertRetry fails, the pass ends", func(t *testing.T) {
		store := newTestStore(t)
		sender := &fakeSender{reply: retryable("slack: 502")}
		d := newDeliverer(store, sender, delivererOptions{Clock: newTestClock(alertT0)})
		store.enqueue(testAlert(alertT0))
		store.enqueue(testAlert(alertT0))
		store.setFail(func(m string) error {
			if m == "MarkAlertRetry" {
				return errors.New("database is locked")
			}
			return nil
		})
		d.pass(context.Background())
		if n := sender.callCount(); n != 1 {
			t.Errorf("%d sends in a pass whose first mark failed, want 1", n)
		}
	})
}

func TestDeliverSenderPanic(t *testing.T) {
	store := newTestStore(t)
	sender := &fakeSender{reply: func(int, results.Alert) (bool, time.Duration, error) { panic("nil map") }}
	d := newDeliverer(store, sender, delivererOptions{Clock: newTestClock(alertT0)})
	id := store.enqueue(testAlert(alertT0))
	d.pass(context.Background())
	if a := store.storedAlert(id); a.State != results.DeliveryFailed || !strings.Contains(a.LastError, "panicked") {
		t.Errorf("alert whose Send panicked: state %s, error %q; want failed", a.State, a.LastError)
	}
}

func TestDeliverDefaults(t *testing.T) {
	d := newDeliverer(newTestStore(t), &fakeSender{}, delivererOptions{})
	got := fmt.Sprint(d.maxTries, d.baseDelay, d.maxDelay, d.maxAge, d.poll)
	if want := fmt.Sprint(10, time.Second, 5*time.Minute, 24*time.Hour, 5*time.Second); got != want {
		t.Errorf("defaults = %s, want %s", got, want)
	}
}

// TestDeliverRetryAfterHoldsEveryAlert: a 429's Retry-After is the
// receiver's limit, so the alerts behind the refused one wait too.
func TestDeliverRetryAfterHoldsEveryAlert(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	sender := &fakeSender{reply: func(n int, _ results.Alert) (bool, time.Duration, error) {
		if n == 1 {
			return true, 30 * time.Second, errors.New("slack: rate limited")
		}
		return false, 0, nil
	}}
	d := newDeliverer(store, sender, delivererOptions{Clock: clock, Rand: fixedRand(0)})
	first, second := testAlert(alertT0), testAlert(alertT0)
	second.OperationID = "op-2"
	store.enqueue(first)
	secondID := store.enqueue(second)

	d.pass(context.Background())
	if n := sender.callCount(); n != 1 {
		t.Fatalf("Send called %d times in the pass that was rate limited, want 1", n)
	}
	// The alerts left are the paused receiver's: no spinning on them, but
	// no sleeping past the poll either (another receiver's may come due).
	if wait := d.sleep(context.Background()); wait != DefaultDeliveryPoll {
		t.Errorf("sleep after a 30s Retry-After = %v, want the poll interval %v", wait, DefaultDeliveryPoll)
	}
	clock.Advance(10 * time.Second)
	d.pass(context.Background())
	if n := sender.callCount(); n != 1 {
		t.Errorf("Send called again %v after a 30s Retry-After", 10*time.Second)
	}
	clock.Advance(21 * time.Second)
	d.pass(context.Background())
	if got := store.storedAlert(secondID).State; got != results.DeliveryDelivered {
		t.Errorf("second alert %s after the pause, want delivered", got)
	}
}

// TestDeliverRetryAfterHoldsOnlyItsReceiver: a receiver's Retry-After holds
// back its own alerts, not another receiver's.
func TestDeliverRetryAfterHoldsOnlyItsReceiver(t *testing.T) {
	store := newTestStore(t)
	clock := newTestClock(alertT0)
	sender := &fakeSender{reply: func(_ int, a results.Alert) (bool, time.Duration, error) {
		if a.Receiver == "default/slack" {
			return true, 30 * time.Second, errors.New("slack: rate limited")
		}
		return false, 0, nil
	}}
	d := newDeliverer(store, sender, delivererOptions{Clock: clock, Rand: fixedRand(0)})
	var ids []int64
	for _, key := range []string{"default/slack", "default/slack", "routes[0]/webhook"} {
		a := testAlert(alertT0)
		a.Receiver = key
		ids = append(ids, store.enqueue(a))
	}
	d.pass(context.Background())
	if got := store.storedAlert(ids[2]).State; got != results.DeliveryDelivered {
		t.Errorf("the webhook's alert is %s while Slack is rate limited, want delivered", got)
	}
	if n := sender.callCount(); n != 2 {
		t.Errorf("Send called %d times, want 2: Slack once, then the webhook", n)
	}
	if got := store.storedAlert(ids[1]); got.State != results.DeliveryPending || got.DeliveryTries != 0 {
		t.Errorf("Slack's second alert: %s after %d tries, want pending, untried", got.State, got.DeliveryTries)
	}
}
