package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/internal/oauthtest"
	"github.com/toolpulse/toolpulse/mcpsdk"
)

const (
	cliOAuthClient = "cli-probe"
	cliOAuthSecret = "cli-oauth-s3cret-9931"
	cliSecretEnv   = "DOCS_CLIENT_SECRET"
)

// oauthDocsServer is a go-sdk MCP server of one search tool behind the
// SDK's bearer middleware, whose tokens a real authorization server
// (scope search:read only) issues by the client credentials grant. It
// returns the authorization server and the MCP endpoint.
func oauthDocsServer(t *testing.T) (*oauthtest.Server, string) {
	t.Helper()
	as := oauthtest.Start(t, oauthtest.Config{ClientID: cliOAuthClient, ClientSecret: cliOAuthSecret, Scopes: []string{"search:read"}})
	srv, err := mcpsdk.NewServer(mcpsdk.ServerInfo{Name: "docs"}, mcpsdk.ServerTool{
		Name: "search", Description: "Search the docs.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Answer: func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"results": []any{map[string]any{"id": "doc_1"}}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	url := as.Protect(t, "/mcp", false, func(meta string) http.Handler { return mcpsdk.RequireBearer(srv, meta, as.Verify) })
	return as, url
}

// runMCPOAuth runs `toolpulse mcp ARGS` in-process with the client secret
// in the environment, and fails t if the secret or a token the server
// issued is in the output.
func runMCPOAuth(t *testing.T, as *oauthtest.Server, secret string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	lookup := func(k string) (string, bool) {
		if k == cliSecretEnv {
			return secret, true
		}
		return "", false
	}
	code = run(context.Background(), append([]string{"mcp"}, args...), lookup, &out, &errOut)
	all := out.String() + errOut.String()
	if secret != "" && strings.Contains(all, secret) {
		t.Errorf("the client secret is in the output:\n%s", all)
	}
	for _, tok := range as.Issued() {
		if strings.Contains(all, tok) {
			t.Errorf("an access token is in the output:\n%s", all)
		}
	}
	return code, out.String(), errOut.String()
}

// TestMCPOAuthClientCredentials: `mcp tools` and `mcp call` with OAuth
// client credentials get a token from a real authorization server, found
// from the server's protected resource metadata or named with
// --oauth-token-url, asking for the scopes given, and reach a go-sdk
// server behind the SDK's bearer middleware with it; without the flags
// the server's 401 is the verdict.
func TestMCPOAuthClientCredentials(t *testing.T) {
	as, url := oauthDocsServer(t)
	creds := []string{"--oauth-client-id", cliOAuthClient, "--oauth-client-secret-env", cliSecretEnv, "--oauth-scope", "search:read"}

	code, out, errOut := runMCPOAuth(t, as, cliOAuthSecret, append([]string{"tools", "--url", url, "--format", "json"}, creds...)...)
	if code != exitOK || !strings.Contains(out, `"name": "search"`) {
		t.Fatalf("mcp tools, discovered: exit %d, stdout %s, stderr %s; want the search tool", code, out, errOut)
	}
	reqs := as.Requests()
	if len(reqs) != 1 || reqs[0].Form.Get("grant_type") != "client_credentials" || reqs[0].Form.Get("scope") != "search:read" || reqs[0].Form.Get("resource") != url {
		t.Errorf("token requests = %+v; want one client_credentials grant for scope search:read and resource %s", reqs, url)
	}

	code, out, errOut = runMCPOAuth(t, as, cliOAuthSecret, append([]string{"call", "--tool", "search", "--arguments", `{"query":"q"}`,
		"--oauth-token-url", as.TokenURL(), "--url", url}, creds...)...)
	if code != exitOK || !strings.HasPrefix(out, "pass ") || !strings.Contains(out, "doc_1") {
		t.Errorf("mcp call, token URL: exit %d, stdout %s, stderr %s; want a pass with the answer", code, out, errOut)
	}

	// The metadata and token requests are the first exchanges, as they
	// are a probe's first rows.
	code, out, _ = runMCPOAuth(t, as, cliOAuthSecret, append([]string{"call", "--tool", "search", "--arguments", `{"query":"q"}`,
		"--format", "json", "--url", url}, creds...)...)
	var doc struct {
		Outcome   string `json:"outcome"`
		Exchanges []struct {
			Method     string `json:"method"`
			Session    int    `json:"session"`
			HTTPStatus *int   `json:"http_status"`
		} `json:"exchanges"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK || doc.Outcome != "pass" {
		t.Fatalf("mcp call --format json, discovered: exit %d, %v\n%s", code, err, out)
	}
	var rows []string
	for _, x := range doc.Exchanges {
		status := 0
		if x.HTTPStatus != nil {
			status = *x.HTTPStatus
		}
		rows = append(rows, fmt.Sprintf("%s/%d/%d", x.Method, x.Session, status))
	}
	got := strings.Join(rows, " ")
	if want := "GET oauth-protected-resource/0/200 GET oauth-authorization-server/0/200 POST token/0/200 "; !strings.HasPrefix(got, want) || !strings.Contains(got, "tools/call/1/200") {
		t.Errorf("exchanges %s; want %s…tools/call/1/200", got, want)
	}

	code, out, _ = runMCPOAuth(t, as, cliOAuthSecret, "call", "--tool", "search", "--arguments", `{"query":"q"}`, "--url", url)
	if code != exitContractError || !strings.Contains(out, "HTTP 401") {
		t.Errorf("mcp call without credentials: exit %d, %q; want exit %d naming the 401", code, out, exitContractError)
	}
}

// TestMCPOAuthFailures: credentials the token endpoint refuses are
// contract_error auth_rejected, a token endpoint that cannot be reached is
// unavailable with the transport's code, and a secret that is not in the
// environment is a usage error; the authorization server issues no token.
func TestMCPOAuthFailures(t *testing.T) {
	as, url := oauthDocsServer(t)
	call := []string{"call", "--tool", "search", "--arguments", `{"query":"q"}`, "--oauth-client-id", cliOAuthClient,
		"--oauth-client-secret-env", cliSecretEnv, "--url", url}

	code, out, _ := runMCPOAuth(t, as, "wrong-secret-1234", call...)
	if code != exitContractError || !strings.HasPrefix(out, "contract_error auth_rejected: the token endpoint refused") {
		t.Errorf("a wrong secret: exit %d, %q; want exit %d, contract_error auth_rejected", code, out, exitContractError)
	}
	code, _, errOut := runMCPOAuth(t, as, "wrong-secret-1234", "tools", "--url", url, "--oauth-client-id", cliOAuthClient, "--oauth-client-secret-env", cliSecretEnv)
	if code != exitDataError || !strings.Contains(errOut, "auth_rejected") {
		t.Errorf("mcp tools with a wrong secret: exit %d, %q; want exit %d, auth_rejected", code, errOut, exitDataError)
	}

	code, out, _ = runMCPOAuth(t, as, cliOAuthSecret, append(call, "--oauth-token-url", "http://"+closedAddr(t)+"/token")...)
	if code != exitUnavailable || !strings.HasPrefix(out, "unavailable connection_refused: requesting the OAuth") {
		t.Errorf("an unreachable token endpoint: exit %d, %q; want exit %d, unavailable connection_refused", code, out, exitUnavailable)
	}

	code, _, errOut = runMCPOAuth(t, as, "", call...)
	if code != exitUsage || !strings.Contains(errOut, cliSecretEnv+": the variable is not set") {
		t.Errorf("no secret in the environment: exit %d, %q; want a usage error naming the variable", code, errOut)
	}
	if n := len(as.Issued()); n != 0 {
		t.Errorf("the authorization server issued %d tokens; want none", n)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
