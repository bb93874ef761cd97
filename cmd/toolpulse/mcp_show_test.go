package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/web"
)

// mcpMarker is a secret in the MCP probe's URL: its query, which no
// surface may show.
const mcpMarker = "mcp-q-SECRET"

// docsTool answers like the seed-000 search provider, as structured
// content.
func docsTool() mcptest.Tool {
	return mcptest.Tool{
		Name:        "search_docs",
		Description: "Search the docs.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`),
		Handler: func(context.Context, json.RawMessage) mcptest.Result {
			return mcptest.Result{StructuredContent: map[string]any{
				"results": []any{map[string]any{"id": "doc_1", "title": "t", "score": 0.93}}}}
		},
	}
}

// mcpShowConfig is testConfig with an MCP probe beside the HTTP ones.
const mcpShowConfig = testConfig + `  - name: docs_tool
    mcp:
      url: ${MCP_URL}?key=${MCP_KEY}
      tool: search_docs
      arguments: {query: API migration guide}
    consumer: two_layouts
`

// newMCPCLIRun is newCLIRun with an MCP probe, docs_tool, calling
// search_docs on an in-process MCP server.
func newMCPCLIRun(t *testing.T) (*cliRun, *mcptest.Server) {
	t.Helper()
	srv := mcptest.Start(t, mcptest.Config{Era: mcptest.Legacy, Tools: []mcptest.Tool{docsTool()}})
	p := provider.New()
	url := e2e.Serve(t, p.Handler())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "checks.yaml"), []byte(mcpShowConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return &cliRun{t: t, dir: dir, provider: p, env: map[string]string{
		"PROVIDER": url, "SEARCH_TOKEN": testSecret, "MCP_URL": srv.URL, "MCP_KEY": mcpMarker,
	}}, srv
}

// TestCLIShowsMCPProbes: check, history and stats say which probe is an
// MCP probe and what it calls, in every format; tool_name stays the
// probe's name; the URL's query never shows.
func TestCLIShowsMCPProbes(t *testing.T) {
	h, srv := newMCPCLIRun(t)
	code, out, errOut := h.run("check", "--format", "json")
	if code != exitOK {
		t.Fatalf("check: exit %d\n%s\n%s", code, out, errOut)
	}
	envs := decodeEnvelopes(t, out)
	want := results.MCPTarget{Tool: "search_docs", Server: srv.URL}
	if env := envs["docs_tool"]; env.Kind != results.ProbeMCP || env.MCP == nil || *env.MCP != want || env.Status != results.Pass {
		t.Errorf("docs_tool envelope: kind %q, mcp %+v, status %s; want mcp, %+v, pass", env.Kind, env.MCP, env.Status, want)
	}
	if env := envs["search"]; env.Kind != results.ProbeHTTP || env.MCP != nil {
		t.Errorf("search envelope: kind %q, mcp %+v; want http and no mcp", env.Kind, env.MCP)
	}
	if strings.Contains(out, `"mcp":null`) {
		t.Errorf("an HTTP envelope shows mcp: null, want it absent:\n%s", out)
	}

	code, out, _ = h.run("history", "--format", "json", "--kind", "mcp")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var row map[string]any
	if code != exitOK || len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &row) != nil {
		t.Fatalf("history --kind mcp: exit %d, want one row\n%s", code, out)
	}
	if row["probe"] != "docs_tool" || row["kind"] != "mcp" || row["mcp_tool"] != "search_docs" || row["mcp_server"] != srv.URL {
		t.Errorf("history --kind mcp row: %v", row)
	}
	code, out, _ = h.run("history", "--format", "json", "--kind", "http")
	if code != exitOK || strings.Count(out, "\n") != 3 || strings.Contains(out, "docs_tool") {
		t.Errorf("history --kind http: exit %d, want the three HTTP probes' runs\n%s", code, out)
	}
	if code, _, errOut := h.run("history", "--kind", "grpc"); code != exitUsage || !strings.Contains(errOut, "want http, mcp or steps") {
		t.Errorf("history --kind grpc: exit %d, %q; want %d naming the kinds", code, errOut, exitUsage)
	}

	_, out, _ = h.run("history", "--format", "csv", "--probe", "docs_tool")
	records, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(records) != 2 {
		t.Fatalf("history csv: %v, %v", records, err)
	}
	csvRow := map[string]string{}
	for i, col := range records[0] {
		csvRow[col] = records[1][i]
	}
	if csvRow["kind"] != "mcp" || csvRow["mcp_tool"] != "search_docs" || csvRow["mcp_server"] != srv.URL {
		t.Errorf("history csv row: %v", csvRow)
	}

	_, out, _ = h.run("stats", "--format", "json")
	stats := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var s map[string]any
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatal(err)
		}
		stats[s["probe"].(string)] = s
	}
	if s := stats["docs_tool"]; s["kind"] != "mcp" || s["mcp_tool"] != "search_docs" || s["mcp_server"] != srv.URL {
		t.Errorf("stats for docs_tool: %v", s)
	}
	if s := stats["search"]; s["kind"] != "http" || s["mcp_tool"] != nil {
		t.Errorf("stats for search: %v", s)
	}

	server := strings.TrimPrefix(srv.URL, "http://")
	for _, args := range [][]string{{"check"}, {"history"}, {"stats"}} {
		code, out, _ := h.run(args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s", args[0], code, out)
		}
		if !strings.Contains(out, "TOOL") || !strings.Contains(out, "search_docs @ "+server) {
			t.Errorf("%s table lacks the TOOL column or %q:\n%s", args[0], "search_docs @ "+server, out)
		}
	}

	for _, args := range [][]string{{"check", "--format", "json"}, {"history", "--format", "json"}, {"history", "--format", "csv"}, {"stats", "--format", "csv"}, {"history"}} {
		if _, out, _ := h.run(args...); strings.Contains(out, mcpMarker) {
			t.Errorf("%v shows the MCP URL's query:\n%s", args, out)
		}
	}
}

