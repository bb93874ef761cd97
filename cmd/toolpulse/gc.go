package main

import "runtime/debug"

// configGCPercent is the collector's GOGC while a config is loaded. The
// YAML parser keeps every token, each linked to the next, and the tree
// built on them until the config is decoded: some 80 bytes of heap per
// byte of YAML, about 110 MB for 10,000 probes. At the default GOGC of 100
// the heap may grow to twice what is live before a collection, and the
// process's peak memory is set at start-up by the parse rather than by the
// probes. At 20 the parse peaks at about 1.2 times its live heap (140 MB
// instead of 220 MB for 10,000 probes) for about twice the parse time
// (1.3 s instead of 0.6 s); a config of a hundred probes does not notice.
const configGCPercent = 20

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
