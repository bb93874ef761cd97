package runner

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"time"
)

// idleWorkers counts the goroutines in workers.work, from a dump of every
// goroutine's stack.
func idleWorkers() int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	return bytes.Count(buf[:n], []byte("runner.(*workers).work("))
}

// waitWorkers waits until want goroutines are in workers.work, and fails
// the test if that does not happen within a few seconds.
func waitWorkers(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for idleWorkers() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines in workers.work, want %d", idleWorkers(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWorkersKeepAGoroutineForTheNextRun(t *testing.T) {
	w := newWorkers()
	defer w.stop()
	for i := range 5 {
		ran := false
		w.do(func() { ran = true })
		if !ran {
			t.Fatalf("run %d: do returned before its function ran", i)
		}
		// One worker, kept between the runs: none that exits after its
		// run, and no new one while it is idle.
		waitWorkers(t, 1)
	}
}

func TestWorkersRunConcurrentRunsOnWorkersOfTheirOwn(t *testing.T) {
	w := newWorkers()
	defer w.stop()
	const runs = 3
	var started, release sync.WaitGroup
	started.Add(runs)
	release.Add(1)
	var done sync.WaitGroup
	for range runs {
		done.Add(1)
		go func() {
			defer done.Done()
			w.do(func() {
				started.Done()
				release.Wait()
			})
		}()
	}
	started.Wait() // every run is running at once: none waits for another
	release.Done()
	done.Wait()
	waitWorkers(t, runs)
}

func TestWorkersStopEndsThem(t *testing.T) {
	w := newWorkers()
	block := make(chan struct{})
	busy := make(chan struct{})
	go w.do(func() { close(busy); <-block })
	<-busy
	w.do(func() {})
	waitWorkers(t, 2)

	w.stop()
	waitWorkers(t, 1) // the idle one ended; the busy one runs on
	close(block)
	waitWorkers(t, 0) // and ends once its run returns

	ran := false
	w.do(func() { ran = true }) // after stop, on a goroutine of its own
	if !ran {
		t.Fatal("do after stop did not run its function")
	}
	waitWorkers(t, 0)
	w.stop() // twice is harmless
}

func TestWorkersRaiseARunsPanicInTheCaller(t *testing.T) {
	w := newWorkers()
	defer w.stop()
	raised := func() (v any) {
		defer func() { v = recover() }()
		w.do(func() { panic("run exploded") })
		return nil
	}()
	if raised != "run exploded" {
		t.Fatalf("do raised %v, want the run's panic", raised)
	}
	waitWorkers(t, 1) // the worker survived it
	ran := false
	w.do(func() { ran = true })
	if !ran {
		t.Fatal("the worker did not run the next function")
	}
}
