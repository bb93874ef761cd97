package prober

import (
	"bufio"
	cryptorand "crypto/rand"
	"sync"

	"github.com/google/uuid"
)

// randomBlock is how many bytes of crypto/rand a randomSource reads at
// once: some 300 runs' operation, trace and span ids per system call.
const randomBlock = 8 << 10

// randomSource is crypto/rand read a block at a time: an operation id, a
// trace id and a span id each read a few random bytes, and a system call
// for each cost more than the rest of making them (BENCHMARKS.md). It is
// safe for concurrent use.
type randomSource struct {
	mu sync.Mutex
	r  *bufio.Reader
}

func newRandomSource() *randomSource {
	return &randomSource{r: bufio.NewReaderSize(cryptorand.Reader, randomBlock)}
}

// Read fills p with random bytes. crypto/rand never fails (it ends the
// process rather than return an error), so neither does Read.
func (s *randomSource) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Read(p)
}

// newOperationID returns an operation id read from src: a UUID of version
// 7 (RFC 9562), whose first 48 bits are the time in milliseconds. The
// stores index results, attempts and exchanges by operation id; ids that
// grow with time are added at the end of those indexes, next to the
// previous run's, where a random (version 4) id changed a page of each
// index chosen at random, one that is seldom in memory once a database
// holds months of runs.
func newOperationID(src *randomSource) string {
	return uuid.Must(uuid.NewV7FromReader(src)).String()
}
