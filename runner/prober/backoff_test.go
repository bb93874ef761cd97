package prober

import (
	"net/http"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
)

func TestBackoff(t *testing.T) {
	policy := checks.Retries{BaseDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second}
	now := time.Date(2026, 10, 26, 13, 7, 0, 0, time.UTC)
	const plenty = time.Hour
	response := func(status int, retryAfter string) *http.Response {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &http.Response{StatusCode: status, Header: h}
	}
	tests := []struct {
		name      string
		n         int
		resp      *http.Response
		remaining time.Duration
		rnd       float64
		want      time.Duration
	}{
		// Full jitter: rnd scales the whole ceiling, from zero up.
		{name: "jitter lower bound", n: 0, rnd: 0, remaining: plenty, want: 0},
		{name: "jitter upper bound, first retry", n: 0, rnd: 0.999, remaining: plenty, want: 99_900 * time.Microsecond},
		{name: "jitter doubles per retry", n: 3, rnd: 0.5, remaining: plenty, want: 400 * time.Millisecond},
		{name: "ceiling capped at max_delay", n: 5, rnd: 0.5, remaining: plenty, want: time.Second},
		{name: "huge retry number stays capped", n: 200, rnd: 0.5, remaining: plenty, want: time.Second},
		{name: "jitter capped by the budget", n: 5, rnd: 0.999, remaining: 300 * time.Millisecond, want: 300 * time.Millisecond},
		{name: "no budget left", n: 0, rnd: 0.5, remaining: -time.Second, want: 0},

		// Retry-After replaces the jitter on 429 and 503 only.
		{name: "Retry-After seconds on 429", resp: response(429, "7"), rnd: 0.5, remaining: plenty, want: 7 * time.Second},
		{name: "Retry-After seconds on 503", resp: response(503, "3"), rnd: 0.5, remaining: plenty, want: 3 * time.Second},
		{name: "Retry-After date", resp: response(429, now.Add(90*time.Second).Format(http.TimeFormat)), rnd: 0.5, remaining: plenty, want: 90 * time.Second},
		{name: "Retry-After date in the past", resp: response(503, now.Add(-time.Minute).Format(http.TimeFormat)), rnd: 0.5, remaining: plenty, want: 0},
		{name: "Retry-After capped by the budget", resp: response(429, "3600"), rnd: 0.5, remaining: 4 * time.Second, want: 4 * time.Second},
		{name: "Retry-After ignored on 500", resp: response(500, "7"), rnd: 0.5, remaining: plenty, want: 50 * time.Millisecond},
		{name: "unparsable Retry-After", resp: response(429, "soon"), rnd: 0.5, remaining: plenty, want: 50 * time.Millisecond},
		{name: "negative Retry-After", resp: response(429, "-5"), rnd: 0.5, remaining: plenty, want: 50 * time.Millisecond},
		{name: "absurd Retry-After", resp: response(429, "99999999999999999"), rnd: 0.5, remaining: time.Minute, want: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked, asks := retryAfter(tt.resp, now)
			got := backoff(policy, tt.n, asked, asks, tt.remaining, func() float64 { return tt.rnd })
			if got != tt.want {
				t.Errorf("backoff = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBackoffJitterSpread checks that the wait is random over the whole
// range, not a fixed delay with a little noise: with full jitter the waits
// of a fleet spread from zero to the ceiling.
func TestBackoffJitterSpread(t *testing.T) {
	policy := checks.Retries{BaseDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second}
	for _, rnd := range []float64{0, 0.25, 0.5, 0.75, 0.999999} {
		for n := range 8 {
			ceiling := min(policy.MaxDelay, policy.BaseDelay<<n)
			got := backoff(policy, n, 0, false, time.Hour, func() float64 { return rnd })
			want := time.Duration(rnd * float64(ceiling))
			if got != want || got < 0 || got >= ceiling {
				t.Errorf("n=%d rnd=%v: backoff = %v, want %v in [0, %v)", n, rnd, got, want, ceiling)
			}
		}
	}
}
