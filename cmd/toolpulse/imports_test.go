package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/toolpulse/toolpulse"

// owners says which package alone may import each third-party module, in
// its code or its tests: a swap of one dependency touches one folder. An
// owner ending in "/..." is a package and the packages under it, for a
// module the daemon and its engine both speak in.
// Every module go.mod requires directly needs an owner here.
var owners = map[string]string{
	"github.com/goccy/go-yaml":              module + "/checks",
	"github.com/santhosh-tekuri/jsonschema": module + "/checks", // its tests check checks.schema.json against every example and fixture
	"github.com/expr-lang/expr":             module + "/consumers",
	"github.com/hashicorp/go-retryablehttp": module + "/runner/prober",
	"github.com/go-co-op/gocron":            module + "/runner",
	"github.com/google/uuid":                module + "/runner/...", // gocron's job ids, the engine's operation ids
	"github.com/jonboulle/clockwork":        module + "/runner/...", // gocron's clock, the engine's
	"github.com/mattn/go-sqlite3":           module + "/results/sqlite",
	"github.com/jackc/pgx":                  module + "/results/postgres",
	"github.com/slack-go/slack":             module + "/results/slack",
	"github.com/prometheus/client_golang":   module + "/results/prometheus",
	"github.com/prometheus/client_model":    module + "/results/prometheus",
	"github.com/prometheus/common":          module + "/results/prometheus", // its tests parse the exposition
	"google.golang.org/protobuf":            module + "/results/prometheus",
	"github.com/alecthomas/kong":            module + "/cmd/toolpulse",
	"github.com/KimMachineGun/automemlimit": module + "/cmd/toolpulse",
	"golang.org/x/time":                     module + "/web",
	"github.com/chromedp":                   module + "/cmd/toolpulse", // its tests drive the status page in Chromium
	"go.uber.org/goleak":                    module + "/internal/testkit",

	// Its tests meet internal/mcptest and an npm server with the SDK's client.
	"github.com/modelcontextprotocol/go-sdk": module + "/mcpsdk",
	// It checks structuredContent against a tool's outputSchema: the SDK
	// depends on it already, so it adds no module to the binary
	// (santhosh-tekuri, above, is for checks/ tests only).
	"github.com/google/jsonschema-go": module + "/mcpsdk",

	// The client credentials grant of probes with OAuth (SPEC §10.1).
	"golang.org/x/oauth2": module + "/oauth",
	// A real authorization server on loopback, for tests only.
	"github.com/go-oauth2/oauth2": module + "/internal/oauthtest",
}

// forbidden lists edges between our own packages that would turn siblings
// into a tangle; imports flow downward only and cmd wires.
var forbidden = map[string][]string{
	module + "/results":       {module + "/"},
	module + "/results/shape": {module + "/"},
	module + "/consumers":     {module + "/checks", module + "/runner", module + "/results/sqlite", module + "/results/slack", module + "/results/prometheus"},
	module + "/checks":        {module + "/runner", module + "/results/sqlite", module + "/results/slack"},
	module + "/runner":        {module + "/results/sqlite", module + "/results/slack", module + "/results/prometheus", module + "/cmd"},
	// The engine runs one probe and returns its result: it never reaches
	// back into the daemon, a store, a receiver or the surfaces above it.
	module + "/runner/prober":  {module + "/runner", module + "/results/sqlite", module + "/results/slack", module + "/results/prometheus", module + "/web", module + "/cmd"},
	module + "/results/sqlite": {module + "/checks", module + "/runner", module + "/consumers"},
	// The HTTP surface reads the store and the config; the daemon and the
	// receivers reach it only through what cmd passes to NewServer.
	// It tells "not found" by results.ErrNotFound, whichever store answers.
	module + "/web": {module + "/cmd", module + "/runner", module + "/results/sqlite", module + "/results/slack", module + "/results/prometheus"},
	// What the CLI and the web surface both print sits below them both.
	module + "/results/present": {module + "/checks", module + "/runner", module + "/web", module + "/cmd"},
	// The store contract holds every store; it must not lean on one.
	module + "/internal/storetest": {module + "/results/sqlite", module + "/results/postgres", module + "/cmd"},
	// The fleet's store stands beside the embedded one, never on it.
	module + "/results/postgres": {module + "/checks", module + "/runner", module + "/consumers", module + "/results/sqlite"},
	// The token source speaks OAuth and nothing else: the engine hands it
	// plain credentials and a client.
	module + "/oauth": {module + "/checks", module + "/runner", module + "/mcpsdk", module + "/web", module + "/cmd", module + "/results/"},
	// The engine's test providers serve the engine's and the daemon's tests alike.
	module + "/internal/probetest": {module + "/runner", module + "/cmd"},
}

