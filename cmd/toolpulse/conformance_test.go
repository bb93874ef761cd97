package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// conformanceServerScenarios are the conformance suite's server scenarios
// that apply to toolpulse's /mcp, a read-only, stateless tools endpoint,
// each at the wire version it is run on. docs/mcp.md says why the others
// do not apply (they call the suite's own fixture tools, prompts or
// resources, or need sessions and server-sent streams).
var conformanceServerScenarios = []struct{ name, spec string }{
	{"server-initialize", "2025-11-25"},
	{"server-session-lifecycle", "2025-11-25"},
	{"ping", "2025-11-25"},
	{"logging-set-level", "2025-11-25"},
	{"tools-list", "2025-11-25"},
	{"dns-rebinding-protection", "2025-11-25"},
	{"server-stateless", "2026-07-28"},
	{"tools-list", "2026-07-28"},
	{"caching", "2026-07-28"},
	{"http-header-validation", "2026-07-28"},
	{"dns-rebinding-protection", "2026-07-28"},
}

// conformanceClientScenarios are the suite's client scenarios toolpulse
// runs as the client: the suite starts its server and runs args with the
// server's URL appended. want is the outcome and code `mcp call` must
// print; suitePasses is whether the suite itself must pass (an
// elicitation scenario fails by design: a probe cannot answer one, and
// says so as needs_input).
var conformanceClientScenarios = []struct {
	name        string
	args        []string
	suitePasses bool
	want        string // "" for mcp tools, which prints no verdict
	env         string // VAR=VALUE put before the command, for a scenario's secret
}{
	{"initialize", []string{"mcp", "tools", "--url"}, true, "", ""},
	{"tools_call", []string{"mcp", "call", "--tool", "add_numbers", "--arguments", `'{"a":2,"b":3}'`, "--format", "json", "--url"}, true, "pass", ""},
	{"sse-retry", []string{"mcp", "call", "--tool", "test_reconnection", "--format", "json", "--url"}, true, "pass", ""},
	{"elicitation-sep1034-client-defaults", []string{"mcp", "call", "--tool", "test_client_elicitation_defaults", "--timeout", "5s", "--format", "json", "--url"}, false, "needs_input", ""},
	// The client credentials extension (SEP-1046): the suite's server
	// wants a token its authorization server issues to the credentials it
	// hands the client in MCP_CONFORMANCE_CONTEXT, found through its
	// protected resource metadata. (Its private_key_jwt variant does not
	// apply: toolpulse authenticates with a client secret only.)
	{"auth/client-credentials-basic", []string{"mcp", "tools", "--oauth-client-id", fromContext("client_id"),
		"--oauth-client-secret-env", "CONFORMANCE_SECRET", "--url"}, true, "", "CONFORMANCE_SECRET=" + fromContext("client_secret")},
}

// fromContext is a shell expression for one string member of the JSON
// object the suite hands a client in MCP_CONFORMANCE_CONTEXT: the client
// credentials of the auth scenarios.
func fromContext(key string) string {
	return `"$(printf %s "$MCP_CONFORMANCE_CONTEXT" | sed -n 's/.*"` + key + `":"\([^"]*\)".*/\1/p')"`
}

