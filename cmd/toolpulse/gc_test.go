package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
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
		{"tuned, already tighter", true, 5, 5},
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

// TestSetMemoryLimit gives the daemon's heap 90 % of a container's limit
// as a soft limit, and leaves it alone when the limit is none (cgroup v1's
// near-2^63), when cgroups are not there, when GOMEMLIMIT is set, and for
// an env that may not tune the collector. Not parallel: the limit is the
// process's.
func TestSetMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	unlimited := debug.SetMemoryLimit(-1)
	for _, c := range []struct {
		name      string
		tune      bool
		env       string // GOMEMLIMIT, "" for unset
		limits    func() (uint64, error)
		want      int64
		wantInLog string
	}{
		{"container limit", true, "", func() (uint64, error) { return 200 * mib, nil }, 180 * mib, "soft memory limit"},
		{"not tuned", false, "", func() (uint64, error) { return 200 * mib, nil }, unlimited, ""},
		{"cgroup v1 unlimited", true, "", func() (uint64, error) { return 9223372036854771712, nil }, unlimited, ""},
		{"no cgroups", true, "", func() (uint64, error) { return 0, memlimit.ErrCgroupsNotSupported }, unlimited, ""},
		{"unreadable", true, "", func() (uint64, error) { return 0, errors.New("permission denied") }, unlimited, "cannot read the container's memory limit"},
		{"GOMEMLIMIT wins", true, "1GiB", func() (uint64, error) { return 200 * mib, nil }, unlimited, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer debug.SetMemoryLimit(unlimited)
			if c.env != "" {
				t.Setenv("GOMEMLIMIT", c.env)
			}
			var logs bytes.Buffer
			e := &env{tuneGC: c.tune}
			e.setMemoryLimit(slog.New(slog.NewTextHandler(&logs, nil)), c.limits)
			if got := debug.SetMemoryLimit(-1); got != c.want {
				t.Errorf("memory limit %d, want %d", got, c.want)
			}
			if c.wantInLog == "" && logs.Len() > 0 || !strings.Contains(logs.String(), c.wantInLog) {
				t.Errorf("logged %q, want %q", logs.String(), c.wantInLog)
			}
		})
	}
}
