package mcpsdk_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// TestStdioNPMServers meets real stdio servers nobody here wrote, from npm,
// started by Call for each session, inside a private network namespace (a
// package under watch has no business on the network here). What
// server-memory and server-filesystem 2026.8.31 were seen to do, and what
// this test holds them to:
//   - both answer the SDK's server/discover with a JSON-RPC error and
//     negotiate 2025-11-25 through initialize;
//   - both log a banner to stderr ("Knowledge Graph MCP Server running on
//     stdio", "Secure MCP Filesystem Server running on stdio"), never to
//     stdout;
//   - memory's read_graph on an empty MEMORY_FILE_PATH answers
//     structuredContent {"entities": [], "relations": []};
//   - filesystem's list_directory lists only inside the directories it is
//     given, and answers isError: true ("Access denied") outside them;
//   - both exit when their stdin closes, well within the grace period.
func TestStdioNPMServers(t *testing.T) {
	memory := mcptest.FindNPMServer(t, mcptest.MemoryPackage)
	fs := mcptest.FindNPMServer(t, mcptest.FilesystemPackage)
	mcptest.InPrivateNetwork(t, func(t *testing.T) {
		defer testkit.NoLeaks(t)()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "canary.txt"), []byte("tweet"), 0o600); err != nil {
			t.Fatal(err)
		}
		call := func(t *testing.T, cmd *mcpsdk.Command, tool string, args map[string]any) *mcpsdk.Answer {
			t.Helper()
			start := time.Now()
			ans, err := mcpsdk.Call(t.Context(), mcpsdk.Request{Command: cmd, Tool: tool, Arguments: args, MaxBodyBytes: 1 << 20})
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			t.Logf("%s %s: %v in %v, protocol %s", cmd.Argv[1], tool, ans.Err, time.Since(start), ans.ProtocolVersion)
			for _, x := range ans.Exchanges {
				t.Logf("  %-26s %v", x.Method, x.Duration)
			}
			return ans
		}

		t.Run("memory", func(t *testing.T) {
			cmd := &mcpsdk.Command{Argv: []string{memory.Node, memory.Entry},
				Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}}
			ans := call(t, cmd, "read_graph", nil)
			if ans.Err != nil {
				t.Fatalf("read_graph: %v", ans.Err)
			}
			var graph struct {
				Entities  []any `json:"entities"`
				Relations []any `json:"relations"`
			}
			if err := json.Unmarshal(ans.Response, &graph); err != nil || graph.Entities == nil || graph.Relations == nil {
				t.Errorf("Response = %s (%v), want an empty graph", ans.Response, err)
			}
			if ans.ProtocolVersion != "2025-11-25" {
				t.Errorf("ProtocolVersion = %q, want 2025-11-25", ans.ProtocolVersion)
			}
			list, err := mcpsdk.ListTools(t.Context(), mcpsdk.ListRequest{Command: cmd, MaxBodyBytes: 1 << 20})
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			if got := strings.Join(names, ","); !strings.Contains(got, "create_entities") || !strings.Contains(got, "read_graph") {
				t.Errorf("tools %s, want create_entities and read_graph among them", got)
			}
			if list.Server.Name == "" {
				t.Errorf("Server = %+v, want the serverInfo", list.Server)
			}
		})
		t.Run("filesystem", func(t *testing.T) {
			cmd := &mcpsdk.Command{Argv: []string{fs.Node, fs.Entry, dir}}
			ans := call(t, cmd, "list_directory", map[string]any{"path": dir})
			if ans.Err != nil {
				t.Fatalf("list_directory: %v", ans.Err)
			}
			if !strings.Contains(string(ans.Response), "canary.txt") {
				t.Errorf("Response = %s, want canary.txt listed", ans.Response)
			}
			denied := call(t, cmd, "list_directory", map[string]any{"path": "/etc"})
			if denied.Err == nil || denied.Err.Code != results.CodeToolError {
				t.Errorf("list_directory /etc: Err = %v, want tool_error", denied.Err)
			}
		})
		t.Run("missing_package", func(t *testing.T) {
			// A node that cannot load the server: it starts, and exits
			// before answering, saying why on stderr.
			cmd := &mcpsdk.Command{Argv: []string{memory.Node, filepath.Join(dir, "no-such-server.js")}}
			ans := call(t, cmd, "read_graph", nil)
			if ans.Err == nil || ans.Err.Code != results.CodeServerExited || !strings.Contains(ans.Err.Message, "Error: Cannot find module") {
				t.Errorf("Err = %v, want server_exited with node's stderr", ans.Err)
			}
		})
	})
}
