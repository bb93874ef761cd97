//go:build !unix

package prober

import "time"

// processCPU is not measured here; cpu-ns/op then reads 0.
func processCPU() time.Duration { return 0 }
