package runner

import "sync"

// workers runs each run of a probe on a goroutine that outlives it.
//
// gocron starts a new goroutine for every run, with a small stack, and a
// run goes deep (the HTTP client, the consumer's rules, the recorder's
// alert policy with frames of several KB): the runtime grew and copied
// every run's stack once or twice on the way down, about 6 % of the
// daemon's CPU at 1,000 runs a second (BENCHMARKS.md, "Warm stacks"). A
// worker keeps the stack its first run grew for the runs after it. There
// are as many workers as runs were ever in flight at once; an idle one
// waits for the next run and ends at stop. The garbage collector still
// shrinks an idle worker's stack now and then, as for any goroutine.
type workers struct {
	runs     chan func()
	quit     chan struct{}
	stopOnce sync.Once
}

func newWorkers() *workers {
	return &workers{runs: make(chan func()), quit: make(chan struct{})}
}

// do runs f on an idle worker, or on a new one when none is idle, and
// returns once f has returned. A panic in f is raised again in do's
// caller, as if f had run there (gocron recovers it and logs it), and
// the worker goes on.
func (w *workers) do(f func()) {
	done := make(chan struct{})
	var panicked any
	run := func() {
		defer close(done)
		defer func() { panicked = recover() }()
		f()
	}
	select {
	case w.runs <- run:
	default:
		go w.work(run)
	}
	<-done
	if panicked != nil {
		panic(panicked)
	}
}

// work runs first, then whatever do hands it, until stop.
func (w *workers) work(first func()) {
	for run := first; ; {
		run()
		select {
		case run = <-w.runs:
		case <-w.quit:
			return
		}
	}
}

// stop ends the idle workers, and each busy one once its run returns.
// do still runs f after stop, on a goroutine of its own.
func (w *workers) stop() { w.stopOnce.Do(func() { close(w.quit) }) }
