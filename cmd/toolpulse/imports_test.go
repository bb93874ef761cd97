package main

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/toolpulse/toolpulse"

// owners says which package alone may import each third-party module: a
// swap of one dependency touches one folder.
var owners = map[string]string{
	"github.com/goccy/go-yaml":              module + "/checks",
	"github.com/expr-lang/expr":             module + "/consumers",
	"github.com/hashicorp/go-retryablehttp": module + "/runner",
	"github.com/go-co-op/gocron":            module + "/runner",
	"github.com/google/uuid":                module + "/runner",
	"github.com/mattn/go-sqlite3":           module + "/results/sqlite",
	"github.com/slack-go/slack":             module + "/results/slack",
	"github.com/prometheus/client_golang":   module + "/results/prometheus",
	"github.com/prometheus/client_model":    module + "/results/prometheus",
	"google.golang.org/protobuf":            module + "/results/prometheus",
	"github.com/alecthomas/kong":            module + "/cmd/toolpulse",
	"github.com/KimMachineGun/automemlimit": module + "/cmd/toolpulse",
	"github.com/chromedp":                   module + "/cmd/toolpulse", // its tests drive the status page in Chromium
}

// forbidden lists edges between our own packages that would turn siblings
// into a tangle; imports flow downward only and cmd wires.
var forbidden = map[string][]string{
	module + "/results":        {module + "/"},
	module + "/results/shape":  {module + "/"},
	module + "/consumers":      {module + "/checks", module + "/runner", module + "/results/sqlite", module + "/results/slack", module + "/results/prometheus"},
	module + "/checks":         {module + "/runner", module + "/results/sqlite", module + "/results/slack"},
	module + "/runner":         {module + "/results/sqlite", module + "/results/slack", module + "/results/prometheus", module + "/cmd"},
	module + "/results/sqlite": {module + "/checks", module + "/runner", module + "/consumers"},
}

// TestImportGraph fails on an import that breaks the layering in STYLE:
// domain at the bottom, one owner per dependency, siblings apart.
func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			for dep, owner := range owners {
				if (imp == dep || strings.HasPrefix(imp, dep+"/")) && pkg != owner {
					t.Errorf("%s imports %s; only %s may", pkg, imp, owner)
				}
			}
			for _, prefix := range forbidden[pkg] {
				if strings.HasPrefix(imp, prefix) && imp != pkg {
					t.Errorf("%s imports %s: forbidden edge", pkg, imp)
				}
			}
			if imp == module+"/internal/testkit" {
				t.Errorf("%s imports %s: only tests may", pkg, imp)
			}
			if (pkg == module+"/results" || pkg == module+"/results/shape") && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				t.Errorf("%s imports %s: the domain uses the standard library only", pkg, imp)
			}
		}
	}
}
