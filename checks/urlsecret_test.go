package checks

import (
	"slices"
	"strings"
	"testing"
)

// TestURLSecrets: the values of credential parameters and whatever ${VAR}
// put into a URL's path or query are secrets; the scheme, the host and the
// literal values of other parameters are not.
func TestURLSecrets(t *testing.T) {
	env := map[string]string{"TOKEN": "123456:bot-token-ab", "KEY": "key-9f8e7d", "HOST": "api.example.test",
		"MCP_URL": "https://mcp.example.test/t/mcp-token-5c4b/mcp"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name  string
		probe string
		want  []string // among Secrets()
		not   []string // never among Secrets()
	}{
		{"a token in the path", `request: {url: "https://${HOST}/bot${TOKEN}/getMe"}`,
			[]string{"123456:bot-token-ab"}, []string{"api.example.test", "https://api.example.test"}},
		{"an api key in the query", `request: {url: "https://api.example.test/v1/search?api_key=${KEY}&q=x"}`,
			[]string{"key-9f8e7d"}, nil},
		{"a literal query value", `request: {url: "https://api.example.test/v1?api_key=lit-key%2Fab"}`,
			[]string{"lit-key%2Fab", "lit-key/ab"}, nil},
		{"a query: value", `request: {url: "https://api.example.test/v1", query: {api_key: "${KEY}"}}`,
			[]string{"key-9f8e7d"}, nil},
		{"credential names", `request: {url: "https://api.example.test/v1?X-Api-Key=lit-xkey&access_token=lit-tok&sig=lit-sig", query: {clientSecret: lit-cs}}`,
			[]string{"lit-xkey", "lit-tok", "lit-sig", "lit-cs"}, nil},
		// A literal value of any other parameter is no secret: scrubbed
		// from every sample, the word would go with the answer's keys.
		{"literal values of other parameters", `request: {url: "https://api.example.test/v1?format=json&fields=title", query: {lang: english}}`,
			nil, []string{"json", "title", "english"}},
		{"a ${VAR} in any parameter", `request: {url: "https://api.example.test/v1?q=${KEY}"}`,
			[]string{"key-9f8e7d"}, nil},
		{"an MCP URL with a token in its path", `mcp: {url: "https://mcp.example.test/t/${TOKEN}/mcp", tool: t}`,
			[]string{"123456:bot-token-ab"}, []string{"/mcp", "mcp.example.test"}},
		{"a token in a step's path", `steps: [{name: s, consumer: c, request: {url: "https://${HOST}/bot${TOKEN}/getMe"}}]`,
			[]string{"123456:bot-token-ab"}, []string{"api.example.test"}},
		// A whole URL from one variable is the endpoint: its path
		// ("/mcp") is no secret, or the word would go from every sample.
		{"a whole URL from the environment", `mcp: {url: "${MCP_URL}", tool: t}`,
			nil, []string{"https://mcp.example.test/t/mcp-token-5c4b/mcp", "/t/mcp-token-5c4b/mcp", "mcp.example.test"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("checks.yaml", []byte("version: 1\nconsumers: [{name: c, select: response.items}]\nprobes:\n  - name: p\n    "+consumer(tt.probe)+tt.probe+"\n"), t.TempDir(), lookup)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Secrets()
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("Secrets() = %q, want %q among them", got, w)
				}
			}
			for _, n := range tt.not {
				if slices.Contains(got, n) {
					t.Errorf("Secrets() = %q: %q is not a secret", got, n)
				}
			}
		})
	}
}

// consumer is a probe's consumer line, which a steps probe leaves out.
func consumer(probe string) string {
	if strings.HasPrefix(probe, "steps:") {
		return ""
	}
	return "consumer: c\n    "
}

// TestMCPTargetHidesPathToken: the server every surface shows of an MCP
// probe keeps its host and loses the token ${VAR} put in its path.
func TestMCPTargetHidesPathToken(t *testing.T) {
	cfg, err := Parse("checks.yaml", []byte(`version: 1
consumers: [{name: c, select: response.items}]
probes:
  - {name: p, consumer: c, mcp: {url: "https://mcp.example.test/t/${TOKEN}/mcp", tool: search}}
`), t.TempDir(), func(string) (string, bool) { return "tok/en-5c4b", true })
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Probes[0].MCPTarget().Server
	if strings.Contains(got, "5c4b") || got != "https://mcp.example.test/t/<redacted>/mcp" {
		t.Errorf("MCPTarget().Server = %q, want https://mcp.example.test/t/<redacted>/mcp", got)
	}
}
