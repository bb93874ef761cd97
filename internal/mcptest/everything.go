package mcptest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The environment the npm tests read. .ci/run installs the packages into
// a temporary directory and sets both.
const (
	// NPMDirEnv names a directory whose node_modules holds
	// @modelcontextprotocol/server-everything,
	// @modelcontextprotocol/inspector-cli and the stdio servers
	// @modelcontextprotocol/server-memory and
	// @modelcontextprotocol/server-filesystem.
	NPMDirEnv = "TOOLPULSE_MCP_NPM_DIR"
	// NPMTestEnv set to "required" (or CI=true) makes a missing node,
	// package or network namespace fail the test instead of skipping it.
	NPMTestEnv = "TOOLPULSE_MCP_NPM_TEST"
	// netnsEnv marks the test binary re-executed inside the namespace; its
	// value is the name of the test that asked for it.
	netnsEnv = "TOOLPULSE_MCPTEST_NETNS"
)

// everythingPackage is the npm package Everything runs.
const everythingPackage = "@modelcontextprotocol/server-everything"

// npmRequired reports whether the npm server's tests must run here.
func npmRequired() bool {
	return os.Getenv("CI") == "true" || os.Getenv(NPMTestEnv) == "required"
}

// unavailable skips t, or fails it where the npm tests are required: a
// real server nobody here wrote must be met in CI, not skipped.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if npmRequired() {
		t.Fatalf("%s, and the npm server test is required here (CI=true or %s=required)", msg, NPMTestEnv)
	}
	t.Skipf("%s (%s=required makes this a failure)", msg, NPMTestEnv)
}

// Everything is an installed @modelcontextprotocol/server-everything and
// the node that runs it.
type Everything struct {
	Node    string // the node binary
	Entry   string // the package's bin script
	Version string // the package's version
}

// FindEverything locates node and the package under $TOOLPULSE_MCP_NPM_DIR,
// reading the entry point from the package's own package.json. Without
// them the test is skipped, or failed where it is required.
func FindEverything(t *testing.T) Everything {
	t.Helper()
	p := findPackage(t, everythingPackage)
	return Everything{Node: p.node, Entry: p.entry, Version: p.version}
}

// npmPackage is an installed npm package with a bin script, and the node
// that runs it.
type npmPackage struct {
	node, entry, version string
}

// findPackage locates node and pkg under $TOOLPULSE_MCP_NPM_DIR, reading
// the entry point from the package's own package.json. Without them the
// test is skipped, or failed where it is required.
func findPackage(t *testing.T, pkg string) npmPackage {
	t.Helper()
	p := npmPackage{node: findNode(t)}
	dir := os.Getenv(NPMDirEnv)
	if dir == "" {
		unavailable(t, "%s is not set (npm install --prefix DIR %s, then %s=DIR)", NPMDirEnv, pkg, NPMDirEnv)
	}
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg))
	b, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		unavailable(t, "%s is not installed under %s: %v", pkg, dir, err)
	}
	var manifest struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatalf("%s/package.json: %v", pkgDir, err)
	}
	// bin is a path, or a map of command names to paths.
	var bin string
	if json.Unmarshal(manifest.Bin, &bin) != nil {
		var bins map[string]string
		if err := json.Unmarshal(manifest.Bin, &bins); err != nil || len(bins) != 1 {
			t.Fatalf("%s/package.json: bin %s is not one script", pkgDir, manifest.Bin)
		}
		for _, path := range bins {
			bin = path
		}
	}
	p.entry, p.version = filepath.Join(pkgDir, filepath.FromSlash(bin)), manifest.Version
	if _, err := os.Stat(p.entry); err != nil {
		t.Fatalf("%s's entry point: %v", pkg, err)
	}
	return p
}

// Start runs the server's Streamable HTTP transport (PORT=N node ENTRY
// streamableHttp) and returns its endpoint, http://127.0.0.1:N/mcp, once
// it accepts connections. The server listens on every interface: call
// Start only inside InPrivateNetwork. It is stopped when the test ends;
// its output is shown if the test failed.
func (e Everything) Start(t *testing.T) string {
	t.Helper()
	port := freePort(t)
	return nodeServer{
		name: everythingPackage,
		port: port,
		node: e.Node,
		args: []string{e.Entry, "streamableHttp"},
		// Only what node needs: the server has a get-env tool.
		env: []string{"PORT=" + port, "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()},
	}.start(t)
}

// InPrivateNetwork runs fn inside a private network namespace whose only
// interface is loopback, so that a server there that listens on every
// interface can be reached by nothing but the test. A process cannot
// change the network namespace of a running Go program's threads
// reliably, so the test binary runs itself again, limited to this test
// (-test.run), under `unshare -n` (`unshare -rn`, a user namespace, when
// not root) with loopback brought up by `ip link set lo up`, and a marker
// in its environment; there InPrivateNetwork calls fn, and everything fn
// starts and dials (node, the SDK's client) lives in the namespace. Here
// it reports the child's verdict: its failure fails t, its skip skips t,
// its output is logged. Without unshare or ip, or the right to use them,
// t is skipped, or failed where the npm tests are required.
func InPrivateNetwork(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	if os.Getenv(netnsEnv) == t.Name() {
		ifaces, err := net.Interfaces()
		if err != nil {
			t.Fatal(err)
		}
		for _, iface := range ifaces {
			if iface.Flags&net.FlagLoopback == 0 {
				t.Fatalf("re-executed to run in a private network namespace, but %s is here too", iface.Name)
			}
		}
		fn(t)
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		unavailable(t, "no unshare on PATH (util-linux)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		unavailable(t, "no ip on PATH (iproute2)")
	}
	flags := "-n"
	if os.Geteuid() != 0 {
		flags = "-rn"
	}
	const up = `ip link set lo up && exec "$@"`
	if out, err := exec.CommandContext(t.Context(), unshare, flags, "--", "sh", "-c", up, "sh", "true").CombinedOutput(); err != nil {
		unavailable(t, "cannot make a network namespace (unshare %s): %v: %s", flags, err, strings.TrimSpace(string(out)))
	}

	var pattern []string
	for _, part := range strings.Split(t.Name(), "/") {
		pattern = append(pattern, "^"+regexp.QuoteMeta(part)+"$")
	}
	args := []string{flags, "--", "sh", "-c", up, "sh", os.Args[0],
		"-test.run=" + strings.Join(pattern, "/"), "-test.count=1", "-test.v=true"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	cmd := exec.CommandContext(t.Context(), unshare, args...)
	cmd.Env = append(os.Environ(), netnsEnv+"="+t.Name())
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	text := string(out)
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit):
		t.Fatalf("running the test in a network namespace: %v\n%s", err, text)
	case err != nil:
		t.Fatalf("the test failed in its network namespace (%v):\n%s", err, text)
	case strings.Contains(text, "--- SKIP: "+t.Name()):
		unavailable(t, "skipped in its network namespace:\n%s", text)
	case !strings.Contains(text, "--- PASS: "+t.Name()):
		t.Fatalf("the test did not run in its network namespace:\n%s", text)
	}
	t.Logf("in a private network namespace:\n%s", text)
}
