package mcpsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/mcpsdk"
)

// fixedHealth answers with a fixed list, or fails, and counts the asks.
type fixedHealth struct {
	list  []mcpsdk.ToolHealth
	err   error
	calls atomic.Int32
}

func (f *fixedHealth) Health(context.Context) ([]mcpsdk.ToolHealth, error) {
	f.calls.Add(1)
	return f.list, f.err
}

// TestHealthEndpoint: the SDK's own client sees the two read-only tools,
// list_tool_health gives every probe as structured content, get_tool_health
// one of them, and an unknown probe or a failing source is a tool error,
// never a protocol error or an empty success.
func TestHealthEndpoint(t *testing.T) {
	checkLeaks := testkit.NoLeaks(t)
	src := &fixedHealth{list: []mcpsdk.ToolHealth{
		{Probe: "search", Healthy: false, Outcome: "contract_error", Code: "unsupported_results_container",
			Message: "results is map", FailingSince: "2026-12-02T03:00:00.000Z", LastRunAt: "2026-12-02T03:10:00.000Z",
			LastPassAt: "2026-12-02T02:59:00.000Z", Firing: true, Labels: map[string]string{"team": "search"}},
		{Probe: "weather", Healthy: true, Outcome: "pass", LastRunAt: "2026-12-02T03:10:00.000Z", LastPassAt: "2026-12-02T03:10:00.000Z"},
	}}
	srv := httptest.NewServer(mcpsdk.HealthHandler(src, "1.2.3"))
	cs := connect(t, srv.URL)
	ctx := t.Context()

	if info := cs.InitializeResult().ServerInfo; info == nil || info.Name != "toolpulse" || info.Version != "1.2.3" {
		t.Errorf("serverInfo %+v, want toolpulse 1.2.3", info)
	}
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range listed.Tools {
		names = append(names, tool.Name)
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || tool.OutputSchema == nil {
			t.Errorf("%s: annotations %+v, output schema %v; want read-only with an output schema", tool.Name, tool.Annotations, tool.OutputSchema)
		}
	}
	if strings.Join(names, ",") != "get_tool_health,list_tool_health" && strings.Join(names, ",") != "list_tool_health,get_tool_health" {
		t.Errorf("tools %v, want list_tool_health and get_tool_health", names)
	}

	call := func(name string, args any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	res := call(mcpsdk.ToolListHealth, map[string]any{})
	var list struct {
		Probes []mcpsdk.ToolHealth `json:"probes"`
	}
	decodeStructured(t, res, &list)
	if res.IsError || len(list.Probes) != 2 || list.Probes[0].Probe != "search" || list.Probes[0].Healthy ||
		list.Probes[0].Code != "unsupported_results_container" || !list.Probes[1].Healthy || list.Probes[0].Labels["team"] != "search" {
		t.Errorf("list_tool_health = %+v (isError %v)", list.Probes, res.IsError)
	}

	res = call(mcpsdk.ToolGetHealth, map[string]any{"probe": "weather"})
	var one mcpsdk.ToolHealth
	decodeStructured(t, res, &one)
	if res.IsError || one.Probe != "weather" || !one.Healthy || one.Outcome != "pass" {
		t.Errorf("get_tool_health weather = %+v (isError %v)", one, res.IsError)
	}

	res = call(mcpsdk.ToolGetHealth, map[string]any{"probe": "wether"})
	if !res.IsError || !strings.Contains(textOf(res), `unknown probe "wether"`) {
		t.Errorf("get_tool_health of an unknown probe: isError %v, %q; want a tool error naming it", res.IsError, textOf(res))
	}
	src.err = errors.New("database is locked")
	res = call(mcpsdk.ToolListHealth, map[string]any{})
	if !res.IsError || !strings.Contains(textOf(res), "database is locked") {
		t.Errorf("list_tool_health with a failing store: isError %v, %q; want a tool error", res.IsError, textOf(res))
	}
	if got := src.calls.Load(); got != 4 {
		t.Errorf("the source was asked %d times, want 4 (once per call, nothing cached)", got)
	}
	cs.Close()
	srv.Close()
	checkLeaks()
}

func decodeStructured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

func textOf(res *mcp.CallToolResult) string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}
