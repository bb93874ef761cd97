package mcpsdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolHealth is one probe as toolpulse's own MCP endpoint reports it: can
// the tool the probe watches be trusted right now, and since when not.
type ToolHealth struct {
	Probe string `json:"probe" jsonschema:"the probe's name, as in checks.yaml"`
	// Kind is what the probe calls; MCPTool and MCPServer name an MCP
	// probe's tool and server (scheme, host and path).
	Kind      string `json:"kind" jsonschema:"http for an HTTP endpoint, mcp for an MCP tool"`
	MCPTool   string `json:"mcp_tool,omitempty" jsonschema:"an MCP probe's tool"`
	MCPServer string `json:"mcp_server,omitempty" jsonschema:"the MCP server an MCP probe calls: scheme, host and path"`
	// Healthy is true when the probe's latest run passed.
	Healthy bool `json:"healthy" jsonschema:"true when the latest run passed"`
	// Outcome and Code are those of the latest run; Outcome is empty
	// before the first run.
	Outcome string `json:"outcome,omitempty" jsonschema:"pass, contract_error or unavailable; absent before the first run"`
	Code    string `json:"code,omitempty" jsonschema:"why the latest run did not pass, a stable snake_case code"`
	Message string `json:"message,omitempty" jsonschema:"the latest failure in one line"`
	// FailingSince is when the current failure began (RFC 3339); empty
	// while healthy.
	FailingSince string `json:"failing_since,omitempty" jsonschema:"when the current failure began (RFC 3339)"`
	LastRunAt    string `json:"last_run_at,omitempty" jsonschema:"when the latest run started (RFC 3339)"`
	LastPassAt   string `json:"last_pass_at,omitempty" jsonschema:"when the latest passing run started (RFC 3339)"`
	// Firing is true while an alert about the probe is firing.
	Firing bool `json:"firing" jsonschema:"true while an alert about the probe is firing"`
	// Flapping is true while the probe's verdict changes too often to
	// alert on each change (SPEC §13): its health is not to be trusted
	// either way.
	Flapping bool              `json:"flapping,omitempty" jsonschema:"true while the probe keeps failing and passing by turns (notify.flapping)"`
	Labels   map[string]string `json:"labels,omitempty" jsonschema:"the probe's labels"`
}

// HealthSource answers the endpoint's questions from what toolpulse has
// recorded. Health returns every configured probe, in config order.
type HealthSource interface {
	Health(ctx context.Context) ([]ToolHealth, error)
}

// ErrUnknownProbe is what a HealthSource's caller reports for a probe the
// config does not have; the endpoint answers it as a tool error.
var ErrUnknownProbe = errors.New("unknown probe")

// Tool names of the endpoint (SPEC §10).
const (
	ToolListHealth = "list_tool_health"
	ToolGetHealth  = "get_tool_health"
)

// healthList is list_tool_health's answer: structured content must be an
// object.
type healthList struct {
	Probes []ToolHealth `json:"probes" jsonschema:"every configured probe, in config order"`
}

type healthQuery struct {
	Probe string `json:"probe" jsonschema:"the probe's name, as list_tool_health gives it"`
}

// HealthHandler returns toolpulse's own MCP endpoint: a read-only,
// stateless Streamable HTTP server with two tools, list_tool_health and
// get_tool_health, so that an agent or a router can ask whether a tool can
// be trusted before it calls it, and route around a broken one. Every
// answer is one application/json response (no session, no stream), so
// the endpoint holds no state between requests. version is toolpulse's.
//
// The caller mounts it behind the same token rule as the rest of the HTTP
// surface. The SDK's DNS-rebinding protection stays on: a request that
// reached a loopback address with another Host is refused.
func HealthHandler(src HealthSource, version string) http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "toolpulse", Title: "toolpulse tool health", Version: version},
		&mcp.ServerOptions{Instructions: "Ask before you trust a tool: list_tool_health says which of the tools toolpulse probes are healthy now; get_tool_health says it of one."})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)}
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolListHealth,
		Title:       "List tool health",
		Description: "Every tool toolpulse probes: whether its latest check passed, its outcome and code, since when it fails, and when it last passed.",
		Annotations: readOnly,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, healthList, error) {
		all, err := src.Health(ctx)
		if err != nil {
			return nil, healthList{}, err
		}
		if all == nil {
			all = []ToolHealth{}
		}
		return nil, healthList{Probes: all}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolGetHealth,
		Title:       "Get tool health",
		Description: "One probe's health: whether its latest check passed, its outcome and code, since when it fails, and when it last passed.",
		Annotations: readOnly,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, q healthQuery) (*mcp.CallToolResult, ToolHealth, error) {
		all, err := src.Health(ctx)
		if err != nil {
			return nil, ToolHealth{}, err
		}
		for _, h := range all {
			if h.Probe == q.Probe {
				return nil, h, nil
			}
		}
		return nil, ToolHealth{}, fmt.Errorf("%w %q: list_tool_health lists the probes toolpulse has", ErrUnknownProbe, q.Probe)
	})
	return streamableHandler(srv, true)
}
