package testkit

import (
	"testing"

	"go.uber.org/goleak"
)

// NoLeaks remembers the goroutines running now and returns a check, to
// defer or call once everything the test started has stopped, that fails t
// if a goroutine started since is still running (after goleak's short
// grace for goroutines on their way out). Goroutines alive at the start,
// other tests' leftovers, do not count.
func NoLeaks(t testing.TB) (check func()) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	return func() {
		t.Helper()
		goleak.VerifyNone(t, ignore)
	}
}
