package prober

import (
	"net/http"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// backoff returns how long to wait before the retry that follows retry
// number n (0 after the first attempt). It is full jitter, rnd() *
// min(max_delay, base_delay * 2^n), because a fleet of probes retrying
// against the same recovering provider must not retry in lockstep. A wait
// the provider asked for (asked, when asks: a Retry-After on a 429 or 503,
// see retryAfter) replaces it: the provider said when it will take another
// request. Either way the wait never exceeds remaining, the time left in
// the run's budget; the caller decides whether a wait that long still
// leaves room for an attempt.
func backoff(policy checks.Retries, n int, asked time.Duration, asks bool, remaining time.Duration, rnd func() float64) time.Duration {
	wait := asked
	if !asks {
		wait = time.Duration(rnd() * float64(BackoffCeiling(policy.BaseDelay, policy.MaxDelay, n)))
	}
	return min(wait, max(remaining, 0))
}

// BackoffCeiling is min(maxDelay, base * 2^n), without overflowing for
// large n.
func BackoffCeiling(base, maxDelay time.Duration, n int) time.Duration {
	if base <= 0 {
		return 0
	}
	if n < 0 {
		n = 0
	}
	if n >= 62 || base > maxDelay>>n {
		return maxDelay
	}
	return base << n
}

// retryAfter returns the wait a 429 or 503 response asks for in its
// Retry-After header (results.ParseRetryAfter); any other response asks
// for none.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return 0, false
	}
	return results.ParseRetryAfter(resp.Header.Get("Retry-After"), now)
}
