package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/testkit"
)

// TestConfigYAML: the builder writes, byte for byte, the configs the
// end-to-end tests wrote by hand before it (the golden files were taken
// from those), and every config it writes loads.
func TestConfigYAML(t *testing.T) {
	const prov, slack = "http://127.0.0.1:1111", "http://127.0.0.1:2222"
	crash := Config{
		Storage: Storage{Path: "results.db", Retention: Retain(0)}, MaxConcurrency: 3,
		Defaults: Defaults{Interval: 150 * time.Millisecond, Jitter: 100 * time.Millisecond, Timeout: 2 * time.Second,
			Retries: Retries{MaxAttempts: 1, Budget: 4 * time.Second}},
		Notify:    &Notify{WebhookURL: slack, FailureThreshold: 1, RepeatInterval: time.Hour},
		Consumers: []Consumer{ListOnly},
		Probes:    []Probe{SearchProbe("search", prov+"/search")},
	}
	for i := 1; i < 20; i++ {
		crash.Probes = append(crash.Probes, SearchProbe(fmt.Sprintf("load_%02d", i), "http://127.0.0.1:3333/search"))
	}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"daemon", Fast(prov, slack, "alpha", "beta")},
		{"crash", crash},
		{"routes", func() Config {
			c := Fast(prov, slack, "alpha", "beta")
			off := false
			c.Server.PublicURL = "https://toolpulse.example.com"
			c.Notify.Routes = []Route{
				{Match: map[string]string{"team": "search"}, SlackWebhookURL: slack + "/search",
					On: []string{"contract_error"}, FailureThreshold: 2, RepeatInterval: time.Minute, SendResolved: &off},
				{Match: map[string]string{"team": "payments", "tier": "gold"}, WebhookURL: "http://127.0.0.1:4444/hook", WebhookSecret: "s3cret",
					AlertmanagerURL: "http://127.0.0.1:9093"},
			}
			c.Probes[0].Labels = map[string]string{"team": "search"}
			return c
		}()},
		{"mcp", func() Config {
			c := Fast(prov, slack, "alpha")
			c.Probes = append(c.Probes, Probe{Name: "docs_tool", Consumer: ListOnly.Name,
				MCP: &MCP{URL: prov + "/mcp", Tool: "search", Arguments: map[string]any{"query": "API migration guide"}}})
			return c
		}()},
		{"every-field", Config{
			Storage: Storage{Path: "x$y/results.db", Retention: Retain(8760 * time.Hour)},
			Server:  Server{Listen: "127.0.0.1:9", Token: "${TOKEN}"},
			Defaults: Defaults{Interval: time.Minute + 30*time.Second, Timeout: time.Second, Retries: Retries{
				MaxAttempts: 2, BaseDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond, Budget: 2 * time.Second}},
			Notify: &Notify{RepeatInterval: 1500 * time.Millisecond},
			Consumers: []Consumer{ListOnly, {Name: "select_results", File: "consumer.yaml"},
				{Name: "on", Select: "response.runs", Validate: "type(.run_id) == \"string\"\n&& .dev_score > 0"}},
			Probes: []Probe{{
				Name: "every_field",
				Request: Request{Method: "POST", URL: prov + "/search?a=b",
					Headers: map[string]string{"Authorization": "Bearer ${TOKEN}", "X-Api-Key": "k"},
					Query:   map[string]string{"lang": "en", "n": "1"},
					JSON:    map[string]any{"query": "API migration guide", "n": 2, "tags": []any{"a", true, nil}}},
				Consumer: "on", Labels: map[string]string{"team": "search"},
			}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.cfg.YAML()
			testkit.Golden(t, filepath.Join("testdata", tc.name+".golden"), []byte(got))
			dir := t.TempDir()
			consumer, err := os.ReadFile("../../consumers/select_results.yaml")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "checks.yaml")
			for name, text := range map[string][]byte{"consumer.yaml": consumer, "checks.yaml": []byte(got)} {
				if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			lookup := func(name string) (string, bool) { return "tok", name == "TOKEN" }
			if _, err := checks.Load(path, lookup); err != nil {
				t.Errorf("the config does not load: %v\n%s", err, got)
			}
		})
	}
}

// TestConfigValues: what the builder writes is what toolpulse reads.
func TestConfigValues(t *testing.T) {
	cfg := Config{
		Storage:   Storage{Path: Literal("a$b.db"), Retention: Retain(0)},
		Defaults:  Defaults{Interval: 8760 * time.Hour, Jitter: 8759 * time.Hour},
		Notify:    &Notify{WebhookURL: "http://127.0.0.1:1/services/x", FailureThreshold: 3},
		Consumers: []Consumer{ListOnly},
		Probes: []Probe{{Name: "p", Consumer: "list_only", Request: Request{
			URL: "http://127.0.0.1:2/x", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}}},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "checks.yaml")
	if err := cfg.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := checks.Load(path, func(name string) (string, bool) { return "tok", name == "TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	p := got.Probe("p")
	if got.Storage.Path != filepath.Join(dir, "a$b.db") || got.Storage.Retention != 0 {
		t.Errorf("storage %+v, want a$b.db kept whole and no retention", got.Storage)
	}
	if p.Interval != 8760*time.Hour || p.Jitter != 8759*time.Hour || got.Notify.FailureThreshold != 3 {
		t.Errorf("interval %v, jitter %v, threshold %d", p.Interval, p.Jitter, got.Notify.FailureThreshold)
	}
	if h := p.Steps[0].Request.Headers["Authorization"].Reveal(); h != "Bearer tok" {
		t.Errorf("header %q, want ${TOKEN} expanded", h)
	}
}
