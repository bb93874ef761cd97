package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's GOGC without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestLoadConfigTightensGC loads a config through the path every command
// takes and reads GOGC while the parser runs (the config's ${VAR} lookup
// happens mid-parse): configGCPercent then, the setting before it after,
// and no change at all for an env that may not tune the collector. Not
// parallel: GOGC is the process's.
func TestLoadConfigTightensGC(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checks.yaml")
	config := `version: 1
storage: {path: "${DB_PATH}"}
consumers:
  - {name: all, version: "1", select: response.results}
probes:
  - {name: p, request: {url: "http://127.0.0.1:1/"}, consumer: all}
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name         string
		tune         bool
		before, want int
	}{
		{"tuned", true, 100, configGCPercent},
		{"tuned, already tighter", true, 10, 10},
		{"tuned, GOGC=off", true, -1, -1},
		{"not tuned", false, 100, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			prev := debug.SetGCPercent(c.before)
			defer debug.SetGCPercent(prev)
			during := 0
			e := &env{ctx: t.Context(), tuneGC: c.tune, lookupEnv: func(name string) (string, bool) {
				during = gcPercent()
				return filepath.Join(t.TempDir(), "t.db"), name == "DB_PATH"
			}}
			root := &cli{Config: path}
			if _, err := root.loadConfig(e); err != nil {
				t.Fatal(err)
			}
			if during != c.want {
				t.Errorf("GOGC while parsing = %d, want %d", during, c.want)
			}
			if after := gcPercent(); after != c.before {
				t.Errorf("GOGC after = %d, want %d as before", after, c.before)
			}
		})
	}
}
