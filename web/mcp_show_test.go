package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// TestStatusAndAPIShowMCPProbes: the overview marks an MCP probe with its
// tool and server, and /api/v1/probes gives its kind and mcp; neither
// shows the URL's credentials or query.
func TestStatusAndAPIShowMCPProbes(t *testing.T) {
	f := newStatusFixture(t)
	_, body := f.get(t, "/")
	if want := `MCP tool <code>get-weather</code> at <code>http://tools.example.com:3901/mcp</code>`; !strings.Contains(body, want) {
		t.Errorf("/ lacks %q", want)
	}
	if n := strings.Count(body, "MCP tool"); n != 1 {
		t.Errorf("/ marks %d probes as MCP, want 1 (fresh)", n)
	}

	_, body = f.get(t, "/api/v1/probes")
	var got struct {
		Probes []struct {
			Name string             `json:"name"`
			Kind results.ProbeKind  `json:"kind"`
			MCP  *results.MCPTarget `json:"mcp"`
		} `json:"probes"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	for _, p := range got.Probes {
		want := results.ProbeHTTP
		if p.Name == "fresh" {
			want = results.ProbeMCP
			if p.MCP == nil || *p.MCP != (results.MCPTarget{Tool: "get-weather", Server: "http://tools.example.com:3901/mcp"}) {
				t.Errorf("/api/v1/probes: fresh's mcp = %+v", p.MCP)
			}
		} else if p.MCP != nil {
			t.Errorf("/api/v1/probes: HTTP probe %s has mcp %+v", p.Name, p.MCP)
		}
		if p.Kind != want {
			t.Errorf("/api/v1/probes: %s's kind = %q, want %q", p.Name, p.Kind, want)
		}
	}
	for _, path := range []string{"/", "/probes/fresh", "/api/v1/probes"} {
		if _, body := f.get(t, path); strings.Contains(body, "pw-SECRET") || strings.Contains(body, "t0k3n") {
			t.Errorf("%s shows the MCP URL's credentials or query", path)
		}
	}
}

// TestMCPHealthSaysKind: list_tool_health says which probe is an MCP
// probe, with its tool and server.
func TestMCPHealthSaysKind(t *testing.T) {
	f := newStatusFixture(t)
	status, out := mcpCall(t, f.srv.URL, "", "tools/call", map[string]any{"name": mcpsdk.ToolListHealth, "arguments": map[string]any{}})
	if status != http.StatusOK {
		t.Fatalf("tools/call list_tool_health: HTTP %d", status)
	}
	b, _ := json.Marshal(out["result"].(map[string]any)["structuredContent"])
	var got struct {
		Probes []mcpsdk.ToolHealth `json:"probes"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, h := range got.Probes {
		want := mcpsdk.ToolHealth{Kind: "http"}
		if h.Probe == "fresh" {
			want = mcpsdk.ToolHealth{Kind: "mcp", MCPTool: "get-weather", MCPServer: "http://tools.example.com:3901/mcp"}
		}
		if h.Kind != want.Kind || h.MCPTool != want.MCPTool || h.MCPServer != want.MCPServer {
			t.Errorf("%s: kind %q, tool %q, server %q; want %q, %q, %q", h.Probe, h.Kind, h.MCPTool, h.MCPServer, want.Kind, want.MCPTool, want.MCPServer)
		}
	}
}
