package mcptest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inspectorPackage is the npm MCP client FindInspector runs.
const inspectorPackage = "@modelcontextprotocol/inspector-cli"

// Inspector is an installed @modelcontextprotocol/inspector-cli, an MCP
// client nobody here wrote (on the TypeScript SDK), and the node that
// runs it.
type Inspector struct {
	Node    string // the node binary
	Entry   string // the package's bin script
	Version string // the package's version
}

// FindInspector locates node and the package under $TOOLPULSE_MCP_NPM_DIR,
// as FindEverything does. Without them the test is skipped, or failed
// where it is required.
func FindInspector(t *testing.T) Inspector {
	t.Helper()
	p := findPackage(t, inspectorPackage)
	return Inspector{Node: p.node, Entry: p.entry, Version: p.version}
}

// Run runs the inspector in its CLI mode against url over Streamable HTTP
// (`--cli URL --transport http`), with each of headers as a `--header
// "Name: Value"` and then args (`--method tools/list`, `--tool-name …`),
// and returns what it printed on stdout (the JSON result) and stderr. A
// nonzero exit is err, an *exec.ExitError. It is bounded by the test's
// context and 60 s.
//
// The process starts in the package's build directory: version 1.0.3
// checks for its package.json relative to the working directory and
// imports it relative to itself, and fails anywhere else.
func (in Inspector) Run(t *testing.T, url string, headers []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	argv := []string{in.Entry, "--cli", url, "--transport", "http"}
	for _, h := range headers {
		argv = append(argv, "--header", h)
	}
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, in.Node, argv...)
	cmd.Dir = filepath.Dir(in.Entry)
	// The bin script runs its client with the node on PATH; the node
	// found here comes first.
	cmd.Env = []string{"PATH=" + filepath.Dir(in.Node) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	return out.String(), strings.TrimSpace(errOut.String()), err
}
