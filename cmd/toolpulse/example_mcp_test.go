package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolpulse/toolpulse/examples/provider"
)

// TestExampleMCPCheck runs `toolpulse check` on examples/mcp/checks.yaml
// against the example provider's MCP server, as its comment tells a user
// to: the tool's first release passes, its next one is contract_error
// (missing_results, exit 1); the token from the environment rides on
// every request of the session and shows in no output.
func TestExampleMCPCheck(t *testing.T) {
	const token = "s3cret-docs-token"
	p := provider.New()
	var (
		mu    sync.Mutex
		auths []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		p.Handler().ServeHTTP(w, r)
	}))
	defer p.Close()
	defer srv.Close()
	env := map[string]string{"DOCS_MCP_URL": srv.URL + "/mcp", "DOCS_MCP_TOKEN": token}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	config := filepath.Join(repoRoot(t), "examples", "mcp", "checks.yaml")
	check := func() (int, string) {
		var out, errOut bytes.Buffer
		code := run(t.Context(), []string{"-c", config, "check", "--no-record", "--format", "json"}, lookup, &out, &errOut)
		return code, out.String() + errOut.String()
	}

	code, out := check()
	if code != exitOK || !strings.Contains(out, `"status":"pass"`) || !strings.Contains(out, `"tool_name":"search_docs"`) {
		t.Errorf("the first release: exit %d, want 0 and a pass\n%s", code, out)
	}
	p.SetMCPDrifted(true)
	code, out = check()
	if code != exitContractError || !strings.Contains(out, `"code":"missing_results"`) {
		t.Errorf("the next release: exit %d, want %d and missing_results\n%s", code, exitContractError, out)
	}
	if strings.Contains(out, token) {
		t.Errorf("the output shows the token:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) < 8 {
		t.Errorf("%d requests reached the server, want two whole sessions", len(auths))
	}
	for i, a := range auths {
		if a != "Bearer "+token {
			t.Errorf("request %d carried Authorization %q, want the token from DOCS_MCP_TOKEN", i+1, a)
		}
	}
}
