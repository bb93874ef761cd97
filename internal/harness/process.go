package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// Build compiles toolpulse into dir, passing flags (such as -race) to go
// build, and returns the binary's path. It must run inside the toolpulse
// module.
func Build(ctx context.Context, dir string, flags ...string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		if root := os.Getenv("GOROOT"); root != "" {
			goTool, err = filepath.Join(root, "bin", "go"), nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("building toolpulse needs the go command: %w", err)
	}
	bin := filepath.Join(dir, "toolpulse")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	args := append(append([]string{"build"}, flags...), "-o", bin, "github.com/toolpulse/toolpulse/cmd/toolpulse")
	if out, err := exec.CommandContext(ctx, goTool, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build toolpulse (run from inside the toolpulse module): %w\n%s", err, out)
	}
	return bin, nil
}

// Command is how to start a toolpulse process.
type Command struct {
	Bin  string
	Args []string
	// Env is added to this process's environment, NAME=VALUE each.
	Env []string
	// Output receives the process's stdout and stderr; nil discards them.
	Output io.Writer
	// StopTimeout bounds the drain after the context given to Start ends:
	// the process gets SIGTERM, then SIGKILL this much later (default 30s).
	StopTimeout time.Duration
}

// ErrNoExit says a process did not exit within Stop's timeout; Stop has
// killed it.
var ErrNoExit = errors.New("did not exit")

// Process is a running toolpulse. One goroutine waits for it; it returns
// once the process has exited and its output is copied.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's answer, set before exited is closed
}

// Start starts c. When ctx ends, the process is asked to drain with
// SIGTERM, as on a normal stop.
func Start(ctx context.Context, c Command) (*Process, error) {
	cmd := exec.CommandContext(ctx, c.Bin, c.Args...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdout, cmd.Stderr = c.Output, c.Output
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = c.StopTimeout
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = 30 * time.Second
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(c.Bin), err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig; it is not an error that the process has exited.
func (p *Process) Signal(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process ended, as exec.Cmd.Wait says; nil for exit 0.
// It is only meaningful once Exited is closed.
func (p *Process) Err() error { return p.err }

// ExitCode is the exit status, -1 for a signal; only meaningful once
// Exited is closed.
func (p *Process) ExitCode() int { return p.cmd.ProcessState.ExitCode() }

// Stop sends sig unless the process has exited, waits up to timeout for
// it to exit and returns Err. A process still running then gets SIGQUIT,
// on which a Go program writes every goroutine's stack to its output
// before it exits (what held it up is then in the output), and is killed
// if it is still running quitWait later; the error wraps ErrNoExit.
func (p *Process) Stop(sig os.Signal, timeout time.Duration) error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	if err := p.Signal(sig); err != nil {
		return err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.exited:
		return p.err
	case <-timer.C:
	}
	_ = p.Signal(syscall.SIGQUIT)
	select {
	case <-p.exited:
	case <-time.After(quitWait):
		p.Kill()
	}
	return fmt.Errorf("toolpulse %w within %s of %v", ErrNoExit, timeout, sig)
}

// quitWait is how long Stop waits for a stuck process to write its
// goroutines' stacks after SIGQUIT.
const quitWait = 5 * time.Second

// Kill kills the process unless it has exited, and waits for it.
func (p *Process) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	<-p.exited
}
