package mcptest

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
)

// findNode returns the node binary on PATH (node, or nodejs as Debian
// names it). Without it the test is skipped, or failed where the npm
// tests are required.
func findNode(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"node", "nodejs"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	unavailable(t, "no node on PATH (apt-get install nodejs npm)")
	return ""
}

// freePort returns a loopback TCP port that nothing listened on a moment
// ago, for a server that takes its port as an argument.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// nodeServer is a server that node runs and that listens on a port of
// 127.0.0.1 it was told.
type nodeServer struct {
	name string   // what messages and its log lines call it
	port string   // where it listens, from freePort
	node string   // the node binary, from findNode
	args []string // node's arguments: the script and its own
	env  []string // the whole environment: the server sees nothing else
}

// start runs s and returns its endpoint, http://127.0.0.1:PORT/mcp, once
// it accepts connections; it fails t when s exits first or does not listen
// within 30s. s is stopped when the test ends, and its output is shown if
// the test failed.
func (s nodeServer) start(t *testing.T) string {
	t.Helper()
	log := &testkit.Log{}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, s.node, s.args...)
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", s.name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			lines, _ := log.Tail(testkit.TailLines)
			for _, line := range lines {
				t.Log(s.name + ": " + line)
			}
		}
	})

	addr := net.JoinHostPort("127.0.0.1", s.port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		select {
		case err := <-exited:
			exited <- err
			lines, _ := log.Tail(testkit.TailLines)
			t.Fatalf("%s exited before it listened: %v\n%s", s.name, err, strings.Join(lines, "\n"))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening on %s after 30s: %v", s.name, addr, err)
		}
	}
}
