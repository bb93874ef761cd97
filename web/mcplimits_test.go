package web

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// askHealth asks /mcp list_tool_health once with the go-sdk's client, as
// an MCP probe does (a fresh session each time).
func askHealth(t *testing.T, endpoint string) *mcpsdk.Answer {
	t.Helper()
	ans, err := mcpsdk.Call(t.Context(), mcpsdk.Request{
		URL: endpoint, Tool: mcpsdk.ToolListHealth, MaxBodyBytes: checks.DefaultMaxBodyBytes,
		HTTPClient: http.DefaultClient,
	})
	if err != nil {
		t.Fatal(err)
	}
	return ans
}

// postMCP posts one raw body to /mcp and returns the response's status,
// Retry-After and body.
func postMCP(t *testing.T, endpoint, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), raw
}

// TestMCPBudgetCountsQuestions: the go-sdk's MCP client asks /mcp many
// questions back to back, each a session of several HTTP requests, and
// every one is answered; the HTTP budget alone (40) refused the ninth or
// so. Past the MCP budget, a request is refused 429 with Retry-After and
// a JSON-RPC error that carries its id, the client reads rate_limited,
// notifications still go through, and the rest of the surface is not
// starved.
func TestMCPBudgetCountsQuestions(t *testing.T) {
	f := newStatusFixture(t)
	endpoint := f.srv.URL + mcpPath

	// A dashboard behind the same address spends the HTTP budget; MCP
	// clients do not share it.
	for i := 0; ; i++ {
		resp, err := http.Get(f.srv.URL + "/api/v1/probes")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			break
		}
		if i > 4*clientBurst {
			t.Fatalf("%d API requests in a burst were all answered; want the HTTP budget to run out", i)
		}
	}
	if status, _, body := postMCP(t, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status == http.StatusTooManyRequests {
		t.Errorf("a notification once the HTTP budget ran out: HTTP %d %s; want it let through", status, body)
	}

	const questions = 30
	for i := range questions {
		ans := askHealth(t, endpoint)
		if ans.Err != nil {
			t.Fatalf("question %d of %d back to back: %s: %s (%d HTTP exchanges each)", i+1, questions, ans.Err.Code, ans.Err.Message, len(ans.Exchanges))
		}
	}

	// Keep asking until the budget says no: the client must read why.
	var refused *mcpsdk.Answer
	for i := 0; i < 10*mcpBurst && refused == nil; i++ {
		if ans := askHealth(t, endpoint); ans.Err != nil {
			refused = ans
		}
	}
	if refused == nil {
		t.Fatalf("%d more questions were all answered; want the MCP budget (burst %d requests) to refuse some", 10*mcpBurst, mcpBurst)
	}
	if refused.Err.Code != results.CodeRateLimited || !refused.RetryAfterSet || refused.RetryAfter <= 0 {
		t.Errorf("past the budget the client got %s (%s), Retry-After %v set %v; want rate_limited with a Retry-After",
			refused.Err.Code, refused.Err.Message, refused.RetryAfter, refused.RetryAfterSet)
	}

	// Drain whatever refilled meanwhile, then look at the refusal itself.
	var status int
	var retryAfter string
	var body []byte
	for range 2 * mcpBurst {
		status, retryAfter, body = postMCP(t, endpoint, `{"jsonrpc":"2.0","id":"q-77","method":"tools/list","params":{}}`)
		if status == http.StatusTooManyRequests {
			break
		}
	}
	if status != http.StatusTooManyRequests {
		t.Fatalf("raw tools/list past the budget: HTTP %d; want 429", status)
	}
	if s, err := strconv.Atoi(retryAfter); err != nil || s < 1 {
		t.Errorf("Retry-After %q; want whole seconds, at least 1", retryAfter)
	}
	var rpc struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &rpc); err != nil {
		t.Fatalf("429 body is not JSON-RPC: %v\n%s", err, body)
	}
	if rpc.JSONRPC != "2.0" || string(rpc.ID) != `"q-77"` || rpc.Error.Code != jsonrpcRateLimited || rpc.Error.Data.Code != "rate_limited" || !strings.Contains(rpc.Error.Message, "retry after") {
		t.Errorf("429 body %s; want a JSON-RPC error for id \"q-77\", code %d, data.code rate_limited", body, jsonrpcRateLimited)
	}

	// A batch is refused as a batch, one error per request.
	status, _, body = postMCP(t, endpoint, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	var batch []struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(body, &batch); status != http.StatusTooManyRequests || err != nil || len(batch) != 2 || string(batch[0].ID) != "1" || string(batch[1].ID) != "2" {
		t.Errorf("batch past the budget: HTTP %d %s; want 429 with an error for ids 1 and 2", status, body)
	}

	// A notification is no question: it does not spend the MCP budget.
	if status, _, body := postMCP(t, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status == http.StatusTooManyRequests {
		t.Errorf("a notification past the MCP budget: HTTP %d %s; want it let through", status, body)
	}
	// Nor is the rest of the surface starved by the MCP client: the API's
	// budget refilled meanwhile, and /mcp spent none of it.
	time.Sleep(time.Duration(float64(time.Second) / float64(clientRate) * 2))
	resp, err := http.Get(f.srv.URL + "/api/v1/probes")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /api/v1/probes after /mcp's budget ran out: HTTP %d; want 200", resp.StatusCode)
	}
}

// TestReadMCPMessages: what counts as a request, and that the handler
// still reads the whole body.
func TestReadMCPMessages(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"q":"` + strings.Repeat("a", mcpMaxBodyBytes) + `"}}}`
	for _, tc := range []struct {
		name, body string
		ids        []string
		batch      bool
	}{
		{"request", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, []string{"7"}, false},
		{"string id", ` {"jsonrpc":"2.0","id":"a","method":"ping"}`, []string{`"a"`}, false},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, false},
		{"response", `{"jsonrpc":"2.0","id":3,"result":{}}`, nil, false},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, []string{"1", "2"}, true},
		{"not JSON", `hello`, nil, false},
		{"over the limit", big, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			m, err := readMCPMessages(r)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, id := range m.ids {
				ids = append(ids, string(id))
			}
			if strings.Join(ids, ",") != strings.Join(tc.ids, ",") || m.batch != tc.batch {
				t.Errorf("ids %v batch %v; want %v batch %v", ids, m.batch, tc.ids, tc.batch)
			}
			rest, err := io.ReadAll(r.Body)
			if err != nil || string(rest) != tc.body {
				t.Errorf("the handler reads %d bytes (%v); want the whole body, %d", len(rest), err, len(tc.body))
			}
		})
	}
}
