package runner

import (
	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// probeTarget is what a probe calls, as its alerts name it
// (results.Alert.Target): never a query, userinfo or header.
type probeTarget struct {
	// Call is a single probe's call: "POST https://host/path" or "tool
	// NAME at https://host/path"; "" for a steps probe.
	Call string
	// Steps are a steps probe's calls by step name, each as
	// "step NAME: CALL"; nil for a single probe.
	Steps map[string]string
}

// probeTargets returns what each of cfg's probes calls, by probe name, as
// RecorderOptions.Targets takes it.
func probeTargets(cfg *checks.Config) map[string]probeTarget {
	out := make(map[string]probeTarget, len(cfg.Probes))
	for _, p := range cfg.Probes {
		if len(p.Steps) == 0 {
			out[p.Name] = probeTarget{Call: callTarget(p.Request, p.MCP)}
			continue
		}
		t := probeTarget{Steps: make(map[string]string, len(p.Steps))}
		for _, st := range p.Steps {
			if call := callTarget(st.Request, st.MCP); call != "" {
				t.Steps[st.Name] = "step " + st.Name + ": " + call
			}
		}
		out[p.Name] = t
	}
	return out
}

// callTarget names one call: an MCP tool on its server, or an HTTP request.
func callTarget(req checks.Request, mcp *checks.MCP) string {
	if mcp != nil {
		return results.ToolTarget(mcp.Tool, results.MCPServer(mcp.URL))
	}
	return results.HTTPTarget(req.Method, req.URL)
}

// of names what run r called that its alert is about: the call of a single
// probe, the deciding step's for a steps run that failed, or the step
// whose answer drifted; "" when unknown (a steps run that passed names no
// one step).
func (t probeTarget) of(r *results.Result, drift *results.Drift) string {
	step := r.Step
	if drift != nil && drift.Step != "" {
		step = drift.Step
	}
	if step != "" {
		return t.Steps[step]
	}
	return t.Call
}
