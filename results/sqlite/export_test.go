package sqlite

import (
	"io/fs"
	"strings"

	"github.com/toolpulse/toolpulse/results/groupcommit"
)

// ProbeHoursBackfill is the statement of migration 0005 that sums every
// stored result up into probe_hours, which must be empty: for tests that
// write results rows directly, faster than RecordRun would.
func ProbeHoursBackfill() string {
	text, err := fs.ReadFile(embedded, "0005_probe_hours.sql")
	if err != nil {
		panic(err) // a constant, embedded path
	}
	_, insert, ok := strings.Cut(string(text), "\nINSERT INTO probe_hours")
	if !ok {
		panic("0005_probe_hours.sql has no INSERT INTO probe_hours")
	}
	return "INSERT INTO probe_hours" + insert
}

// HoldWriter makes s's writer wait until n runs are queued and then record
// every run queued in one transaction (up to MaxBatch), whatever the
// commit delay does: for tests that need several runs in one batch.
func HoldWriter(s *Store, n int) {
	if n > groupcommit.MaxBatch {
		panic("HoldWriter: more runs than one batch holds")
	}
	s.gc.HoldUntil.Store(int32(n))
}

// MaxBatch is the most runs one transaction records.
const MaxBatch = groupcommit.MaxBatch

// Queued returns how many runs wait for s's writer.
func Queued(s *Store) int {
	return s.gc.Len()
}

// Commits returns how many transactions of s's writer have committed runs,
// and how many runs they committed.
func Commits(s *Store) (commits, runs int64) {
	return s.gc.Commits.Load(), s.gc.Runs.Load()
}

// Delays returns how many batches of s's writer waited for more runs to
// arrive.
func Delays(s *Store) int64 { return s.gc.Delays.Load() }
