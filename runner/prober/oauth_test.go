package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/oauthtest"
	"github.com/toolpulse/toolpulse/internal/probetest"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

const (
	oauthClient = "probe-client"
	oauthSecret = "cs-SECRET-7f3a9b"
)

// oauthProbe loads a one-probe checks.yaml through checks.Parse, as `toolpulse
// run` would: call is the probe's request: or mcp: block, in flow style.
func oauthProbe(t *testing.T, call string) *checks.Probe {
	t.Helper()
	dir := t.TempDir()
	yaml := `version: 1
consumers:
  - name: results
    select: response.results
    validate: type(.id) == "string"
probes:
  - name: oauth_probe
    ` + call + `
    consumer: results
    timeout: 2s
    retries: {max_attempts: 2, base_delay: 1ms, max_delay: 2ms, budget: 10s}
`
	env := func(name string) (string, bool) {
		if name == "PROBE_SECRET" {
			return oauthSecret, true
		}
		return "", false
	}
	cfg, err := checks.Parse(filepath.Join(dir, "checks.yaml"), []byte(yaml), dir, env)
	if err != nil {
		t.Fatalf("parse:\n%s\n%v", yaml, err)
	}
	return cfg.Probes[0]
}

// credentials is an oauth_client_credentials block; extra adds keys.
func credentials(secret, extra string) string {
	return fmt.Sprintf(`auth: {oauth_client_credentials: {client_id: %s, client_secret: %q, scopes: [search:read]%s}}`, oauthClient, secret, extra)
}

