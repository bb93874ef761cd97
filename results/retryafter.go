package results

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ParseRetryAfter returns the wait a Retry-After header value asks for,
// given in seconds or as an HTTP date (RFC 9110 §10.2.3), read at now. A
// date in the past asks for no wait, and a number of seconds beyond the
// largest Duration for the largest Duration. ok is false for an empty
// value, a negative number and anything else that does not parse: the
// caller's own back-off stays in charge.
func ParseRetryAfter(value string, now time.Time) (wait time.Duration, ok bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > math.MaxInt64/int64(time.Second) {
			return math.MaxInt64, true
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}
