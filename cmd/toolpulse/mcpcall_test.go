package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/internal/mcptest"
)

// runMCPCall runs `toolpulse mcp call` in-process with no config.
func runMCPCall(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	none := func(string) (string, bool) { return "", false }
	code = run(context.Background(), append([]string{"mcp", "call"}, args...), none, &out, &errOut)
	if strings.Contains(out.String()+errOut.String(), "s3cret") {
		t.Errorf("the header's value is in the output:\n%s%s", out.String(), errOut.String())
	}
	return code, out.String(), errOut.String()
}

// TestMCPCall: the tool is called with the arguments and the header, and
// the verdict says what a probe's attempt would: pass with the response,
// tool_error (exit 1) for an isError result, destructive_tool without
// the flag, connection_refused (exit 2) for a server that is not there;
// a bad --arguments is a usage error.
func TestMCPCall(t *testing.T) {
	for name, cfg := range map[string]mcptest.Config{
		"legacy":    {Era: mcptest.Legacy, Encoding: mcptest.SSE},
		"stateless": {Era: mcptest.Stateless},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.Name, cfg.Tools = "weather-server", weatherTools()
			s := mcptest.Start(t, cfg)
			code, out, errOut := runMCPCall(t, "--tool", "echo", "--arguments", `{"city":"Oslo"}`,
				"--header", "Authorization="+mcpToolsToken, "--format", "json", "--url", s.URL)
			if code != exitOK {
				t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errOut)
			}
			var got struct {
				Outcome   string          `json:"outcome"`
				Code      *string         `json:"code"`
				Response  json.RawMessage `json:"response"`
				Exchanges []struct {
					Method string `json:"method"`
				} `json:"exchanges"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			var methods []string
			for _, x := range got.Exchanges {
				methods = append(methods, x.Method)
			}
			if got.Outcome != "pass" || got.Code != nil || !strings.Contains(string(got.Response), "Oslo") || !strings.Contains(strings.Join(methods, ","), "tools/call") {
				t.Errorf("got %s; want a pass whose response echoes the arguments, with a tools/call exchange", out)
			}
			calls := s.Calls("tools/call")
			if len(calls) != 1 || calls[0].Header.Get("Authorization") != mcpToolsToken {
				t.Errorf("the server saw %d tools/call, the last with the header %v", len(calls), calls)
			}

			code, out, _ = runMCPCall(t, "--tool", "delete-forecast", "--url", s.URL)
			if code != exitContractError || !strings.HasPrefix(out, "contract_error destructive_tool: ") {
				t.Errorf("a destructive tool: exit %d, %q; want exit %d, contract_error destructive_tool", code, out, exitContractError)
			}
		})
	}

	s := mcptest.Start(t, mcptest.Config{Era: mcptest.Stateless, Tools: []mcptest.Tool{{
		Name: "broken",
		Handler: func(context.Context, json.RawMessage) mcptest.Result {
			return mcptest.Result{Content: []mcptest.Content{mcptest.Text("upstream down")}, IsError: true}
		},
	}}})
	if code, out, _ := runMCPCall(t, "--tool", "broken", "--url", s.URL); code != exitContractError || !strings.HasPrefix(out, "contract_error tool_error: ") {
		t.Errorf("an isError result: exit %d, %q; want exit %d, contract_error tool_error", code, out, exitContractError)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	if code, out, _ := runMCPCall(t, "--tool", "echo", "--url", gone); code != exitUnavailable || !strings.HasPrefix(out, "unavailable connection_refused: ") {
		t.Errorf("no server: exit %d, %q; want exit %d, unavailable connection_refused", code, out, exitUnavailable)
	}
	if code, _, errOut := runMCPCall(t, "--tool", "echo", "--arguments", `[1]`, "--url", gone); code != exitUsage || !strings.Contains(errOut, "--arguments") {
		t.Errorf("--arguments [1]: exit %d, %q; want exit %d naming --arguments", code, errOut, exitUsage)
	}
}
