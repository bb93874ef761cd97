// Package e2e runs the real toolpulse binary inside a test: it builds the
// binary once per test process, starts it with its log in a testkit.Log
// shown should the test fail, waits for what the test expects, and stops
// or kills it, so that no process or goroutine outlives the test. It ties
// internal/harness to a *testing.T. Only tests import it.
package e2e

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit"
)

// StopTimeout is how long Stop waits for the daemon to exit, and
// WaitTimeout how long WaitFor waits for a condition.
const (
	StopTimeout = 20 * time.Second
	WaitTimeout = 15 * time.Second
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds toolpulse once per test process and returns its path. The
// binary stays in a temporary directory of its own for the other tests of
// the process.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolpulse-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath, buildErr = harness.Build(context.Background(), dir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Daemon is one running toolpulse process. Its T holds the test's
// failures back until the end, after the tail of the process's log; the
// test asserts through it.
type Daemon struct {
	T    *testkit.T
	Log  *testkit.Log
	proc *harness.Process
}

// Start runs `toolpulse -c config run --grace 2s`.
func Start(t *testing.T, config string) *Daemon {
	t.Helper()
	return StartCommand(t, harness.Command{Args: []string{"-c", config, "run", "--grace", "2s"}})
}

// StartCommand runs the binary with c's arguments and environment (its
// Bin and Output are the test's). A process still running when the test
// ends is killed.
func StartCommand(t *testing.T, c harness.Command) *Daemon {
	t.Helper()
	log := &testkit.Log{}
	c.Bin, c.Output = Binary(t), log
	p, err := harness.Start(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	tk := testkit.New(t)
	tk.Attach("toolpulse", log)
	t.Cleanup(p.Kill)
	return &Daemon{T: tk, Log: log, proc: p}
}

// Pid is the process id.
func (d *Daemon) Pid() int { return d.proc.Pid() }

// Signal sends sig, failing the test if it cannot.
func (d *Daemon) Signal(sig syscall.Signal) {
	d.T.Helper()
	if err := d.proc.Signal(sig); err != nil {
		d.T.Fatal(err)
	}
}

// Stop sends sig and returns how the process exited (nil for exit 0). A
// process still running StopTimeout later fails the test, killed.
func (d *Daemon) Stop(sig syscall.Signal) error {
	d.T.Helper()
	err := d.proc.Stop(sig, StopTimeout)
	if errors.Is(err, harness.ErrNoExit) {
		d.T.Fatalf("toolpulse did not exit within %v of %v", StopTimeout, sig)
	}
	return err
}

// WaitFor polls cond until it holds, failing the test after WaitTimeout.
func (d *Daemon) WaitFor(what string, cond func() bool) {
	d.T.Helper()
	d.WaitWithin(what, WaitTimeout, cond)
}

// WaitWithin is WaitFor with a timeout of its own.
func (d *Daemon) WaitWithin(what string, timeout time.Duration, cond func() bool) {
	d.T.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			d.T.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Serve serves h on loopback until the test ends, and returns its URL.
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Slack is a recording Slack on loopback until the test ends, and its
// webhook URL.
func Slack(t testing.TB) (*harness.Slack, string) {
	t.Helper()
	s := &harness.Slack{}
	return s, Serve(t, s)
}

// FreeAddr returns a loopback address that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Config writes cfg to dir/checks.yaml and returns its path.
func Config(t testing.TB, dir string, cfg harness.Config) string {
	t.Helper()
	path := filepath.Join(dir, "checks.yaml")
	if err := cfg.Write(path); err != nil {
		t.Fatal(err)
	}
	return path
}
