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

// checkFixture runs one fixture the way a probe with min_results 1 would.
func checkFixture(c *consumers.Consumer, f consumers.Fixture) error {
	status := f.Status
	if status == 0 {
		status = 200
	}
	v := c.Apply(consumers.Input{Response: f.Response, Status: status, Headers: f.Headers}, 1)
	got, code := results.Pass, results.Code("")
	if v.Err != nil {
		got, code = v.Err.Code.Outcome(), v.Err.Code
	}
	switch {
	case got != f.Expect.Outcome:
		return fmt.Errorf("got %s %s (%v), want %s", got, code, v.Err, f.Expect.Outcome)
	case f.Expect.Code != "" && code != f.Expect.Code:
		return fmt.Errorf("got code %s (%v), want %s", code, v.Err, f.Expect.Code)
	case v.Selected < f.Expect.MinSelected:
		return fmt.Errorf("selected %d, want at least %d", v.Selected, f.Expect.MinSelected)
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
