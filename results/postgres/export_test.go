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

// OnFencesLocked makes s's writer call f in its transaction once it holds
// the share locks of its batch's fences, before it writes the batch. Set
// it before s records anything.
func OnFencesLocked(s *Store, f func()) { s.hooks.fencesLocked = f }

// OnClaimed makes DueAlerts of s's fenced outboxes call f in their
// transaction once the rows are claimed, before the COMMIT. Set it before
// s is used.
func OnClaimed(s *Store, f func()) { s.hooks.claimed = f }
