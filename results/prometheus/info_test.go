package prometheus_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolpulse/toolpulse/results"
	metrics "github.com/toolpulse/toolpulse/results/prometheus"
)

// TestProbeInfo: toolpulse_probe_info has one series per configured
// probe, saying its kind and, for MCP, its tool; a reload replaces the
// set, so a removed probe leaves none behind; runs add no kind label to
// the per-probe series.
func TestProbeInfo(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, reg, "toolpulse_probe_info"); n != 0 {
		t.Errorf("probe_info before SetProbeInfo: %d series, want 0", n)
	}
	m.SetProbeInfo([]metrics.ProbeInfo{
		{Probe: "search", Kind: results.ProbeHTTP},
		{Probe: "docs_tool", Kind: results.ProbeMCP, Tool: "search_docs"},
		{Probe: "bare"},              // no kind: an HTTP probe
		{Probe: "bad\xff", Tool: ""}, // not a label value
	})
	gatherAndCompare(t, reg, `# HELP toolpulse_probe_info Always 1, one series per configured probe: kind is http, mcp or steps, tool an MCP probe's tool (empty for HTTP).
# TYPE toolpulse_probe_info gauge
toolpulse_probe_info{kind="http",probe="bare",tool=""} 1
toolpulse_probe_info{kind="http",probe="search",tool=""} 1
toolpulse_probe_info{kind="mcp",probe="docs_tool",tool="search_docs"} 1
`, "toolpulse_probe_info")

	m.RunFinished(run("docs_tool", "", time.Second, 1, 1))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "toolpulse_probe_info" {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				// The alert and drift counters' kind is the alert's or the
				// drift's, not the probe's.
				ownKind := l.GetName() == "kind" && (strings.HasPrefix(mf.GetName(), "toolpulse_alerts_") || mf.GetName() == "toolpulse_drift_events_total")
				if (l.GetName() == "tool" || l.GetName() == "kind") && !ownKind {
					t.Errorf("%s has a %s label: %v", mf.GetName(), l.GetName(), s.GetLabel())
				}
			}
		}
	}

	// A reload that drops search and changes docs_tool's tool.
	m.SetProbeInfo([]metrics.ProbeInfo{{Probe: "docs_tool", Kind: results.ProbeMCP, Tool: "search_docs_v2"}})
	gatherAndCompare(t, reg, `# HELP toolpulse_probe_info Always 1, one series per configured probe: kind is http, mcp or steps, tool an MCP probe's tool (empty for HTTP).
# TYPE toolpulse_probe_info gauge
toolpulse_probe_info{kind="mcp",probe="docs_tool",tool="search_docs_v2"} 1
`, "toolpulse_probe_info")
}

// TestProbeInfoAllocations: the daemon keeps toolpulse_probe_info's
// series of every configured probe for its whole life, so setting them
// allocates a few times per call, not per probe (a const metric per probe
// took six allocations and some 500 bytes).
func TestProbeInfoAllocations(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	infos := make([]metrics.ProbeInfo, 1000)
	for i := range infos {
		infos[i] = metrics.ProbeInfo{Probe: fmt.Sprintf("probe-%04d", i), Kind: results.ProbeHTTP}
		if i%2 == 0 {
			infos[i] = metrics.ProbeInfo{Probe: infos[i].Probe, Kind: results.ProbeMCP, Tool: "search"}
		}
	}
	if n := testing.AllocsPerRun(5, func() { m.SetProbeInfo(infos) }); n > 20 {
		t.Errorf("SetProbeInfo of %d probes: %.0f allocations, want at most 20", len(infos), n)
	}
}
