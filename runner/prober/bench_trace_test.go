package prober

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/results"
)

// BenchmarkRunTrace is what marking a run's requests costs (SPEC §10.1):
// the runs of BenchmarkRunHTTP and of BenchmarkRunMCP's legacy JSON case,
// each with trace off and on. An HTTP request gains two headers; an MCP
// request also has its body decoded and encoded again to add _meta.
func BenchmarkRunTrace(b *testing.B) {
	body := searchBody(benchRunItems)
	for _, trace := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[trace]
		b.Run("http "+name, func(b *testing.B) {
			raw := []byte(body)
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(raw)
			}))
			defer s.Close()
			e := NewExecutor(Options{})
			defer e.CloseIdleConnections()
			p := testProbe(b, s.URL)
			p.Trace = trace
			measureRuns(b, e, p)
		})
		b.Run("mcp "+name, func(b *testing.B) {
			tool := mcptest.Tool{
				Name:        "search",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
				Handler: func(context.Context, json.RawMessage) mcptest.Result {
					return mcptest.Result{Content: []mcptest.Content{mcptest.Text(body)}, StructuredContent: json.RawMessage(body)}
				},
			}
			srv := mcptest.Start(b, mcptest.Config{Era: mcptest.Legacy, Tools: []mcptest.Tool{tool}})
			e := NewExecutor(Options{})
			defer e.CloseIdleConnections()
			p := mcpProbe(srv, results.ContractError)
			p.Trace = trace
			measureRuns(b, e, p)
		})
	}
}
