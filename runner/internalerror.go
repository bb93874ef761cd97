package runner

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/google/uuid"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// recordInternalError records an internal_error for the run of p that panicked
// with v, under the run's operation id when it had one. r is what the run
// produced before the panic. The shape is dropped: drift detection may be
// what panicked.
func (d *Daemon) recordInternalError(ctx context.Context, p *checks.Probe, r *results.Result, v any) {
	msg := d.redact(fmt.Sprintf("toolpulse panicked while handling the run: %v", v))
	d.logger.Error("panic in probe run", "probe", p.Name, "operation_id", r.OperationID,
		"panic", msg, "stack", string(debug.Stack()))
	ir := results.Result{
		OperationID: r.OperationID,
		Probe:       p.Name,
		Kind:        p.Kind(),
		MCP:         p.MCPTarget(),
		StartedAt:   r.StartedAt,
		Duration:    r.Duration,
		Attempts:    r.Attempts,
		HTTPStatus:  r.HTTPStatus,
		Consumer:    r.Consumer,
		Node:        d.node,
		Location:    d.storedLocation(),
	}
	if ir.OperationID == "" {
		ir.OperationID = uuid.NewString()
	}
	if ir.StartedAt.IsZero() {
		ir.StartedAt = time.Now()
	}
	if ir.Consumer == (results.ConsumerRef{}) && p.Consumer() != nil {
		ir.Consumer = p.Consumer().Ref()
	}
	ir.Fail(results.NewError(results.CodeInternalError, "%s", msg))

	defer func() {
		if v := recover(); v != nil {
			d.logger.Error("panic again while recording an internal error; the run is lost", "probe", p.Name,
				"operation_id", ir.OperationID, "panic", d.redact(fmt.Sprint(v)))
		}
	}()
	dec, err := d.rec.Record(ctx, &ir)
	d.report(&ir, dec, err)
}
