package prober

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/results"
)

// The cost of one run of an MCP probe next to that of an HTTP probe with
// the same answer: BenchmarkRunMCP and BenchmarkRunHTTP run Executor.Run
// end to end against a loopback server in the same process, and report,
// besides ns/op and allocations, the CPU the whole process spent per run
// (cpu-ns/op): the executor's and the server's, with the collector's
// share. The server's part is small next to the client's for HTTP (one
// pre-encoded write) and larger for MCP (mcptest decodes each request);
// toolpulse-bench run --kind mcp measures the daemon alone.

// benchRunItems is how many results the benchmarks' answer holds: the
// 20-item search answer of BenchmarkOperation.
const benchRunItems = 20

// benchOutputSchema is the schema of searchBody's answer, as a typed tool
// of an SDK server declares it.
var benchOutputSchema = json.RawMessage(`{"type":"object","properties":{
"results":{"type":"array","items":{"type":"object","properties":{
"id":{"type":"string"},"title":{"type":"string"},"url":{"type":"string"},"snippet":{"type":"string"},"score":{"type":"number"}},
"required":["id","score"]}},
"next_cursor":{"type":["string","null"]}},"required":["results"]}`)

// measureRuns runs p with e until the benchmark has its count, after one
// run that must pass with every item validated, and reports cpu-ns/op.
func measureRuns(b *testing.B, e *Executor, p *checks.Probe) {
	b.Helper()
	if got := e.Run(b.Context(), p); got.Outcome != results.Pass || got.ValidatedCount != benchRunItems {
		b.Fatalf("%s", dump(got))
	}
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		e.Run(b.Context(), p)
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkRunHTTP is one passing run of an HTTP probe (testProbe: POST
// with a header, a query parameter and a JSON fixture) whose provider
// answers the 20-item search body, pre-encoded: the counterpart of
// BenchmarkRunMCP.
func BenchmarkRunHTTP(b *testing.B) {
	body := []byte(searchBody(benchRunItems))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer s.Close()
	e := NewExecutor(Options{})
	defer e.CloseIdleConnections()
	measureRuns(b, e, testProbe(b, s.URL))
}

// BenchmarkRunMCP is one passing run of an MCP probe (mcpProbe: a header,
// the fixture as arguments, the seed-000 consumer) against mcptest, whose
// search tool answers the same 20-item body as BenchmarkRunHTTP's
// provider, as structuredContent and as the text item next to it, as SDK
// servers answer a typed tool. A run is a whole session: in the legacy
// era server/discover (refused), initialize, notifications/initialized,
// tools/list, tools/call and the DELETE that closes the session; in the
// stateless era server/discover, tools/list and tools/call. The
// outputSchema case is the legacy JSON one with a tool that declares the
// schema of its answer, which every run checks structuredContent against.
func BenchmarkRunMCP(b *testing.B) {
	body := searchBody(benchRunItems)
	tool := mcptest.Tool{
		Name:        "search",
		Description: "Search the docs.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Handler: func(context.Context, json.RawMessage) mcptest.Result {
			return mcptest.Result{Content: []mcptest.Content{mcptest.Text(body)}, StructuredContent: json.RawMessage(body)}
		},
	}
	typed := tool
	typed.OutputSchema = benchOutputSchema
	for _, tt := range []struct {
		name     string
		era      mcptest.Era
		encoding mcptest.Encoding
		tool     mcptest.Tool
	}{
		{"legacy JSON", mcptest.Legacy, mcptest.JSON, tool},
		{"legacy SSE", mcptest.Legacy, mcptest.SSE, tool},
		{"stateless", mcptest.Stateless, mcptest.JSON, tool},
		{"legacy JSON outputSchema", mcptest.Legacy, mcptest.JSON, typed},
	} {
		b.Run(tt.name, func(b *testing.B) {
			srv := mcptest.Start(b, mcptest.Config{Era: tt.era, Encoding: tt.encoding, Tools: []mcptest.Tool{tt.tool}})
			e := NewExecutor(Options{})
			defer e.CloseIdleConnections()
			measureRuns(b, e, mcpProbe(srv, results.ContractError))
		})
	}
}
