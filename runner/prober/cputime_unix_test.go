//go:build unix

package prober

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the test process has used so far, in every
// thread: the benchmark's own work, the loopback server's and the garbage
// collector's.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
