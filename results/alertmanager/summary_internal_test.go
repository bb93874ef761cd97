package alertmanager

import (
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// TestSummaryNamesTheStep: the summary of a steps probe's drift says which
// step's answer changed; a single probe's drift reads as it always did.
func TestSummaryNamesTheStep(t *testing.T) {
	r := results.Result{OperationID: "op-1", Probe: "refund_order_31", Outcome: results.Pass, StartedAt: time.Unix(0, 0)}
	a := results.NewAlert(results.AlertDrift, &r, r.StartedAt)
	a.Drift = &results.Drift{Probe: r.Probe, Step: "verify", Baseline: "aaaaaaaaaaaaaaaa", Current: "bbbbbbbbbbbbbbbb"}
	if got := summary(a); !strings.HasPrefix(got, "refund_order_31 step verify response shape changed (aaaaaaaaaaaaaaaa → bbbbbbbbbbbbbbbb)") {
		t.Errorf("summary of a step's drift: %q", got)
	}
	a.Drift.Step = ""
	if got := summary(a); !strings.HasPrefix(got, "refund_order_31 response shape changed (") {
		t.Errorf("summary of a single probe's drift: %q", got)
	}
}
