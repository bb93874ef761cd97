package mcptest

import "testing"

// The stdio servers from npm that stdio probes are tested against, at the
// versions .ci/run installs.
const (
	MemoryPackage     = "@modelcontextprotocol/server-memory"
	FilesystemPackage = "@modelcontextprotocol/server-filesystem"
	// MemoryPackageOld is server-memory 2026.1.26 under an npm alias,
	// installed beside the current one: the upgrade a definition drift
	// test makes.
	MemoryPackageOld = "server-memory-2026.1.26"
)

// NPMServer is an installed npm MCP server package and the node that runs
// it: Node Entry is the command that starts it on stdio.
type NPMServer struct {
	Node    string // the node binary
	Entry   string // the package's bin script
	Version string // the package's version
}

// FindNPMServer locates node and pkg under $TOOLPULSE_MCP_NPM_DIR, as
// FindEverything does: without them the test is skipped, or failed where
// the npm tests are required.
func FindNPMServer(t *testing.T, pkg string) NPMServer {
	t.Helper()
	p := findPackage(t, pkg)
	return NPMServer{Node: p.node, Entry: p.entry, Version: p.version}
}
