package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/mcpsdk"
)

// mcpCall posts one JSON-RPC request to url's /mcp as an MCP client does
// (the SDK's own client is tested against the endpoint in mcpsdk) and
// returns the HTTP status and the decoded answer.
func mcpCall(t *testing.T, url, token, method string, params any) (int, map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url+mcpPath, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: %d %s: %v", method, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode, out
}

// TestMCPHealthEndpoint: /mcp on the HTTP surface answers list_tool_health
// from the store, for the probes of the running config: search is failing
// and firing since its drifted run, weather is healthy, fresh never ran.
func TestMCPHealthEndpoint(t *testing.T) {
	f := newStatusFixture(t)
	status, out := mcpCall(t, f.srv.URL, "", "tools/call", map[string]any{"name": mcpsdk.ToolListHealth, "arguments": map[string]any{}})
	if status != http.StatusOK {
		t.Fatalf("tools/call list_tool_health: HTTP %d", status)
	}
	b, _ := json.Marshal(out["result"].(map[string]any)["structuredContent"])
	var got struct {
		Probes []mcpsdk.ToolHealth `json:"probes"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	byName := map[string]mcpsdk.ToolHealth{}
	var order []string
	for _, h := range got.Probes {
		byName[h.Probe] = h
		order = append(order, h.Probe)
	}
	if strings.Join(order, ",") != "weather,search,fresh,tracker" {
		t.Errorf("probes %v, want the config's, in its order (not retired, which is only in the store)", order)
	}
	if s := byName["search"]; s.Healthy || s.Outcome != "contract_error" || s.Code != "unsupported_results_container" ||
		!s.Firing || s.FailingSince != "2026-11-30T11:58:00.000Z" || s.LastPassAt != "2026-11-30T11:57:00.000Z" || s.Labels["team"] != "search" {
		t.Errorf("search = %+v", s)
	}
	if w := byName["weather"]; !w.Healthy || w.Outcome != "pass" || w.FailingSince != "" || w.LastPassAt != "2026-11-30T11:59:30.000Z" {
		t.Errorf("weather = %+v", w)
	}
	if fr := byName["fresh"]; fr.Healthy || fr.Outcome != "" || fr.LastRunAt != "" {
		t.Errorf("fresh (never ran) = %+v, want no outcome and not healthy", fr)
	}
	if tr := byName["tracker"]; tr.Healthy || tr.Code != "server_error" || tr.Message == "" {
		t.Errorf("tracker = %+v", tr)
	}
}

// TestMCPHealthNeedsTheToken: /mcp follows the token rule of the rest of
// the surface, and POST is let through for /mcp alone.
func TestMCPHealthNeedsTheToken(t *testing.T) {
	f := newStatusFixture(t)
	srv := httptest.NewServer(NewServer(Deps{
		Token: checks.Secret("mcp-token-1"), Store: f.store, Probes: func() []*checks.Probe { return nil },
		Healthy: nil, Metrics: http.NotFoundHandler(), Now: func() time.Time { return f.now },
	}))
	t.Cleanup(srv.Close)
	params := map[string]any{"name": mcpsdk.ToolListHealth, "arguments": map[string]any{}}
	if status, _ := mcpCall(t, srv.URL, "", "tools/call", params); status != http.StatusUnauthorized {
		t.Errorf("without the token: HTTP %d, want 401", status)
	}
	if status, out := mcpCall(t, srv.URL, "mcp-token-1", "tools/call", params); status != http.StatusOK || out["result"] == nil {
		t.Errorf("with the token: HTTP %d %v, want a result", status, out)
	}
	resp, err := http.Post(srv.URL+"/api/v1/probes", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/v1/probes: HTTP %d, want 405: only /mcp takes POST", resp.StatusCode)
	}
}
