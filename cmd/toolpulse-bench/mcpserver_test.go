package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// TestMCPProvider: the provider's MCP server holds a whole probe session
// with toolpulse's own client (mcpsdk.Call) in both eras: the tool answers
// the HTTP provider's body as structuredContent, each session counts as
// one arrival, the mix decides tools/call, a legacy session is opened with
// initialize and closed with DELETE, and a passing session makes the
// exchanges the report divides its CPU by.
func TestMCPProvider(t *testing.T) {
	for _, tt := range []struct {
		era     string
		version string
	}{
		{mcpLegacy, mcpLegacyVersion},
		{mcpStateless, mcpModernVersion},
	} {
		t.Run(tt.era, func(t *testing.T) {
			p, err := newProvider(providerSpec{Probes: 2, Items: 3, ResponseBytes: 300, Mix: benchMix{Unavailable: 1}, Capacity: 4,
				Kind: kindMCP, MCPEra: tt.era, Special: []specialProbe{{Probe: 1, Kind: specialAlert, At: time.Hour}}})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			defer srv.Close()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			var requests int
			call := func(i int) *mcpsdk.Answer {
				t.Helper()
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				a, err := mcpsdk.Call(ctx, mcpsdk.Request{URL: srv.URL + probePathPrefix + itoa64(int64(i)), Tool: benchToolName,
					Arguments: map[string]any{"query": "API migration guide"}, MaxBodyBytes: 1 << 20, HTTPClient: &http.Client{Transport: tr}})
				if err != nil {
					t.Fatal(err)
				}
				requests = len(a.Exchanges)
				return a
			}

			// Probe 1, an alert probe before its flip, passes.
			a := call(1)
			if a.Err != nil || a.ProtocolVersion != tt.version || a.IsError {
				t.Fatalf("session = %v, version %q; want a usable answer in %s", a.Err, a.ProtocolVersion, tt.version)
			}
			if want := p.answers[answerPass].body; !jsonEqual(t, a.Response, want) {
				t.Errorf("response = %s, want the HTTP provider's passing body %s", a.Response, want)
			}
			if want := exchangesPerRun(kindMCP, tt.era); requests != want {
				t.Errorf("%d HTTP requests in the session, want %d", requests, want)
			}
			if tt.era == mcpLegacy {
				if last := a.Exchanges[len(a.Exchanges)-1]; last.Method != http.MethodDelete || last.Status != http.StatusOK {
					t.Errorf("last exchange %s → %d, want DELETE → 200: the session closed", last.Method, last.Status)
				}
			}
			// Probe 0 is all unavailable: 503s and closed connections at
			// tools/call.
			for range 6 {
				if a := call(0); a.Err == nil || a.Err.Code.Outcome() != results.Unavailable {
					t.Errorf("probe 0: %v, want an unavailable session", a.Err)
				}
			}

			rep := p.report()
			if got := []int{len(rep.Arrivals[0]), len(rep.Arrivals[1])}; got[0] != 6 || got[1] != 1 {
				t.Errorf("arrivals per probe %v, want [6 1]: one per session", got)
			}
			if rep.Served["pass"] != 1 || rep.Served["status_503"]+rep.Served["connection_closed"] != 6 {
				t.Errorf("served %v, want one pass and six unavailable answers", rep.Served)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
