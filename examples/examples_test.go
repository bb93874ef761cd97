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
	"github.com/toolpulse/toolpulse/runner"
)

// TestDemoConfigLoads loads every config under examples/ and runs every
// fixture of every consumer it uses, so an example cannot rot.
func TestDemoConfigLoads(t *testing.T) {
	lookup := func(k string) (string, bool) {
		if k == "DEMO_PROVIDER_URL" {
			return "http://127.0.0.1:1", true
		}
		return "", false
	}
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

// checkFixture judges one fixture as `toolpulse test` does.
func checkFixture(c *consumers.Consumer, f consumers.Fixture) error {
	v := runner.JudgeFixture(c, f, checks.DefaultStatus)
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
