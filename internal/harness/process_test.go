package harness

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
)

// shell starts a shell script standing in for toolpulse, its output in log.
func shell(t *testing.T, ctx context.Context, script string, log *testkit.Log) *Process {
	t.Helper()
	p, err := Start(ctx, Command{Bin: "/bin/sh", Args: []string{"-c", script}, Env: []string{"HARNESS_WORD=hello"},
		Output: log, StopTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ready waits until the script has written its first line: its traps are
// set by then.
func ready(t *testing.T, log *testkit.Log) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "\n"); {
		if time.Now().After(deadline) {
			t.Fatal("the script never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProcess: a process gets its environment and its output is captured;
// Stop delivers the signal and reports the exit; a process that ignores
// it is killed after the timeout; a cancelled context asks for a drain
// with SIGTERM. No goroutine outlives its process.
func TestProcess(t *testing.T) {
	check := testkit.NoLeaks(t)
	const drains = `trap 'echo draining; exit 0' TERM; echo "$HARNESS_WORD"; while :; do sleep 0.05; done`

	log := &testkit.Log{}
	p := shell(t, context.Background(), drains, log)
	ready(t, log)
	if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil || p.ExitCode() != 0 {
		t.Errorf("Stop(SIGTERM) = %v, exit %d; want a clean exit", err, p.ExitCode())
	}
	if got := log.String(); got != "hello\ndraining\n" {
		t.Errorf("output %q, want the environment's word and the drain", got)
	}
	if err := p.Stop(syscall.SIGTERM, time.Second); err != nil {
		t.Errorf("Stop after the exit = %v, want the exit's nil again", err)
	}

	log = &testkit.Log{}
	p = shell(t, context.Background(), `trap '' TERM; echo up; while :; do sleep 0.05; done`, log)
	ready(t, log)
	if err := p.Stop(syscall.SIGTERM, 300*time.Millisecond); !errors.Is(err, ErrNoExit) {
		t.Errorf("Stop of a process that ignores SIGTERM = %v, want ErrNoExit", err)
	}
	if p.ExitCode() != -1 {
		t.Errorf("exit code %d, want -1: killed", p.ExitCode())
	}

	// Before it is killed, a stuck process is asked for its stacks.
	log = &testkit.Log{}
	p = shell(t, context.Background(), `trap '' TERM; trap 'echo stacks; exit 2' QUIT; echo up; while :; do sleep 0.05; done`, log)
	ready(t, log)
	if err := p.Stop(syscall.SIGTERM, 300*time.Millisecond); !errors.Is(err, ErrNoExit) {
		t.Errorf("Stop of a process that ignores SIGTERM = %v, want ErrNoExit", err)
	}
	if got := log.String(); got != "up\nstacks\n" {
		t.Errorf("output %q, want the answer to SIGQUIT after the start", got)
	}

	log = &testkit.Log{}
	ctx, cancel := context.WithCancel(context.Background())
	p = shell(t, ctx, drains, log)
	ready(t, log)
	cancel()
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		p.Kill()
		t.Fatal("a cancelled context did not stop the process")
	}
	if !strings.Contains(log.String(), "draining") {
		t.Errorf("output %q: the process was not asked to drain", log.String())
	}

	log = &testkit.Log{}
	p = shell(t, context.Background(), drains, log)
	p.Kill()
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Err after Kill = %v, want killed", err)
	}
	check()
}
