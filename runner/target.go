package runner

import (
	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// probeTarget is what a probe calls, as its alerts name it
// (results.Alert.Target): never a query, userinfo or header. A single
// probe's one call is "POST https://host/path" or "tool NAME at
// https://host/path"; a probe of named steps holds each step's call by
// step name, as "step NAME: CALL". The recorder keeps one per probe, so a
// single probe's is its one string, without a map.
type probeTarget struct {
	call  string            // a single probe's call
	steps map[string]string // a probe of named steps: each step's call
}

// probeTargets returns what each of cfg's probes calls, by probe name, as
// RecorderOptions.Targets takes it.
func probeTargets(cfg *checks.Config) map[string]probeTarget {
	out := make(map[string]probeTarget, len(cfg.Probes))
	for _, p := range cfg.Probes {
		if len(p.Steps) == 1 && p.Steps[0].Name == "" {
			out[p.Name] = probeTarget{call: callTarget(p.Steps[0].Request, p.Steps[0].MCP)}
			continue
		}
		t := probeTarget{steps: make(map[string]string, len(p.Steps))}
		for _, st := range p.Steps {
			call := callTarget(st.Request, st.MCP)
			if st.Name != "" && call != "" {
				call = "step " + st.Name + ": " + call
			}
			t.steps[st.Name] = call
		}
		out[p.Name] = t
	}
	return out
}

// callTarget names one call: an MCP tool on its server, or an HTTP request.
func callTarget(req checks.Request, mcp *checks.MCP) string {
	if mcp != nil {
		return results.ToolTarget(mcp.Tool, mcp.Server())
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
	if t.steps == nil {
		if step == "" {
			return t.call
		}
		return ""
	}
	return t.steps[step]
}
