package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// TestMCPHealthInspector drives toolpulse's own /mcp with an MCP client
// nobody here wrote: @modelcontextprotocol/inspector-cli from npm (on the
// TypeScript SDK), run with Debian's node inside a private network
// namespace. It lists the two tools, calls list_tool_health and
// get_tool_health {probe}, and holds the answers to the store; with a
// server token, the client is refused without it and answered with
// --header "Authorization: Bearer …".
func TestMCPHealthInspector(t *testing.T) {
	in := mcptest.FindInspector(t)
	mcptest.InPrivateNetwork(t, func(t *testing.T) {
		f := newStatusFixture(t)
		endpoint := f.srv.URL + mcpPath
		t.Logf("inspector-cli %s against %s", in.Version, endpoint)
		inspect := func(t *testing.T, url string, headers []string, into any, args ...string) {
			t.Helper()
			out, errOut, err := in.Run(t, url, headers, args...)
			if err != nil {
				t.Fatalf("inspector %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
			}
			if err := json.Unmarshal([]byte(out), into); err != nil {
				t.Fatalf("inspector %s printed no JSON: %v\n%s", strings.Join(args, " "), err, out)
			}
		}

		var listed struct {
			Tools []struct {
				Name         string          `json:"name"`
				OutputSchema json.RawMessage `json:"outputSchema"`
				Annotations  struct {
					ReadOnlyHint bool `json:"readOnlyHint"`
				} `json:"annotations"`
			} `json:"tools"`
		}
		inspect(t, endpoint, nil, &listed, "--method", "tools/list")
		var names []string
		for _, tool := range listed.Tools {
			names = append(names, tool.Name)
			if !tool.Annotations.ReadOnlyHint || len(tool.OutputSchema) == 0 {
				t.Errorf("%s: readOnlyHint %v, outputSchema %s; want read-only with an output schema", tool.Name, tool.Annotations.ReadOnlyHint, tool.OutputSchema)
			}
		}
		slices.Sort(names)
		if want := []string{mcpsdk.ToolGetHealth, mcpsdk.ToolListHealth}; !slices.Equal(names, want) {
			t.Errorf("tools %v, want %v", names, want)
		}

		latest, err := f.store.Latest(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		stored := map[string]results.Result{}
		for _, r := range latest {
			stored[r.Probe] = r
		}
		// sameAsStored holds one probe's health to its latest stored run.
		sameAsStored := func(t *testing.T, h mcpsdk.ToolHealth) {
			t.Helper()
			r, ok := stored[h.Probe]
			if !ok {
				if h.Outcome != "" || h.Healthy || h.LastRunAt != "" {
					t.Errorf("%s never ran, but the endpoint says %+v", h.Probe, h)
				}
				return
			}
			if h.Outcome != string(r.Outcome) || h.Code != string(r.Code()) || h.Healthy != (r.Outcome == results.Pass) ||
				h.LastRunAt != results.FormatTime(r.StartedAt) {
				t.Errorf("%s = %+v; the store's latest run is %s %s at %s", h.Probe, h, r.Outcome, r.Code(), results.FormatTime(r.StartedAt))
			}
		}

		var all struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Probes []mcpsdk.ToolHealth `json:"probes"`
			} `json:"structuredContent"`
		}
		inspect(t, endpoint, nil, &all, "--method", "tools/call", "--tool-name", mcpsdk.ToolListHealth)
		var order []string
		for _, h := range all.StructuredContent.Probes {
			order = append(order, h.Probe)
			sameAsStored(t, h)
		}
		if all.IsError || strings.Join(order, ",") != "weather,search,fresh,tracker" {
			t.Errorf("list_tool_health: isError %v, probes %v; want the config's four, in its order", all.IsError, order)
		}

		var one struct {
			IsError           bool              `json:"isError"`
			StructuredContent mcpsdk.ToolHealth `json:"structuredContent"`
		}
		inspect(t, endpoint, nil, &one, "--method", "tools/call", "--tool-name", mcpsdk.ToolGetHealth, "--tool-arg", "probe=search")
		s := one.StructuredContent
		sameAsStored(t, s)
		if one.IsError || s.Probe != "search" || s.Healthy || !s.Firing || s.FailingSince != "2026-11-30T11:58:00.000Z" || s.LastPassAt != "2026-11-30T11:57:00.000Z" {
			t.Errorf("get_tool_health {probe: search}: isError %v, %+v; want failing and firing since 11:58, last pass 11:57", one.IsError, s)
		}

		t.Run("token", func(t *testing.T) {
			const token = "inspector-t0ken-1"
			srv := httptest.NewServer(NewServer(Deps{
				Token: checks.Secret(token), Store: f.store, Probes: func() []*checks.Probe { return []*checks.Probe{{Name: "weather"}} },
				Healthy: nil, Metrics: http.NotFoundHandler(), Now: func() time.Time { return f.now },
			}))
			t.Cleanup(srv.Close)
			url := srv.URL + mcpPath
			out, errOut, err := in.Run(t, url, nil, "--method", "tools/list")
			if err == nil {
				t.Errorf("without the token the inspector listed:\n%s", out)
			} else if !strings.Contains(errOut, `"code":"unauthorized"`) {
				t.Errorf("without the token: %v, stderr %q; want toolpulse's 401 unauthorized", err, errOut)
			}
			var got struct {
				StructuredContent mcpsdk.ToolHealth `json:"structuredContent"`
			}
			inspect(t, url, []string{"Authorization: Bearer " + token}, &got, "--method", "tools/call", "--tool-name", mcpsdk.ToolGetHealth, "--tool-arg", "probe=weather")
			if got.StructuredContent.Probe != "weather" || !got.StructuredContent.Healthy {
				t.Errorf("with the token: %+v, want weather, healthy", got.StructuredContent)
			}
			sameAsStored(t, got.StructuredContent)
		})
	})
}
