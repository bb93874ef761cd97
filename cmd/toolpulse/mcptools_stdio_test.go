package main

import (
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/internal/mcptest"
)

// TestMCPToolsCommand: `mcp tools -- COMMAND` starts a stdio server from
// npm and lists its tools; --env reaches it and is never printed; a server
// that cannot start is exit 69.
func TestMCPToolsCommand(t *testing.T) {
	memory := mcptest.FindNPMServer(t, mcptest.MemoryPackage)
	mcptest.InPrivateNetwork(t, func(t *testing.T) {
		path := t.TempDir() + "/s3cret-memory.jsonl"
		code, out, errOut := runMCPTools(t, "--env", "MEMORY_FILE_PATH="+path, "--", memory.Node, memory.Entry)
		if code != exitOK {
			t.Fatalf("exit %d, stderr %s", code, errOut)
		}
		for _, want := range []string{"read_graph           read-only", "server memory-server "} {
			if !strings.Contains(out, want) {
				t.Errorf("listing has no %q:\n%s", want, out)
			}
		}
		code, _, errOut = runMCPTools(t, "--env", "MEMORY_FILE_PATH="+path, "--", memory.Node, path)
		if code != exitServiceUnavailable || !strings.Contains(errOut, "mcp tools: server_exited: ") {
			t.Errorf("a script that does not exist: exit %d, stderr %s; want %d and server_exited", code, errOut, exitServiceUnavailable)
		}
	})
}

// TestMCPToolsCommandUsage: one server, at a URL or by a command, with the
// flags that belong to it.
func TestMCPToolsCommandUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "want --url URL, or a stdio server's command after --"},
		{[]string{"--url", "http://127.0.0.1:1/mcp", "--", "node"}, "--url and a command: want one server"},
		{[]string{"--url", "http://127.0.0.1:1/mcp", "--env", "A=b"}, "--env and --dir are for a stdio server's command"},
		{[]string{"--header", "Authorization=x", "--", "node"}, "--header is for a --url"},
		{[]string{"--env", "s3cret", "--", "node"}, "--env #1: want NAME=VALUE (the value is not shown)"},
	} {
		code, _, errOut := runMCPTools(t, tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, code, errOut, exitUsage, tt.want)
		}
	}
}
