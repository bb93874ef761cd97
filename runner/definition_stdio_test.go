package runner

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/probetest"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner/prober"
)

// TestDefinitionDriftStdioUpgrade: upgrading a stdio probe's package pin
// is a definition drift like any other, with the paths that changed. The
// packages are real: server-memory 2026.1.26 lists read_graph without
// annotations, 2026.8.31 with them (readOnlyHint: true and the rest).
func TestDefinitionDriftStdioUpgrade(t *testing.T) {
	before := mcptest.FindNPMServer(t, mcptest.MemoryPackageOld)
	after := mcptest.FindNPMServer(t, mcptest.MemoryPackage)
	mcptest.InPrivateNetwork(t, func(t *testing.T) {
		f := newDefinitionFixture(t)
		file := checks.Secret(filepath.Join(t.TempDir(), "memory.jsonl"))
		run := func(srv mcptest.NPMServer) (*results.Result, []results.Alert) {
			t.Helper()
			f.clock.Advance(time.Minute)
			p := &checks.Probe{
				Name: "external_search",
				Steps: []checks.Step{{
					MCP: &checks.MCP{Command: []string{srv.Node, srv.Entry}, Env: map[string]checks.Secret{"MEMORY_FILE_PATH": file},
						Tool: "read_graph", Arguments: map[string]any{}, IsError: results.ContractError},
					Consumer: probetest.MustConsumer("graph", "response.entities", "true"),
					Timeout:  30 * time.Second,
					Retries:  checks.Retries{MaxAttempts: 1, Budget: time.Minute},
				}},
				MaxBodyBytes: 1 << 20,
			}
			r := prober.NewExecutor(prober.Options{}).Run(context.Background(), p)
			if r.Outcome != results.Pass || r.Tool == nil || r.Tool.Fingerprint == "" {
				t.Fatalf("%s %s: run %s %v, tool %+v; want a pass with the tool's definition", srv.Entry, srv.Version, r.Outcome, r.Error, r.Tool)
			}
			d := mustWrite(t, f.p, &r)
			return &r, alertsOfDrift(d.Alerts)
		}
		if _, alerts := run(before); len(alerts) != 0 || len(f.definitionDrifts()) != 0 {
			t.Fatalf("the first run of %s: %d alerts, %d drifts; want a baseline", before.Version, len(alerts), len(f.definitionDrifts()))
		}
		r, alerts := run(after)
		ds := f.definitionDrifts()
		want := `annotations: added ({"destructiveHint":false,"idempotentHint":true,"openWorldHint":false,"readOnlyHint":true})`
		if len(ds) != 1 || len(alerts) != 1 || len(ds[0].Diff) != 1 || ds[0].Diff[0] != want || ds[0].Current != r.Tool.Fingerprint {
			t.Fatalf("upgrading %s to %s: drifts %+v, %d alerts; want one drift: %s", before.Version, after.Version, ds, len(alerts), want)
		}
		if _, alerts := run(after); len(alerts) != 0 || len(f.definitionDrifts()) != 1 {
			t.Errorf("the same version again: %d alerts, %d drifts; want nothing new", len(alerts), len(f.definitionDrifts()))
		}
	})
}
