package mcpsdk_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

// guarded is a go-sdk server behind the go-sdk's own bearer-token
// middleware, wrapped by guard when not nil (a gateway in front of it).
// The token secretToken carries no scope; the server wants docs:read.
func guarded(t *testing.T, guard func(http.Handler) http.Handler) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "get-weather"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Sunny"}}}, nil, nil
	})
	var srv *httptest.Server
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if "Bearer "+token != secretToken {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
			ResourceMetadataURL: srv.URL + "/.well-known/oauth-protected-resource", Scopes: []string{"docs:read"},
		})(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)).ServeHTTP(w, r)
	})
	if guard != nil {
		h = guard(h)
	}
	srv = httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestCallAuthRefusals: a refusal before tools/call says what the server
// wants and keeps the status: a 401 with `WWW-Authenticate: Bearer
// resource_metadata=…` (the go-sdk's middleware) says the server wants
// OAuth and where its metadata is; a 403 says the scope it asks for; a
// gateway's plain-text 403 that names the fix is quoted, bounded, with no
// secret in it.
func TestCallAuthRefusals(t *testing.T) {
	gateway := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Forbidden: this API key may not call MCP tools. Grant it the mcp:tools permission at https://console.example.com/keys "+
				"and try again."+strings.Repeat(" Details follow.", 40), http.StatusForbidden)
		})
	}
	for _, c := range []struct {
		name, token string
		guard       func(http.Handler) http.Handler
		status      int
		fragments   []string
	}{
		{name: "401 OAuth", token: "Bearer wrong", status: 401, fragments: []string{
			"HTTP 401 Unauthorized: the server wants an OAuth access token (WWW-Authenticate: Bearer; its protected resource metadata is at ",
			`/.well-known/oauth-protected-resource"), scope "docs:read"`,
			`the body says "invalid token"`}},
		{name: "403 scope", status: 403, fragments: []string{
			`HTTP 403 Forbidden: the server wants an OAuth access token`, `scope "docs:read"`, `the body says "insufficient scope"`}},
		{name: "403 from a gateway", guard: gateway, status: 403, fragments: []string{
			`HTTP 403 Forbidden: the body says "Forbidden: this API key may not call MCP tools. Grant it the mcp:tools permission at https://console.example.com/keys and try again.`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(testkit.NoLeaks(t))
			url := guarded(t, c.guard)
			a := call(t, url, callCase{auth: c.token})
			t.Logf("%s", describe(a))
			checkAnswer(t, a, results.CodeUnexpectedStatus, "")
			for _, f := range c.fragments {
				if !strings.Contains(a.Err.Message, f) {
					t.Errorf("message %q lacks %q", a.Err.Message, f)
				}
			}
			if n := len([]rune(a.Err.Message)); n > 600 {
				t.Errorf("message of %d characters, want it bounded", n)
			}
			if a.Status != c.status {
				t.Errorf("status %d, want %d: the refusal before tools/call is the run's status", a.Status, c.status)
			}
		})
	}
}
