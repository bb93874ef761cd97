package prober

import (
	"net/http"

	"github.com/toolpulse/toolpulse/results"
)

// startTrace gives a run of a probe with trace on its trace (SPEC §10.1):
// one per run, whose id the result keeps. A random source that fails
// leaves the run untraced, not undone: the trace helps find the run, it
// is not what the run checks.
func (op *operation) startTrace(res *results.Result) {
	if !op.p.Trace || op.canned != nil {
		return
	}
	tr, err := results.NewTrace(op.e.traceRand, op.p.Name)
	if err != nil {
		op.e.logger.Warn("run not traced", "probe", op.p.Name, "operation_id", res.OperationID, "err", err)
		return
	}
	op.trace, res.TraceID = tr, tr.ID
}

// traceTransport marks each HTTP request of a traced run, redirects
// included, as a span of the run's trace: a traceparent of its own and the
// synthetic tracestate.
type traceTransport struct {
	next  http.RoundTripper
	trace results.Trace
}

func (t *traceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req, _ = t.trace.Mark(req)
	return t.next.RoundTrip(req)
}
