package postgres

import (
	"fmt"

	"github.com/toolpulse/toolpulse/results/hourly"
)

// parseBucketsText reads duration_buckets objects as Postgres prints
// jsonb, joined by commas (`{"20": 3, "131": 1},{}`), and calls add with
// each bucket and its runs, in the order they come. A key must be a
// bucket (hourly.Bucket) and a count a whole number >= 0, written as
// Postgres prints them, or it is errBuckets. Empty text is no object.
func parseBucketsText(text []byte, add func(bucket, runs int64)) error {
	i := 0
	// number reads the digits at i.
	number := func() (int64, bool) {
		start := i
		var v int64
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			if i-start == 18 { // past any count or duration stored
				return 0, false
			}
			v = v*10 + int64(text[i]-'0')
			i++
		}
		return v, i > start
	}
	expect := func(s string) bool {
		if len(text)-i < len(s) || string(text[i:i+len(s)]) != s {
			return false
		}
		i += len(s)
		return true
	}
	bad := func() error {
		return fmt.Errorf("%w at byte %d of %q", errBuckets, i, clip(text, i))
	}
	for i < len(text) {
		if i > 0 && !expect(",") {
			return bad()
		}
		if !expect("{") {
			return bad()
		}
		if expect("}") {
			continue
		}
		for {
			if !expect(`"`) {
				return bad()
			}
			b, ok := number()
			if !ok || hourly.Bucket(b) != b || !expect(`": `) {
				return bad()
			}
			n, ok := number()
			if !ok {
				return bad()
			}
			add(b, n)
			if expect("}") {
				break
			}
			if !expect(", ") {
				return bad()
			}
		}
	}
	return nil
}

// clip is some text around byte i of text, for an error.
func clip(text []byte, i int) string {
	lo, hi := max(i-20, 0), min(i+20, len(text))
	return string(text[lo:hi])
}