// TestImportGraph fails on an import that breaks the layering in STYLE:
// domain at the bottom, one owner per dependency (tests included), siblings
// apart, the test kit, the MCP test server, the refund desk, the engine's
// test providers and the long-message fixture for tests only (the kit's own
// subpackages and the MCP test server build on the kit, the engine's test
// providers on the MCP test server) and the end-to-end harness for tests,
// the test kit and toolpulse-bench only.
func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "|")
		pkg, code, tests := fields[0], strings.Fields(fields[1]), strings.Fields(fields[2])
		for i, imp := range append(code, tests...) {
			inTest := i >= len(code)
			for dep, owner := range owners {
				if (imp == dep || strings.HasPrefix(imp, dep+"/")) && !owns(owner, pkg) {
					t.Errorf("%s imports %s; only %s may", pkg, imp, owner)
				}
			}
			if inTest {
				continue
			}
			for _, prefix := range forbidden[pkg] {
				if strings.HasPrefix(imp, prefix) && imp != pkg {
					t.Errorf("%s imports %s: forbidden edge", pkg, imp)
				}
			}
			kit := within(pkg, module+"/internal/testkit") || pkg == module+"/internal/mcptest"
			if (within(imp, module+"/internal/testkit") && !kit) || (imp == module+"/internal/storetest" && pkg != imp) || (imp == module+"/internal/mcptest" && pkg != imp && pkg != module+"/internal/probetest") || (imp == module+"/internal/refunddesk" && pkg != imp) || (imp == module+"/internal/probetest" && pkg != imp) || (imp == module+"/internal/longmessage" && pkg != imp) || (imp == module+"/internal/oauthtest" && pkg != imp) {
				t.Errorf("%s imports %s: only tests may", pkg, imp)
			}
			if within(imp, module+"/internal/harness") && pkg != module+"/cmd/toolpulse-bench" && !within(pkg, module+"/internal/testkit") {
				t.Errorf("%s imports %s: only tests and toolpulse-bench may", pkg, imp)
			}
			if (pkg == module+"/results" || pkg == module+"/results/shape") && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				t.Errorf("%s imports %s: the domain uses the standard library only", pkg, imp)
			}
		}
	}
}

// TestOneShotCommandsUseTheEngineOnly: check and test run probes once and
// print; they take the engine, never the daemon, whose schedule, store
// writes and alerts they must not start.
func TestOneShotCommandsUseTheEngineOnly(t *testing.T) {
	for _, file := range []string{"check.go", "test.go", "test_report.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			if imp, _ := strconv.Unquote(spec.Path.Value); imp == module+"/runner" {
				t.Errorf("%s imports %s; it takes %s/runner/prober only", file, imp, module)
			}
		}
	}
}

// TestBinaryCarriesTimeZones: the binary embeds the time zone database,
// so that a maintenance window's timezone loads on a host without one
// (the scratch image) as it did where the config was validated.
func TestBinaryCarriesTimeZones(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if !slices.Contains(strings.Fields(string(out)), "time/tzdata") {
		t.Error("cmd/toolpulse does not import time/tzdata")
	}
}

// owns reports whether owner, as owners spells it, names pkg.
func owns(owner, pkg string) bool {
	if tree, ok := strings.CutSuffix(owner, "/..."); ok {
		return within(pkg, tree)
	}
	return pkg == owner
}

// within reports whether pkg is root or a package under it.
func within(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// TestEveryModuleHasAnOwner: a module go.mod requires directly, with no
// owner in owners, would be importable from anywhere.
func TestEveryModuleHasAnOwner(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", `{{if not .Indirect}}{{if not .Main}}{{.Path}}{{end}}{{end}}`, "all").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m: %v\n%s", err, out)
	}
	for _, mod := range strings.Fields(string(out)) {
		owned := false
		for dep := range owners {
			owned = owned || mod == dep || strings.HasPrefix(mod, dep+"/")
		}
		if !owned {
			t.Errorf("go.mod requires %s, which has no owner in owners", mod)
		}
	}
}
