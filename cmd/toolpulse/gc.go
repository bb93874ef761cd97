package main

import (
	"errors"
	"log/slog"
	"math"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// configGCPercent is the collector's GOGC while a config is loaded. The
// YAML parser keeps every token, each linked to the next, and the tree
// built on them until the config is decoded: some 80 bytes of heap per
// byte of YAML, about 110 MB for 10,000 probes. At the default GOGC of 100
// the heap may grow to twice what is live before a collection, and the
// process's peak memory is set at start-up by the parse rather than by the
// probes. At 10 the parse peaks at about 1.1 times its live heap: for
// 10,000 probes, `validate` peaks at 133–134 MiB (135–146 MiB at 20,
// 220 MB at 100) for about 1.5 s of parsing instead of 1.0 s at 20 and
// 0.6 s at 100 (BENCHMARKS.md); a config of a hundred probes does not
// notice.
const configGCPercent = 10

// withTightGC runs load with the collector at configGCPercent, then puts
// it back as it was and hands the parser's garbage back to the operating
// system at once rather than over the next minutes. It leaves a tighter
// setting, or GOGC=off, alone, and does nothing unless e.tuneGC: the GC
// percent is the process's, and tests run many commands at once in one
// process.
func (e *env) withTightGC(load func()) {
	if !e.tuneGC {
		load()
		return
	}
	old := debug.SetGCPercent(configGCPercent)
	if old < configGCPercent { // tighter already, or off (-1)
		debug.SetGCPercent(old)
	}
	defer debug.FreeOSMemory()
	defer debug.SetGCPercent(old)
	load()
}

// containerMemoryShare is the part of a container's memory limit that
// setMemoryLimit gives the Go heap as a soft limit (GOMEMLIMIT), leaving
// the rest to SQLite's page caches, stacks and the runtime, as Prometheus
// does.
const containerMemoryShare = 0.9

// setMemoryLimit makes the collector work harder as the process nears
// containerMemoryShare of the memory limit that limits reports (the
// cgroup's, v1 or v2, in the daemon), instead of letting the heap grow to
// twice what is live and the container be killed. GOMEMLIMIT, if set,
// wins, and AUTOMEMLIMIT=off (or a ratio such as 0.8) overrides it. Where
// nothing limits memory, nothing changes. It does nothing unless
// e.tuneGC, and returns the limit in force.
func (e *env) setMemoryLimit(logger *slog.Logger, limits memlimit.Provider) int64 {
	if !e.tuneGC {
		return debug.SetMemoryLimit(-1)
	}
	limit, err := memlimit.Set(memlimit.WithProvider(belowMachine(limits)), memlimit.WithRatio(containerMemoryShare))
	switch {
	case errors.Is(err, memlimit.ErrCgroupsNotSupported):
	case err != nil:
		logger.Warn("cannot read the container's memory limit; the Go heap has no soft limit", "err", err)
	case limit != math.MaxInt64:
		logger.Info("soft memory limit", "gomemlimit_bytes", limit)
	}
	return limit
}

// belowMachine is limits, except that a limit no smaller than the
// machine's memory is none: cgroup v1 writes a number near 2^63 for "no
// limit".
func belowMachine(limits memlimit.Provider) memlimit.Provider {
	return func() (uint64, error) {
		limit, err := limits()
		if err != nil {
			return 0, err
		}
		if machine, merr := memlimit.FromSystem(); merr == nil && limit >= machine {
			return 0, memlimit.ErrNoLimit
		}
		return limit, nil
	}
}
