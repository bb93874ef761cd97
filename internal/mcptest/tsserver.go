package mcptest

import (
	"context"
	_ "embed"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
)

// tsServerScript is a server on the official TypeScript SDK; its header
// says what each of its tools does.
//
//go:embed testdata/tsserver.cjs
var tsServerScript []byte

// sdkPackage is the TypeScript SDK, which .ci/run installs beside the
// npm servers.
const sdkPackage = "@modelcontextprotocol/sdk"

// StartTSServer runs testdata/tsserver.cjs, a server written with the
// TypeScript SDK installed under $TOOLPULSE_MCP_NPM_DIR, and returns its
// endpoint, http://127.0.0.1:N/mcp, once it accepts connections. It
// listens on loopback only. Its tools: poll (closes the tools/call stream
// after its priming event and answers on the GET that resumes it), echo
// ({message: string}), ask (asks for input on the standalone GET stream)
// and task-only (execution.taskSupport: required). Without node or the
// SDK the test is skipped, or failed where the npm tests are required. The
// server is stopped when the test ends; its output is shown if the test
// failed.
func StartTSServer(t *testing.T) string {
	t.Helper()
	node := ""
	for _, name := range []string{"node", "nodejs"} {
		if path, err := exec.LookPath(name); err == nil {
			node = path
			break
		}
	}
	if node == "" {
		unavailable(t, "no node on PATH (apt-get install nodejs npm)")
	}
	dir := os.Getenv(NPMDirEnv)
	if dir == "" {
		unavailable(t, "%s is not set (npm install --prefix DIR %s, then %s=DIR)", NPMDirEnv, sdkPackage, NPMDirEnv)
	}
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, filepath.FromSlash(sdkPackage), "package.json")); err != nil {
		unavailable(t, "%s is not installed under %s: %v", sdkPackage, dir, err)
	}
	script := filepath.Join(t.TempDir(), "tsserver.cjs")
	if err := os.WriteFile(script, tsServerScript, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()

	log := &testkit.Log{}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, script, port)
	cmd.Env = []string{"NODE_PATH=" + modules, "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", script, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			lines, _ := log.Tail(testkit.TailLines)
			for _, line := range lines {
				t.Log("tsserver: " + line)
			}
		}
	})

	addr := net.JoinHostPort("127.0.0.1", port)
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
			t.Fatalf("tsserver exited before it listened: %v\n%s", err, strings.Join(lines, "\n"))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("tsserver not listening on %s after 30s: %v", addr, err)
		}
	}
}
