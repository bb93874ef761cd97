package web

import (
	"context"
	"fmt"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

// mcpPath is where toolpulse's own MCP endpoint is served (SPEC §10).
const mcpPath = "/mcp"

// toolHealth answers toolpulse's MCP endpoint from the store: for every
// probe of the running config, its latest run, its alert state and, for a
// probe that is not healthy, its latest pass (one indexed read each).
type toolHealth struct {
	store  Store
	probes func() []*checks.Probe
}

// Health implements mcpsdk.HealthSource.
func (h toolHealth) Health(ctx context.Context) ([]mcpsdk.ToolHealth, error) {
	latest, err := h.store.Latest(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the latest runs failed: %w", err)
	}
	byProbe := make(map[string]*results.Result, len(latest))
	for i := range latest {
		byProbe[latest[i].Probe] = &latest[i]
	}
	probes := h.probes()
	states, err := h.store.AlertStates(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the alert state failed: %w", err)
	}
	out := make([]mcpsdk.ToolHealth, 0, len(probes))
	for _, p := range probes {
		th := mcpsdk.ToolHealth{Probe: p.Name, Kind: string(p.Kind()), Labels: p.Labels}
		if t := p.MCPTarget(); t != nil {
			th.MCPTool, th.MCPServer = t.Tool, t.Server
		}
		if r, ok := byProbe[p.Name]; ok {
			th.Outcome, th.Code = string(r.Outcome), string(r.Code())
			th.Healthy = r.Outcome == results.Pass
			th.LastRunAt = results.FormatTime(r.StartedAt)
			if r.Error != nil {
				th.Message = results.Shorten(r.Error.Message, present.MaxMessageRunes)
			}
		}
		if st, ok := states[p.Name]; ok {
			th.Firing, th.Flapping = st.Firing, st.Flapping
			if !th.Healthy && !st.FailingSince.IsZero() {
				th.FailingSince = results.FormatTime(st.FailingSince)
			}
		}
		if th.Healthy {
			th.LastPassAt = th.LastRunAt
		} else if th.Outcome != "" {
			pass, err := h.store.History(ctx, results.HistoryQuery{Probes: []string{p.Name}, Outcomes: []results.Outcome{results.Pass}, Limit: 1})
			if err != nil {
				return nil, fmt.Errorf("reading the latest pass of %s failed: %w", p.Name, err)
			}
			if len(pass) > 0 {
				th.LastPassAt = results.FormatTime(pass[0].StartedAt)
			}
		}
		out = append(out, th)
	}
	return out, nil
}
