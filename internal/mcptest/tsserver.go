package mcptest

import (
	_ "embed"
	"os"
	"path/filepath"
	"testing"
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
	node := findNode(t)
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
	port := freePort(t)
	return nodeServer{
		name: "tsserver",
		port: port,
		node: node,
		args: []string{script, port},
		env:  []string{"NODE_PATH=" + modules, "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()},
	}.start(t)
}
