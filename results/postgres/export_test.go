package postgres

import "github.com/toolpulse/toolpulse/results/groupcommit"

// HoldWriter makes s's writer wait until n runs are queued and then record
// every run queued in one transaction (up to MaxBatch): for tests that
// need several runs in one batch.
func HoldWriter(s *Store, n int) {
	if n > groupcommit.MaxBatch {
		panic("HoldWriter: more runs than one batch holds")
	}
	s.gc.HoldUntil.Store(int32(n))
}

// Queued returns how many runs wait for s's writer.
func Queued(s *Store) int {
	return s.gc.Len()
}

// Commits returns how many transactions of s's writer have committed runs,
// and how many runs they committed.
func Commits(s *Store) (commits, runs int64) {
	return s.gc.Commits.Load(), s.gc.Runs.Load()
}

// MaxBatch is the most runs one transaction records.
const MaxBatch = groupcommit.MaxBatch
