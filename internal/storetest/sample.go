package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// SampleStart is when RecordSample's first run starts.
var SampleStart = t0

// RecordSample records a varied history into s, for tools that move or
// read whole histories (toolpulse store copy): n plain runs of three
// probes over n minutes, every outcome, retries and many durations; a
// response drift with its alert state and alerts; a steps run with its
// steps and a step's shape; an MCP run; a silence; a reset profile.
func RecordSample(t testing.TB, s Store, n int) {
	t.Helper()
	ctx := context.Background()
	outcomes := []struct {
		o    results.Outcome
		code results.Code
	}{{results.Pass, ""}, {results.Pass, ""}, {results.ContractError, "missing_field"}, {results.Unavailable, results.CodeTimeout}}
	for i := range n {
		oc := outcomes[i%len(outcomes)]
		r := runAt(fmt.Sprintf("sample-%06d", i), []string{"alpha", "beta", "gamma"}[i%3],
			t0.Add(time.Duration(i)*time.Minute), oc.o, oc.code, (i*37)%3000, 1+i%3)
		recordRun(t, s, &results.RunRecord{Result: r})
	}
	recordRun(t, s, &results.RunRecord{Result: passAfterRetry("sample-first")})
	recordRun(t, s, driftRun("sample-drift"))
	recordRun(t, s, &results.RunRecord{Result: stepsRun("sample-steps")})
	recordRun(t, s, &results.RunRecord{Result: mcpRun("sample-mcp")})
	recordRun(t, s, alertRun("sample-alert", results.AlertFiring, time.Second, results.DeliveryPending))
	if _, err := s.AddSilence(ctx, results.Silence{Matchers: results.Matchers{Probes: []string{"weather"}},
		StartsAt: t0, EndsAt: t0.Add(time.Hour), Reason: "maintenance", CreatedAt: t0}); err != nil {
		t.Fatalf("AddSilence: %v", err)
	}
	if _, err := s.ResetProfile(ctx, "alpha", t0.Add(time.Hour)); err != nil {
		t.Fatalf("ResetProfile: %v", err)
	}
}