// TestCLITablesWithoutMCPAsBefore: with no MCP probe, the tables have no
// TOOL column.
func TestCLITablesWithoutMCPAsBefore(t *testing.T) {
	h := newCLIRun(t)
	for _, args := range [][]string{{"check"}, {"history"}, {"stats"}} {
		if _, out, _ := h.run(args...); strings.Contains(out, "TOOL") {
			t.Errorf("%s table has a TOOL column without an MCP probe:\n%s", args[0], out)
		}
	}
}

// TestDaemonShowsMCPProbes runs the daemon on an HTTP and an MCP probe
// against real servers and reads what it serves: the API's envelopes of
// the MCP probe carry its kind, tool and server; /metrics has one
// toolpulse_probe_info series per probe, which a reload that removes the
// MCP probe takes away.
func TestDaemonShowsMCPProbes(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Config{Era: mcptest.Legacy, Tools: []mcptest.Tool{docsTool()}})
	prov := e2e.Serve(t, provider.New().Handler())
	dir := t.TempDir()
	base := harness.Fast(prov, "", "search")
	base.Notify = nil
	withMCP := base.YAML() + `  - name: docs_tool
    mcp: {url: "` + srv.URL + `?key=` + mcpMarker + `", tool: search_docs, arguments: {query: q}}
    consumer: list_only
`
	path := filepath.Join(dir, "checks.yaml")
	load := func(yaml string) *checks.Config {
		t.Helper()
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := checks.Load(path, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := load(withMCP)
	s, err := newStack(context.Background(), cfg, slog.New(slog.DiscardHandler), stackOptions{grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx, 0) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	var running atomic.Pointer[checks.Config]
	running.Store(cfg)
	api := httptest.NewServer(web.NewServer(web.Deps{
		Logger: slog.New(slog.DiscardHandler), Healthy: func(context.Context) error { return nil },
		Metrics: s.metricsHandler, Store: s.store, Probes: func() []*checks.Probe { return running.Load().Probes },
	}))
	t.Cleanup(api.Close)
	get := func(route string) string {
		t.Helper()
		resp, err := http.Get(api.URL + route)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}

	var page struct {
		Results []results.Envelope `json:"results"`
	}
	eventually(t, "a run of docs_tool", func() bool {
		return json.Unmarshal([]byte(get("/api/v1/probes/docs_tool/results")), &page) == nil && len(page.Results) > 0
	})
	want := results.MCPTarget{Tool: "search_docs", Server: srv.URL}
	if env := page.Results[0]; env.ToolName != "docs_tool" || env.Kind != results.ProbeMCP || env.MCP == nil || *env.MCP != want {
		t.Errorf("docs_tool's envelope: tool_name %q, kind %q, mcp %+v; want docs_tool, mcp, %+v", env.ToolName, env.Kind, env.MCP, want)
	}
	if env := page.Results[0]; env.Status != results.Pass {
		t.Errorf("docs_tool's run: %s %+v, want pass", env.Status, env.Error)
	}
	metricsText := get("/metrics")
	for _, line := range []string{
		`toolpulse_probe_info{kind="http",probe="search",tool=""} 1`,
		`toolpulse_probe_info{kind="mcp",probe="docs_tool",tool="search_docs"} 1`,
	} {
		if !strings.Contains(metricsText, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	for _, route := range []string{"/api/v1/probes", "/api/v1/probes/docs_tool/results", "/", "/probes/docs_tool", "/metrics"} {
		if strings.Contains(get(route), mcpMarker) {
			t.Errorf("%s shows the MCP URL's query", route)
		}
	}

	next := load(base.YAML())
	if err := s.reload(next); err != nil {
		t.Fatal(err)
	}
	running.Store(next)
	if metricsText := get("/metrics"); strings.Contains(metricsText, `probe="docs_tool"`) ||
		!strings.Contains(metricsText, `toolpulse_probe_info{kind="http",probe="search",tool=""} 1`) {
		t.Errorf("/metrics after the reload that removed docs_tool:\n%s", grepLines(metricsText, "probe_info"))
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