// searchProvider answers what the seed consumer selects.
func searchProvider() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"results":[{"id":"doc_1"}]}`))
	})
}

// goSDKServer is an MCP server on the official SDK with the search tool,
// behind the SDK's bearer middleware, verifying tokens with as.
func goSDKServer(t *testing.T, as *oauthtest.Server) func(string) http.Handler {
	t.Helper()
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
	return func(meta string) http.Handler { return mcpsdk.RequireBearer(srv, meta, as.Verify) }
}

// methods lists a run's rows as method/status, for messages and checks.
func methods(res results.Result) string {
	var out []string
	for _, a := range res.Attempts {
		m := a.Method
		if m == "" {
			m = "request"
		}
		out = append(out, fmt.Sprintf("%s/%d", m, a.HTTPStatus))
	}
	return strings.Join(out, " ")
}

// noToken fails when a token the server issued, or the client secret,
// appears anywhere in res.
func noToken(t *testing.T, res results.Result, as *oauthtest.Server) {
	t.Helper()
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw) + fmt.Sprintf("%+v", res)
	for _, tok := range as.Issued() {
		if strings.Contains(text, tok) {
			t.Errorf("the access token %q appears in the result: %s", tok, text)
		}
	}
	if strings.Contains(text, oauthSecret) {
		t.Errorf("the client secret appears in the result: %s", text)
	}
}

// TestOAuthMCPDiscovered: an MCP probe without token_url finds the token
// endpoint from the server's protected resource metadata (RFC 9728) and
// the authorization server's (RFC 8414), gets a token by the client
// credentials grant from a real authorization server, and calls a go-sdk
// server behind the SDK's bearer middleware with it. The metadata and
// token requests are rows of their own before the session's; the next
// run reuses the token and makes none.
func TestOAuthMCPDiscovered(t *testing.T) {
	as := oauthtest.Start(t, oauthtest.Config{ClientID: oauthClient, ClientSecret: oauthSecret, Scopes: []string{"search:read"}})
	resource := as.Protect(t, "/mcp", false, goSDKServer(t, as))
	p := oauthProbe(t, fmt.Sprintf(`mcp: {url: %q, tool: search, arguments: {query: q}, %s}`, resource, credentials("${PROBE_SECRET}", "")))
	e := NewExecutor(Options{})

	first := e.Run(context.Background(), p)
	if first.Outcome != results.Pass {
		t.Fatalf("first run = %s; want a pass\n%s", probetest.Dump(first), methods(first))
	}
	wantPrefix := "GET oauth-protected-resource/200 GET oauth-authorization-server/200 POST token/200 "
	if got := methods(first); !strings.HasPrefix(got, wantPrefix) || !strings.Contains(got, "tools/call/200") {
		t.Errorf("first run's rows = %s; want %s…tools/call/200", got, wantPrefix)
	}
	reqs := as.Requests()
	if len(reqs) != 1 || !reqs[0].Basic || reqs[0].Form.Get("grant_type") != "client_credentials" ||
		reqs[0].Form.Get("scope") != "search:read" || reqs[0].Form.Get("resource") != resource {
		t.Errorf("token requests = %+v; want one client_credentials grant with Basic credentials, scope search:read and resource %s", reqs, resource)
	}
	second := e.Run(context.Background(), p)
	if second.Outcome != results.Pass || strings.Contains(methods(second), "token") {
		t.Errorf("second run = %s, rows %s; want a pass on the cached token", probetest.Dump(second), methods(second))
	}
	if n := len(as.Requests()); n != 1 {
		t.Errorf("%d token requests after two runs, want 1: the token is cached", n)
	}
	// A revoked token: the SDK's middleware answers 401, and the session
	// starts again with a fresh token within the same attempt.
	if err := as.Revoke(context.Background(), as.Issued()[0]); err != nil {
		t.Fatal(err)
	}
	third := e.Run(context.Background(), p)
	rows := methods(third)
	if third.Outcome != results.Pass || third.AttemptCount() != 1 || !strings.Contains(rows, "/401 POST token/200 ") || !strings.Contains(rows, "tools/call/200") {
		t.Errorf("after a revocation: run = %s, rows %s; want a pass in one attempt: a 401, a fresh token (the metadata known already), then the session",
			probetest.Dump(third), rows)
	}
	for _, r := range []results.Result{first, second, third} {
		noToken(t, r, as)
	}
}

// TestOAuthHTTPTokenURL: an HTTP probe with token_url gets its token there
// without discovery; a token the resource refuses (revoked) is forgotten
// and the request sent once more with a fresh one in the same attempt; a
// token is fetched again once it is about to expire.
func TestOAuthHTTPTokenURL(t *testing.T) {
	as := oauthtest.Start(t, oauthtest.Config{ClientID: oauthClient, ClientSecret: oauthSecret, Lifetime: time.Hour,
		AuthMethods: []string{"client_secret_post"}})
	resource := as.Protect(t, "/search", false, func(meta string) http.Handler { return as.Require(searchProvider(), meta) })
	p := oauthProbe(t, fmt.Sprintf(`request: {url: %q, %s}`, resource,
		credentials("${PROBE_SECRET}", fmt.Sprintf(", token_url: %q, audience: docs-api", as.TokenURL()))))
	clock := clockwork.NewFakeClockAt(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	e := NewExecutor(Options{Clock: clock})

	first := e.Run(context.Background(), p)
	if first.Outcome != results.Pass || methods(first) != "POST token/200 GET/200" {
		t.Fatalf("first run = %s, rows %s; want a pass: POST token/200 GET/200", probetest.Dump(first), methods(first))
	}
	if r := as.Requests(); len(r) != 1 || r[0].Form.Get("audience") != "docs-api" || r[0].Form.Has("resource") {
		t.Errorf("token requests = %+v; want one with audience docs-api and no resource", r)
	}
	tokens := as.Accepted()
	if err := as.Revoke(context.Background(), tokens[0]); err != nil {
		t.Fatal(err)
	}
	second := e.Run(context.Background(), p)
	if second.Outcome != results.Pass || methods(second) != "GET/401 POST token/200 GET/200" || second.AttemptCount() != 1 {
		t.Errorf("after a revocation: run = %s, rows %s; want a pass in one attempt: GET/401 POST token/200 GET/200",
			probetest.Dump(second), methods(second))
	}
	clock.Advance(59 * time.Minute)
	third := e.Run(context.Background(), p)
	if third.Outcome != results.Pass || methods(third) != "request/200" {
		t.Errorf("59 minutes into an hour's token: rows %s; want request/200 on the cached token", methods(third))
	}
	clock.Advance(45 * time.Second)
	fourth := e.Run(context.Background(), p)
	if fourth.Outcome != results.Pass || methods(fourth) != "POST token/200 GET/200" {
		t.Errorf("15 s before the token expires: rows %s; want a fresh token first", methods(fourth))
	}
	for _, r := range []results.Result{first, second, third, fourth} {
		noToken(t, r, as)
	}
}

// TestOAuthMetadataOnlyIn401: a server whose metadata is at no well-known
// place, named only by its 401's WWW-Authenticate, is found through it.
func TestOAuthMetadataOnlyIn401(t *testing.T) {
	as := oauthtest.Start(t, oauthtest.Config{ClientID: oauthClient, ClientSecret: oauthSecret})
	resource := as.Protect(t, "/search", true, func(meta string) http.Handler { return as.Require(searchProvider(), meta) })
	p := oauthProbe(t, fmt.Sprintf(`request: {url: %q, %s}`, resource, credentials("${PROBE_SECRET}", "")))
	res := NewExecutor(Options{}).Run(context.Background(), p)
	want := "GET oauth-protected-resource/404 GET oauth-protected-resource/404 GET/401 " +
		"GET oauth-protected-resource/200 GET oauth-authorization-server/200 POST token/200 GET/200"
	if res.Outcome != results.Pass || methods(res) != want {
		t.Errorf("run = %s, rows %s; want a pass: %s", probetest.Dump(res), methods(res), want)
	}
}

// TestOAuthFailures: a token endpoint that refuses the credentials is
// contract_error auth_rejected, not retried; one that cannot be reached,
// or answers 503, is unavailable with the transport's or the status's
// code, retried; a server with no metadata anywhere is auth_discovery.
// No message carries the secret.
func TestOAuthFailures(t *testing.T) {
	as := oauthtest.Start(t, oauthtest.Config{ClientID: oauthClient, ClientSecret: oauthSecret, Scopes: []string{"search:read"}})
	down := oauthtest.Start(t, oauthtest.Config{ClientID: oauthClient, ClientSecret: oauthSecret})
	down.SetDown(true)
	resource := as.Protect(t, "/search", false, func(meta string) http.Handler { return as.Require(searchProvider(), meta) })
	bare := as.Protect(t, "/bare", true, func(string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusUnauthorized) })
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/token"
	l.Close()

	for _, tt := range []struct {
		name     string
		url      string
		extra    string
		secret   string
		outcome  results.Outcome
		code     results.Code
		attempts int
		message  string
	}{
		{"wrong secret", resource, "", "not-the-secret", results.ContractError, results.CodeAuthRejected, 1, "refused the client credentials: HTTP 401 invalid_client"},
		{"scope refused", resource, "", "${PROBE_SECRET}", results.ContractError, results.CodeAuthRejected, 1, "invalid_scope"},
		{"unknown client", resource, "", "${PROBE_SECRET}", results.ContractError, results.CodeAuthRejected, 1, "invalid_client"},
		{"unreachable", resource, fmt.Sprintf(", token_url: %q", closed), "${PROBE_SECRET}", results.Unavailable, results.CodeConnectionRefused, 2, "requesting the OAuth token"},
		{"down", resource, fmt.Sprintf(", token_url: %q", down.TokenURL()), "${PROBE_SECRET}", results.Unavailable, results.CodeServerError, 2, "the token endpoint answered HTTP 503"},
		{"no metadata", bare, "", "${PROBE_SECRET}", results.ContractError, results.CodeAuthDiscovery, 1, "resource_metadata"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			block := credentials(tt.secret, tt.extra)
			switch tt.name {
			case "scope refused":
				block = strings.Replace(block, "search:read", "admin", 1)
			case "unknown client":
				block = strings.Replace(block, oauthClient, "stranger", 1)
			}
			p := oauthProbe(t, fmt.Sprintf(`request: {url: %q, %s}`, tt.url, block))
			res := NewExecutor(Options{}).Run(context.Background(), p)
			if res.Outcome != tt.outcome || res.Code() != tt.code || res.AttemptCount() != tt.attempts ||
				res.Error == nil || !strings.Contains(res.Error.Message, tt.message) {
				t.Errorf("run = %s\n%s; want %s %s in %d attempts, the message naming %q", probetest.Dump(res), methods(res),
					tt.outcome, tt.code, tt.attempts, tt.message)
			}
			noToken(t, res, as)
		})
	}
}

// BenchmarkRunHTTPOAuth is BenchmarkRunHTTP with OAuth client credentials:
// every run but the first reuses the cached token, which the provider
// checks with the authorization server (in the same process, so its CPU
// counts in cpu-ns/op as the provider's does).
func BenchmarkRunHTTPOAuth(b *testing.B) {
	body := []byte(searchBody(benchRunItems))
	as := oauthtest.Start(b, oauthtest.Config{ClientID: oauthClient, ClientSecret: oauthSecret})
	resource := as.Protect(b, "/search", false, func(meta string) http.Handler {
		return as.Require(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}), meta)
	})
	p := testProbe(b, strings.TrimSuffix(resource, "/search"))
	delete(p.Steps[0].Request.Headers, "Authorization")
	p.Steps[0].Request.OAuth = &checks.OAuth{ClientID: oauthClient, ClientSecret: oauthSecret, TokenURL: as.TokenURL()}
	e := NewExecutor(Options{})
	defer e.CloseIdleConnections()
	measureRuns(b, e, p)
	if n := len(as.Requests()); n != 1 {
		b.Errorf("%d token requests, want 1: every run after the first reuses the token", n)
	}
}
