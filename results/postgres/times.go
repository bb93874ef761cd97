package postgres

import (
	"time"
)

// Times are stored as timestamptz holding whole milliseconds: every time
// the store writes is truncated to the millisecond, as results/sqlite's
// text times are, so that what comes back is what SQLite would give back,
// and every bound a reader passes is rounded up (storedTime), so that
// "at or after" and "before" stay exact.

// dbTime is t as stored: truncated to the millisecond, in UTC.
func dbTime(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }

// nullTime stores the zero time, which means "never" or "does not apply",
// as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	v := dbTime(t)
	return &v
}

// fromNull reads a nullable time column; NULL is the zero time.
func fromNull(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// storedTime is t as a bound on stored times, which have millisecond
// precision: t rounded up to the next millisecond unless it is on one. A
// stored time is then >= (or <) the bound exactly when the instant it
// stands for is >= (or <) t.
func storedTime(t time.Time) time.Time {
	return ceilMillisecond(t).UTC()
}

// ceilMillisecond is t rounded up to the next millisecond unless it is on
// one.
func ceilMillisecond(t time.Time) time.Time {
	ms := t.Truncate(time.Millisecond)
	if ms.Before(t) {
		ms = ms.Add(time.Millisecond)
	}
	return ms
}

// hourOf is the shape_counts and probe_hours bucket of t: its UTC hour.
func hourOf(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

// The open ends of a window: bounds every stored time lies within.
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
)

// dbTimes is times as stored, nil (NULL) for none.
func dbTimes(times []time.Time) []time.Time {
	if len(times) == 0 {
		return nil
	}
	out := make([]time.Time, len(times))
	for i, t := range times {
		out[i] = dbTime(t)
	}
	return out
}
