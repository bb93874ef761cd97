package checks

import (
	"reflect"
	"slices"
	"testing"
)

// TestOAuthLoads: auth.oauth_client_credentials loads under mcp: and
// under a step's request:, as SPEC §10.1 writes it (scopes: [search:read]
// is one scope, not a mapping), and its secret is one the redactor
// scrubs.
func TestOAuthLoads(t *testing.T) {
	yaml := `version: 1
consumers:
  - name: c
    select: response.items
probes:
  - name: notion_search
    mcp:
      url: https://mcp.example.com/mcp
      auth:
        oauth_client_credentials:
          client_id: toolpulse
          client_secret: ${NOTION_PROBE_SECRET}
          scopes: [search:read, "files:write", plain]
      tool: search
    consumer: c
  - name: steps
    steps:
      - name: one
        request:
          url: https://api.example.com/x
          auth: {oauth_client_credentials: {client_id: a, client_secret: b-secret, audience: api, resource: "https://api.example.com", token_url: "https://as.example.com/token"}}
`
	env := func(name string) (string, bool) { return "n0tion-s3cret", name == "NOTION_PROBE_SECRET" }
	cfg, err := Parse("checks.yaml", []byte(yaml), t.TempDir(), env)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Probes[0].Steps[0].MCP.OAuth
	want := &OAuth{ClientID: "toolpulse", ClientSecret: "n0tion-s3cret", Scopes: []string{"search:read", "files:write", "plain"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mcp oauth = %#v; want %#v", *got, *want)
	}
	step := cfg.Probes[1].Steps[0].Request.OAuth
	if step == nil || step.Audience != "api" || step.Resource != "https://api.example.com" || step.TokenURL != "https://as.example.com/token" {
		t.Errorf("step oauth = %+v", step)
	}
	for _, s := range []string{"n0tion-s3cret", "b-secret"} {
		if !slices.Contains(cfg.Secrets(), s) {
			t.Errorf("Secrets() lacks the client secret %q", s)
		}
	}
}