// TestMCPConformance runs the MCP conformance suite
// (@modelcontextprotocol/conformance, on Node 22+ from npm) inside a
// private network namespace: its server scenarios that apply to a
// read-only tools endpoint against the real daemon's /mcp, back to back
// (so /mcp's budget per client must carry the whole run), and its client
// scenarios with toolpulse as the client. Under CI it fails without the
// suite.
func TestMCPConformance(t *testing.T) {
	suite := mcptest.FindConformance(t)
	baseline, err := filepath.Abs("testdata/conformance/expected-failures.yml")
	if err != nil {
		t.Fatal(err)
	}
	mcptest.InPrivateNetwork(t, func(t *testing.T) {
		t.Logf("conformance %s on Node %s", suite.Version, suite.NodeVersion)
		p := provider.New()
		prov := e2e.Serve(t, p.Handler())
		dir, addr := t.TempDir(), e2e.FreeAddr(t)
		cfg := harness.Fast(prov, "", "search")
		cfg.Server.Listen = addr
		d := e2e.Start(t, e2e.Config(t, dir, cfg))
		db := filepath.Join(dir, "results.db")
		d.WaitFor("a recorded run", func() bool { return countRows(t, db, "SELECT count(*) FROM results") > 0 })
		endpoint := "http://" + addr + "/mcp"
		out := t.TempDir()
		started := time.Now()

		// First the suite's whole active set at each wire version, each in
		// one process, as fast as it goes: the burst an MCP client makes.
		// The scenarios that do not apply fail there (they call fixture
		// tools toolpulse does not have); those that apply must pass.
		ran := map[string]bool{}
		for _, spec := range []string{"2025-11-25", "2026-07-28"} {
			dir := filepath.Join(out, "suite-"+spec)
			got, _ := suite.Command(t.Context(), out, "server", "--url", endpoint, "--spec-version", spec, "-o", dir).CombinedOutput()
			t.Logf("the active suite at %s, back to back: %s", spec, totalLine(got))
			for _, sc := range conformanceServerScenarios {
				if sc.spec != spec {
					continue
				}
				failed, found := scenarioFailures(t, dir, sc.name)
				if !found {
					continue
				}
				ran[sc.name+"@"+sc.spec] = true
				if len(failed) > 0 {
					t.Errorf("%s at %s, run back to back with the whole suite: %s", sc.name, spec, strings.Join(failed, "; "))
				}
			}
		}
		// Then the applicable scenarios the active set leaves out (draft
		// ones), each on its own, with the known failures of the baseline.
		for _, sc := range conformanceServerScenarios {
			if ran[sc.name+"@"+sc.spec] {
				continue
			}
			cmd := suite.Command(t.Context(), out, "server", "--url", endpoint, "--scenario", sc.name,
				"--spec-version", sc.spec, "--expected-failures", baseline, "-o", filepath.Join(out, "server"), "--timeout", "20000")
			got, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s at %s: %v\n%s", sc.name, sc.spec, err, got)
				continue
			}
			t.Logf("%s at %s: %s", sc.name, sc.spec, summary(got))
		}
		t.Logf("server scenarios: %v", time.Since(started).Round(time.Millisecond))

		bin := e2e.Binary(t)
		for _, sc := range conformanceClientScenarios {
			t.Run("client/"+sc.name, func(t *testing.T) {
				results := filepath.Join(out, "client-"+sc.name)
				command := append([]string{bin}, sc.args...)
				if sc.env != "" {
					// The suite runs the command through a shell.
					command = append([]string{"env", sc.env}, command...)
				}
				cmd := suite.Command(t.Context(), out, "client", "--command", strings.Join(command, " "),
					"--scenario", sc.name, "-o", results, "--timeout", "20000")
				got, err := cmd.CombinedOutput()
				switch {
				case sc.suitePasses && err != nil:
					t.Errorf("the suite failed toolpulse as the client of %s: %v\n%s", sc.name, err, got)
				case !sc.suitePasses && err == nil:
					t.Errorf("the suite passed %s, which a probe cannot answer; see what toolpulse printed:\n%s", sc.name, got)
				default:
					t.Logf("%s: %s", sc.name, summary(got))
				}
				if sc.want == "" {
					return
				}
				stdout := clientStdout(t, results)
				var verdict struct {
					Outcome string  `json:"outcome"`
					Code    *string `json:"code"`
					Message *string `json:"message"`
				}
				if err := json.Unmarshal(stdout, &verdict); err != nil {
					t.Fatalf("mcp call printed no verdict: %v\n%s", err, stdout)
				}
				if got := verdictName(verdict.Outcome, verdict.Code); got != sc.want {
					t.Errorf("toolpulse as the client of %s: %s; want %s\n%s", sc.name, got, sc.want, stdout)
				}
			})
		}
		t.Logf("the suite's run: %v", time.Since(started).Round(time.Millisecond))
	})
}

// verdictName is "pass", or the code of a failure.
func verdictName(outcome string, code *string) string {
	if code != nil {
		return *code
	}
	return outcome
}

// clientStdout is what the client printed in a client scenario, as the
// suite kept it under dir.
func clientStdout(t *testing.T, dir string) []byte {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(dir, "*", "stdout.txt"))
	if err != nil || len(found) != 1 {
		t.Fatalf("the suite kept %d client outputs under %s (%v); want 1", len(found), dir, err)
	}
	b, err := os.ReadFile(found[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// scenarioFailures reads the checks of one scenario the suite kept under
// dir, and returns those that failed or warned; found is false when the
// run did not include the scenario.
func scenarioFailures(t *testing.T, dir, scenario string) (failed []string, found bool) {
	t.Helper()
	kept, err := filepath.Glob(filepath.Join(dir, "server-"+scenario+"-*", "checks.json"))
	if err != nil || len(kept) == 0 {
		return nil, false
	}
	for _, path := range kept {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			ErrorMessage string `json:"errorMessage"`
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, c := range checks {
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				failed = append(failed, c.ID+": "+c.ErrorMessage)
			}
		}
	}
	return failed, true
}

var totalRE = regexp.MustCompile(`Total: \d+ passed, \d+ failed`)

// totalLine is the suite's count of a run of several scenarios.
func totalLine(out []byte) string {
	if m := totalRE.Find(out); m != nil {
		return string(m)
	}
	return summary(out)
}

var passedLine = regexp.MustCompile(`Passed: \d+/\d+, \d+ failed, \d+ warnings`)

// summary is the suite's one-line count of a run, or its last line.
func summary(out []byte) string {
	if m := passedLine.Find(out); m != nil {
		return string(m)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return string(lines[len(lines)-1])
}
