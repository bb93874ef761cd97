package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/internal/mcptest"
)

// runIn runs the CLI in-process from dir (for relative config and consumer
// paths), with an empty environment.
func runIn(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Chdir(dir)
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, func(string) (string, bool) { return "", false }, &out, &errOut)
	return code, out.String(), errOut.String()
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestTestSeedExamples runs the seed consumers and seed 002's verified
// drills the way CI would: every fixture passes and --mutate finds no
// unaccepted blind spot. The drills' canned runs are decided at the step
// each names: order 31's buried ok at the refund, a clean lie at the
// verification, an order record without its id at the capture. The seed's
// own envelope consumer, which no example tool answers in, is tested by
// name.
func TestTestSeedExamples(t *testing.T) {
	root := repoRoot(t) // before runIn changes directory
	code, out, errOut := runIn(t, root, "-c", "examples/seeds/checks.yaml", "test", "--mutate")
	if code != exitOK {
		t.Fatalf("exit %d, want 0\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"select_results v2", "search_runs v1",
		"orders_refund_envelope v1", "ok  order 31, declined with a buried ok",
		"accepted    wrap_list results  [original list layout]",
		"control     add_field $  [runs found]",
		"probe refund_order_31_verified (steps: order, refund, verify, cleanup)",
		"probe refund_clean_lie_verified (steps: order, refund, verify, cleanup)",
		"expected contract_error refund_rejected at step refund  got contract_error refund_rejected at step refund",
		"expected contract_error claim_mismatch at step verify   got contract_error claim_mismatch at step verify",
		"expected contract_error capture_failed at step order    got contract_error capture_failed at step order",
		"expected unavailable server_error at step verify        got unavailable server_error at step verify",
		"not tested (no probe uses them; name them with --consumer): refund_envelope",
		"ok: 8 consumer(s), 2 probe(s) with steps,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out, "BLIND SPOT") || strings.Contains(out, "FAIL") {
		t.Errorf("a seed consumer or drill fails or has an unaccepted blind spot\n%s", out)
	}

	_, out, _ = runIn(t, root, "-c", "examples/seeds/checks.yaml", "test", "--mutate", "--format", "json")
	var report struct {
		Probes []struct {
			Name     string `json:"name"`
			OK       bool   `json:"ok"`
			Fixtures []struct {
				Name, Step string
				OK         bool
			} `json:"fixtures"`
			Mutation struct {
				Bases []string `json:"bases"`
			} `json:"mutation"`
		} `json:"probes"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	wantSteps := map[string][]string{
		// pass, refund_rejected, claim_mismatch, capture_failed, unavailable
		"refund_order_31_verified": {"", "refund", "verify", "order", "verify"},
		// pass, claim_mismatch (a clean lie), claim_mismatch (another refund), capture_failed
		"refund_clean_lie_verified": {"", "verify", "verify", "order"},
	}
	if len(report.Probes) != len(wantSteps) {
		t.Fatalf("%d probes with steps in the report, want %d", len(report.Probes), len(wantSteps))
	}
	for _, p := range report.Probes {
		var steps []string
		for _, f := range p.Fixtures {
			steps = append(steps, f.Step)
			if !f.OK {
				t.Errorf("%s / %s: not ok", p.Name, f.Name)
			}
		}
		if !p.OK || !slices.Equal(steps, wantSteps[p.Name]) {
			t.Errorf("%s: ok %v, deciding steps %q, want %q", p.Name, p.OK, steps, wantSteps[p.Name])
		}
		// Every step a rule reads is mutated; the clean-up's answer is not.
		if bases := strings.Join(p.Mutation.Bases, ", "); strings.Count(bases, ": step ") != 3 || strings.Contains(bases, "cleanup") {
			t.Errorf("%s: mutation bases %s; want the order, refund and verify steps of the passing fixture", p.Name, bases)
		}
	}

	code, out, errOut = runIn(t, root, "-c", "examples/seeds/checks.yaml", "test", "--mutate", "--consumer", "refund_envelope")
	if code != exitOK || !strings.Contains(out, "refund_envelope v1") ||
		!strings.Contains(out, "ok  order 31, rejected with a buried ok") || strings.Contains(out, "BLIND SPOT") {
		t.Errorf("--consumer refund_envelope: exit %d, want 0 with order 31's fixture and no blind spot\n%s%s", code, out, errOut)
	}
}

// TestTestPermissiveAndStrict mutation-tests seed 000's permissive check
// and its strict rule side by side: the permissive one lets a retyped
// score through and fails; the strict one kills it.
func TestTestPermissiveAndStrict(t *testing.T) {
	root := repoRoot(t)
	code, out, _ := runIn(t, t.TempDir(), "test", "--mutate", "--consumer",
		filepath.Join(root, "examples/seeds/consumers/results_permissive.yaml"))
	if code != exitContractError {
		t.Errorf("permissive: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		"BLIND SPOT  retype results[].score number->string",
		"results[].score: number -> string",
		"it never checks the type of score",
		"control     add_field $",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("permissive output lacks %q\n%s", want, out)
		}
	}
	code, out, _ = runIn(t, t.TempDir(), "test", "--mutate", "--consumer", filepath.Join(root, "consumers/select_results.yaml"))
	if code != exitOK || strings.Contains(out, "retype results[].score number->string") {
		t.Errorf("strict: exit %d, want 0 with the score retype killed\n%s", code, out)
	}
}

const testCmdConfig = `version: 1
consumers:
  - name: items
    version: "3"
    select: response.items
    validate: type(.id) == "string"
    fixtures:
      - name: one item
        response: {items: [{id: a}]}
        expect: pass
      - name: wrong on purpose
        response: {items: [{id: 7}]}
        expect: {outcome: contract_error, code: empty_selection}
    accept_mutations:
      - {mutation: wrap_list itemz, reason: a typo}
  - name: unused
    select: response.x
    fixtures:
      - name: x
        response: {x: [1]}
        expect: pass
probes:
  - name: p
    request: {url: "http://127.0.0.1:9/"}
    consumer: items
`

func TestTestFixtureMismatchAndExitCodes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "checks.yaml"), []byte(testCmdConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("name: bad\nselect: response.(\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runIn(t, dir, "test")
	if code != exitContractError {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"FAIL  wrong on purpose",
		"FAIL items / wrong on purpose: got code invalid_item, want empty_selection",
		"invalid_item: item 0 failed validate",
		"not tested (no probe uses them; name them with --consumer): unused",
		"FAIL: 1 consumer(s), 2 fixture(s), 1 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	// An unused consumer is tested when named.
	if code, out, _ := runIn(t, dir, "test", "--consumer", "unused"); code != exitOK || !strings.Contains(out, "unused v (") {
		t.Errorf("--consumer unused: exit %d\n%s", code, out)
	}
	for _, tt := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"test", "--consumer", "nope"}, exitUsage, `no consumer named "nope"`},
		{[]string{"test", "--from-db"}, exitUsage, "--from-db needs --mutate"},
		{[]string{"test", "--consumer", "bad.yaml"}, exitConfig, "bad.yaml:2:"},
	} {
		code, _, errOut := runIn(t, dir, tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.err) {
			t.Errorf("%v: exit %d %q, want %d and %q", tt.args, code, errOut, tt.code, tt.err)
		}
	}
}

func TestTestJSONAndJUnit(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "checks.yaml"), []byte(testCmdConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runIn(t, dir, "test", "--mutate", "--format", "json", "--junit", "report.xml")
	if code != exitContractError {
		t.Errorf("exit %d, want 1", code)
	}
	var report struct {
		OK        bool `json:"ok"`
		Consumers []struct {
			Name     string `json:"name"`
			OK       bool   `json:"ok"`
			Fixtures []struct {
				Name     string `json:"name"`
				OK       bool   `json:"ok"`
				Outcome  string `json:"outcome"`
				Code     string `json:"code"`
				Mismatch string `json:"mismatch"`
			} `json:"fixtures"`
			Mutation struct {
				Total     int      `json:"total"`
				Killed    int      `json:"killed"`
				Score     float64  `json:"score"`
				Stale     []string `json:"stale_accepts"`
				Survivors []struct {
					Mutation string   `json:"mutation"`
					Class    string   `json:"class"`
					Diff     []string `json:"diff"`
				} `json:"survivors"`
			} `json:"mutation"`
		} `json:"consumers"`
		Unused []string `json:"unused_consumers"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, out)
	}
	if report.OK || len(report.Consumers) != 1 || len(report.Consumers[0].Fixtures) != 2 || len(report.Unused) != 1 {
		t.Fatalf("report = %+v", report)
	}
	c := report.Consumers[0]
	if f := c.Fixtures[1]; f.OK || f.Code != "invalid_item" || f.Mismatch == "" {
		t.Errorf("mismatched fixture = %+v", f)
	}
	if m := c.Mutation; m.Total == 0 || m.Killed+len(m.Survivors) != m.Total || m.Score <= 0 || m.Score > 1 ||
		len(m.Stale) != 1 || m.Stale[0] != "wrap_list itemz" {
		t.Errorf("mutation = %+v", m)
	}

	// JUnit: the elements and attributes CI systems require, and counts
	// that agree with the cases.
	b, err := os.ReadFile(filepath.Join(dir, "report.xml"))
	if err != nil {
		t.Fatal(err)
	}
	type attr = *string
	var junit struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    attr     `xml:"tests,attr"`
		Failures attr     `xml:"failures,attr"`
		Suites   []struct {
			Name     attr `xml:"name,attr"`
			Tests    int  `xml:"tests,attr"`
			Failures int  `xml:"failures,attr"`
			Errors   attr `xml:"errors,attr"`
			Skipped  int  `xml:"skipped,attr"`
			Time     attr `xml:"time,attr"`
			Cases    []struct {
				Name      attr `xml:"name,attr"`
				Classname attr `xml:"classname,attr"`
				Time      attr `xml:"time,attr"`
				Failure   *struct {
					Message attr   `xml:"message,attr"`
					Type    attr   `xml:"type,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &junit); err != nil {
		t.Fatalf("report.xml: %v\n%s", err, b)
	}
	if junit.Tests == nil || junit.Failures == nil || len(junit.Suites) != 1 {
		t.Fatalf("testsuites lacks tests/failures or has %d suites\n%s", len(junit.Suites), b)
	}
	s := junit.Suites[0]
	if s.Name == nil || *s.Name != "items" || s.Errors == nil || s.Time == nil || s.Tests != len(s.Cases) {
		t.Fatalf("testsuite attributes wrong\n%s", b)
	}
	failures, skipped, fixtureFailed := 0, 0, false
	for _, c := range s.Cases {
		if c.Name == nil || c.Classname == nil || c.Time == nil {
			t.Errorf("a testcase lacks name, classname or time\n%s", b)
		}
		if c.Failure != nil {
			failures++
			if c.Failure.Message == nil || c.Failure.Type == nil {
				t.Errorf("a failure lacks message or type")
			}
			fixtureFailed = fixtureFailed || (*c.Name == "wrong on purpose" && strings.Contains(c.Failure.Text, "invalid_item"))
		}
		if c.Skipped != nil {
			skipped++
		}
	}
	if s.Failures != failures || s.Skipped != skipped || !fixtureFailed {
		t.Errorf("suite says %d failures, %d skipped; cases have %d, %d; fixture failure reported: %v\n%s",
			s.Failures, s.Skipped, failures, skipped, fixtureFailed, b)
	}
}

// TestTestFromDB mutates the latest recorded passing answer of each probe:
// `check` records real runs, then `test --mutate --from-db` uses them.
func TestTestFromDB(t *testing.T) {
	h := newCLIRun(t)
	if code, out, errOut := h.run("check"); code != exitOK {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := h.run("test", "--mutate", "--from-db", "--format", "json")
	if code == exitUsage || code == exitSoftware || code == exitConfig {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{`"bases":["db: search"]`, `"bases":["db: search_strict"]`, `"bases":["db: tracker"]`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s: the recorded answers were not mutated\n%s", want, out)
		}
	}
	if strings.Contains(out, testSecret) {
		t.Errorf("the secret leaked into the report")
	}
}

// TestTestFromDBMCP: the recorded answer of an MCP probe is what its
// rules saw as response, and `test --mutate --from-db` mutates it as an
// HTTP probe's body; a result: fixture of the same consumer is mutated
// beside it.
func TestTestFromDBMCP(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Config{Era: mcptest.Legacy, Tools: []mcptest.Tool{{
		Name:        "search",
		Description: "Search the docs.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Handler: func(context.Context, json.RawMessage) mcptest.Result {
			return mcptest.Result{
				Content:           []mcptest.Content{{Type: "text", Text: "see structuredContent"}},
				StructuredContent: map[string]any{"results": []any{map[string]any{"id": "doc_1", "title": "Guide"}}},
			}
		},
	}}})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "consumers", "docs.yaml"), `name: docs
version: "1"
select: result.structuredContent.results
validate: type(.id) == "string" && type(.title) == "string"
fixtures:
  - name: structured
    result:
      content: [{type: text, text: see structuredContent}]
      structuredContent: {results: [{id: doc_9, title: Other}]}
    expect: pass
`)
	writeFile(t, filepath.Join(dir, "checks.yaml"), `version: 1
storage: {path: results.db}
defaults:
  timeout: 2s
  retries: {max_attempts: 1, budget: 5s}
consumers:
  - {name: docs, file: consumers/docs.yaml}
probes:
  - name: docs_search
    mcp: {url: "${MCP_URL}", tool: search, arguments: {query: guide}}
    consumer: docs
`)
	h := &cliRun{t: t, dir: dir, env: map[string]string{"MCP_URL": srv.URL}}
	if code, out, errOut := h.run("check"); code != exitOK {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := h.run("test", "--mutate", "--from-db", "--format", "json")
	if code == exitUsage || code == exitSoftware || code == exitConfig {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, `"bases":["structured","db: docs_search"]`) {
		t.Errorf("the fixture's result and the recorded MCP answer were not both mutated\n%s%s", out, errOut)
	}
}

// writeFile writes content to path, making its directory.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTestProbeFixtures: `toolpulse test` judges a multi-step probe's
// canned runs as a whole, names the deciding step, and with --mutate
// reports, step by step, what the probe would miss.
func TestTestProbeFixtures(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "checks.yaml"), `version: 1
storage: {path: results.db}
consumers:
  - name: refund_envelope
    select: 'response.status == "success" ? [response.data] : fail("refund_failed", "status is " + string(response.status))'
    validate: type(.refund_id) == "string"
probes:
  - name: refund_order_31
    steps:
      - name: refund
        request: {method: POST, url: "http://127.0.0.1:9/refunds", json: {order_id: 31}}
        consumer: refund_envelope
        capture: {refund_id: response.data.refund_id}
      - name: verify
        request: {url: "http://127.0.0.1:9/orders/31"}
        until: 'response.state == "refunded" && response.refund_id == vars.refund_id'
        within: 10s
    fixtures:
      - name: real refund
        answers:
          refund: {response: {status: success, data: {refund_id: rf_31}}}
          verify: [{response: {state: paid}}, {response: {state: refunded, refund_id: rf_31}}]
        expect: pass
      - name: clean lie
        answers:
          refund: {response: {status: success, data: {refund_id: rf_31}}}
          verify: {response: {state: paid, refund_id: null}}
        expect: {outcome: contract_error, code: claim_mismatch, step: verify}
      - name: wrong step expected
        answers:
          refund: {response: {status: declined, data: {}}}
        expect: {outcome: contract_error, step: verify}
`)
	h := &cliRun{t: t, dir: dir, env: map[string]string{}}
	code, out, errOut := h.run("test", "--mutate")
	if code != exitContractError {
		t.Fatalf("exit %d, want %d (one fixture expects the wrong step)\n%s%s", code, exitContractError, out, errOut)
	}
	for _, want := range []string{
		"probe refund_order_31 (steps: refund, verify)",
		"clean lie            expected contract_error claim_mismatch at step verify  got contract_error claim_mismatch at step verify",
		`FAIL refund_order_31 / wrong step expected: decided at step "refund", want "verify"`,
		"1 probe(s) with steps",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = h.run("test", "--mutate", "--format", "json")
	var report struct {
		Probes []struct {
			Name     string `json:"name"`
			Fixtures []struct {
				Name, Step string
				OK         bool
			} `json:"fixtures"`
			Mutation struct {
				Bases []string `json:"bases"`
				Total int      `json:"total"`
			} `json:"mutation"`
		} `json:"probes"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || len(report.Probes) != 1 {
		t.Fatalf("report: %v\n%s", err, out)
	}
	p := report.Probes[0]
	if p.Fixtures[1].Step != "verify" || !p.Fixtures[1].OK || p.Fixtures[2].OK {
		t.Errorf("fixtures %+v", p.Fixtures)
	}
	if strings.Join(p.Mutation.Bases, ",") != "real refund: step refund,real refund: step verify" || p.Mutation.Total == 0 {
		t.Errorf("mutation bases %v, %d mutations", p.Mutation.Bases, p.Mutation.Total)
	}
}
