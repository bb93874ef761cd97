package runner

// The engine's providers, probes and printers (internal/probetest) under
// the names the daemon's tests call them by. The larger refund desk is
// internal/refunddesk.

import (
	"context"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/probetest"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
	"github.com/toolpulse/toolpulse/runner/prober"
)

const (
	bodyOriginalList = probetest.BodyOriginalList
	bodyItemsWrapper = probetest.BodyItemsWrapper
)

var (
	testProbe  = probetest.Probe
	serve      = probetest.Serve
	jsonBody   = probetest.JSONBody
	dump       = probetest.Dump
	searchTool = probetest.SearchTool
	mcpProbe   = probetest.MCPProbe
	closedPort = probetest.ClosedPort
	searchBody = probetest.SearchBody
)

func runSteps(t *testing.T, p *checks.Probe) results.Result {
	t.Helper()
	return prober.NewExecutor(prober.Options{Redactor: results.NewRedactor()}).Run(context.Background(), p)
}

// shapeOf is the structural shape of a decoded JSON body (SPEC §5), as
// runner/prober's shapeOf computes it.
func shapeOf(v any) *results.Shape {
	s := shape.Of(v)
	return &results.Shape{Fingerprint: s.Fingerprint(), Canonical: s.String(), Structure: s}
}
