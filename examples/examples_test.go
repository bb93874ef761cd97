package examples_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/examples"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner/prober"
)

// TestDemoConfigLoads loads every config under examples/ and runs every
// fixture of every consumer it uses, so an example cannot rot.
func TestDemoConfigLoads(t *testing.T) {
	var configs []string
	err := fs.WalkDir(os.DirFS("."), ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "checks.yaml" {
			configs = append(configs, path)
		}
		return err
	})
	if err != nil || len(configs) == 0 {
		t.Fatalf("no example configs found (err %v)", err)
	}
	for _, path := range configs {
		t.Run(path, func(t *testing.T) {
			cfg, err := checks.Load(path, lookup)
			if err != nil {
				t.Fatalf("example config does not load:\n%v", err)
			}
			for name, c := range cfg.Consumers {
				if len(c.Fixtures) == 0 {
					t.Errorf("consumer %s has no fixtures", name)
				}
				for _, f := range c.Fixtures {
					if err := checkFixture(c, f); err != nil {
						t.Errorf("%s / %s: %v", name, f.Name, err)
					}
				}
			}
		})
	}
}

// lookup is the environment the example configs are loaded with.
func lookup(k string) (string, bool) {
	switch k {
	case "DEMO_PROVIDER_URL":
		return "http://127.0.0.1:1", true
	case "DOCS_MCP_TOKEN":
		return "example-docs-token", true
	}
	return "", false
}

// TestMCPExample: examples/mcp is an MCP probe of the example provider's
// search_docs, with its Authorization header a secret from the
// environment, and the keys a copy most often changes spelled out; its
// consumer is the demo's, so that the two cannot part.
func TestMCPExample(t *testing.T) {
	cfg, err := checks.Load("mcp/checks.yaml", lookup)
	if err != nil {
		t.Fatalf("examples/mcp does not load:\n%v", err)
	}
	if len(cfg.Probes) != 1 || cfg.Probes[0].Steps[0].MCP == nil {
		t.Fatalf("examples/mcp has %d probes, want one MCP probe", len(cfg.Probes))
	}
	p := cfg.Probes[0]
	m := p.Steps[0].MCP
	if m.URL != "http://127.0.0.1:8099/mcp" || m.Tool != "search_docs" || m.Arguments["query"] != "API migration guide" ||
		m.IsError != results.ContractError || m.AllowDestructive || m.Watch != (checks.MCPWatch{Prompts: true, Resources: true}) {
		t.Errorf("probe %s: url %s, tool %s, arguments %v, is_error %s, allow_destructive %v, watch %+v", p.Name, m.URL, m.Tool, m.Arguments, m.IsError, m.AllowDestructive, m.Watch)
	}
	if auth := m.Headers["Authorization"]; auth.Reveal() != "Bearer example-docs-token" || fmt.Sprint(auth) == auth.Reveal() {
		t.Errorf("Authorization %q (printed %v), want the token from DOCS_MCP_TOKEN, printed redacted", auth.Reveal(), auth)
	}
	raw, err := os.ReadFile("mcp/checks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"headers:", "${DOCS_MCP_TOKEN}", "is_error:", "allow_destructive:", "watch:"} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("examples/mcp/checks.yaml does not show %s", key)
		}
	}
	example, err := os.ReadFile("mcp/consumers/docs_results.yaml")
	if err != nil {
		t.Fatal(err)
	}
	demo, err := fs.ReadFile(examples.Demo, "demo/consumers/docs_results.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(example, demo) {
		t.Errorf("examples/mcp/consumers/docs_results.yaml differs from examples/demo/consumers/docs_results.yaml; copy it over")
	}
}

// checkFixture judges one fixture as `toolpulse test` does.
func checkFixture(c *consumers.Consumer, f consumers.Fixture) error {
	v := prober.NewExecutor(prober.Options{}).JudgeFixture(c, f, checks.DefaultStatus)
	if miss := f.Expect.Mismatch(v.Outcome, v.Code(), v.Selected); miss != "" {
		return fmt.Errorf("%s (%v)", miss, v.Error)
	}
	return nil
}

// TestDemoSelectResultsIsTheRootConsumer keeps the demo's copy of the
// seed-000 consumer identical to the one the root checks.yaml uses.
func TestDemoSelectResultsIsTheRootConsumer(t *testing.T) {
	root, err := os.ReadFile(filepath.Join("..", "consumers", "select_results.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	demo, err := fs.ReadFile(examples.Demo, "demo/consumers/select_results.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(root, demo) {
		t.Errorf("examples/demo/consumers/select_results.yaml differs from consumers/select_results.yaml; copy it over")
	}
}
