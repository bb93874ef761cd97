package postgres

// HoldWriter makes s's writer wait until n runs are queued and then record
// every run queued in one transaction (up to MaxBatch): for tests that
// need several runs in one batch.
func HoldWriter(s *Store, n int) {
	if n > maxBatch {
		panic("HoldWriter: more runs than one batch holds")
	}
	s.gc.holdUntil.Store(int32(n))
}

// Queued returns how many runs wait for s's writer.
func Queued(s *Store) int {
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	return len(s.gc.queue)
}

// Commits returns how many transactions of s's writer have committed runs,
// and how many runs they committed.
func Commits(s *Store) (commits, runs int64) {
	return s.gc.commits.Load(), s.gc.runs.Load()
}

// MaxBatch is the most runs one transaction records.
const MaxBatch = maxBatch
