package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
	"github.com/toolpulse/toolpulse/web"
)

// testConfig is a checks.yaml against the example provider: a two-layout
// consumer (seed 000's fix), the strict list-only parser that broke, and the
// experiment tracker of seed 003.
const testConfig = `version: 1
storage: {path: results.db}
defaults:
  timeout: 2s
  retries: {max_attempts: 3, base_delay: 1ms, max_delay: 5ms, budget: 10s}
consumers:
  - name: two_layouts
    version: "2"
    select: |
      let raw = response.results;
      (type(raw) == "array" ? raw
        : type(raw) == "map" && type(raw?.items) == "array" ? raw.items
        : fail("unsupported_results_container", "results is " + type(raw)))
      | filter(.score >= 0.75)
    validate: type(.id) == "string" && type(.score) in ["int", "float"]
  - name: list_only
    version: "1"
    select: |
      type(response.results) == "array"
        ? filter(response.results, .score >= 0.75)
        : fail("unsupported_results_container", "results is " + type(response.results))
  - name: search_runs
    version: "1"
    select: response.runs
    validate: type(.run_id) == "string" && type(.dev_score) == "float"
probes:
  - name: search
    request:
      method: POST
      url: ${PROVIDER}/search
      headers: {Authorization: "Bearer ${SEARCH_TOKEN}"}
      json: {query: API migration guide}
    consumer: two_layouts
  - name: search_strict
    request: {method: POST, url: "${PROVIDER}/search", json: {query: API migration guide}}
    consumer: list_only
  - name: tracker
    request: {url: "${PROVIDER}/runs", query: {config: cfg-9f2c}}
    consumer: search_runs
    expect: {min_results: 0}
`

const testSecret = "sk-test-5f1d2c3b4a"

type cliRun struct {
	t        *testing.T
	dir      string
	provider *provider.Provider
	env      map[string]string
}

func newCLIRun(t *testing.T) *cliRun {
	t.Helper()
	p := provider.New()
	url := e2e.Serve(t, p.Handler())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "checks.yaml"), []byte(testConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return &cliRun{t: t, dir: dir, provider: p, env: map[string]string{
		"PROVIDER": url, "SEARCH_TOKEN": testSecret,
	}}
}

// run runs the CLI in-process with the run's config and environment.
func (h *cliRun) run(args ...string) (code int, stdout, stderr string) {
	h.t.Helper()
	var out, errOut bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := h.env[k]; return v, ok }
	args = append([]string{"-c", filepath.Join(h.dir, "checks.yaml")}, args...)
	code = run(context.Background(), args, lookup, &out, &errOut)
	return code, out.String(), errOut.String()
}

func decodeEnvelopes(t *testing.T, out string) map[string]results.Envelope {
	t.Helper()
	got := map[string]results.Envelope{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var env results.Envelope
		if err := json.Unmarshal([]byte(line), &env); err != nil {
			t.Fatalf("output line is not an envelope: %v\n%s", err, line)
		}
		got[env.ToolName] = env
	}
	return got
}

// TestCheckSeed000Drill replays the seed-000 drill end to end: the provider
// wraps its results in an object; the list-only consumer must turn
// contract_error while the two-layout consumer keeps passing, and every
// result must be recorded.
func TestCheckSeed000Drill(t *testing.T) {
	h := newCLIRun(t)

	code, out, errOut := h.run("check", "--format", "json")
	if code != exitOK {
		t.Fatalf("healthy provider: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	healthy := decodeEnvelopes(t, out)
	for _, name := range []string{"search", "search_strict", "tracker"} {
		if env := healthy[name]; env.Status != results.Pass || env.Data == nil || env.Data.ValidatedCount == 0 {
			t.Errorf("%s: %+v, want pass with validated items", name, env)
		}
	}

	h.provider.SetDrifted(true)
	code, out, _ = h.run("check", "--format", "json")
	if code != exitContractError {
		t.Fatalf("drifted provider: exit %d, want %d\n%s", code, exitContractError, out)
	}
	drifted := decodeEnvelopes(t, out)
	strict := drifted["search_strict"]
	if strict.Status != results.ContractError || strict.Error == nil || strict.Error.Code != "unsupported_results_container" || strict.Data != nil {
		t.Errorf("search_strict after drift = %+v, want contract_error unsupported_results_container and no data", strict)
	}
	if env := drifted["search"]; env.Status != results.Pass {
		t.Errorf("two-layout consumer after drift = %s, want pass", env.Status)
	}
	if healthy["search"].Shape.Fingerprint == drifted["search"].Shape.Fingerprint {
		t.Errorf("fingerprint did not change when the provider drifted")
	}

	store, err := sqlite.Open(context.Background(), filepath.Join(h.dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rec, err := store.Result(context.Background(), strict.OperationID)
	if err != nil {
		t.Fatalf("contract_error result was not recorded: %v", err)
	}
	if rec.Outcome != results.ContractError || rec.Code() != "unsupported_results_container" || rec.ResponseSample == "" {
		t.Errorf("recorded %+v, want the contract error with its response sample", rec)
	}
}

func TestCheckExitCodes(t *testing.T) {
	h := newCLIRun(t)
	h.provider.SetDown(true)
	code, out, _ := h.run("check", "--probe", "tracker", "--no-record")
	if code != exitUnavailable {
		t.Fatalf("tracker down: exit %d, want %d\n%s", code, exitUnavailable, out)
	}
	if !regexp.MustCompile(`tracker\s+unavailable\s+server_error\s+3\s`).MatchString(out) {
		t.Errorf("text table does not show unavailable/server_error after 3 attempts:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "results.db")); !os.IsNotExist(err) {
		t.Errorf("--no-record created the database (stat err %v)", err)
	}

	tests := []struct {
		name string
		args []string
		want int
	}{
		{"unknown probe", []string{"check", "--probe", "nope"}, exitUsage},
		{"unknown flag", []string{"check", "--frobnicate"}, exitUsage},
		{"bad format", []string{"check", "--format", "xml"}, exitUsage},
		{"unknown command", []string{"launch"}, exitUsage},
		{"help", []string{"--help"}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, errOut := h.run(tt.args...); code != tt.want {
				t.Errorf("exit %d, want %d\n%s", code, tt.want, errOut)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	h := newCLIRun(t)
	if code, out, errOut := h.run("validate"); code != exitOK || !strings.Contains(out, "ok (3 probes, 3 consumers") {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errOut)
	}
	bad := strings.Replace(testConfig, "max_attempts: 3", "max_attempts: 11", 1)
	bad = strings.Replace(bad, "select: response.runs", "select: respons.runs", 1)
	if err := os.WriteFile(filepath.Join(h.dir, "checks.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := h.run("validate")
	if code != exitConfig {
		t.Fatalf("invalid config: exit %d, want %d\n%s%s", code, exitConfig, out, errOut)
	}
	// Every error is reported, each with file:line:col.
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`checks\.yaml:5:\d+: .*max_attempts`),
		regexp.MustCompile(`checks\.yaml:24:\d+: .*respons`),
	} {
		if !want.MatchString(errOut) {
			t.Errorf("stderr does not match %s:\n%s", want, errOut)
		}
	}
	if code, _, _ := h.run("check"); code != exitConfig {
		t.Errorf("check with invalid config: exit %d, want %d", code, exitConfig)
	}
}

// TestSecretNeverShown sends a secret in a header to a provider that echoes
// it back in every way it can, and then looks for it everywhere toolpulse
// writes: stdout in both formats, stderr, every page and API response over
// the results, and the raw database files.
func TestSecretNeverShown(t *testing.T) {
	echo := e2e.Serve(t, harness.EchoCredentials())
	h := newCLIRun(t)
	h.env["PROVIDER"] = echo

	var all strings.Builder
	for _, format := range []string{"text", "json"} {
		code, out, errOut := h.run("check", "--format", format)
		if code == exitOK {
			t.Fatalf("echo provider passed; the test would prove nothing")
		}
		all.WriteString(out + errOut)
	}
	pages := serveStored(t, h)
	if !strings.Contains(pages, "&lt;redacted&gt;") {
		t.Errorf("no page shows the scrubbed echo: the pages were not searched")
	}
	all.WriteString(pages)
	entries, err := os.ReadDir(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(h.dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() != "checks.yaml" {
			all.Write(b)
		}
	}
	if strings.Contains(all.String(), testSecret) {
		t.Errorf("the secret leaked into output or storage")
	}
	if !strings.Contains(all.String(), results.Redacted) {
		t.Errorf("no %s marker found: the echo never reached output, so this test proves nothing", results.Redacted)
	}
}

// storedServer serves the HTTP surface over the run's database.
func storedServer(t *testing.T, h *cliRun) (*httptest.Server, *checks.Config) {
	t.Helper()
	lookup := func(k string) (string, bool) { v, ok := h.env[k]; return v, ok }
	cfg, err := checks.Load(filepath.Join(h.dir, "checks.yaml"), lookup)
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(context.Background(), cfg.Storage.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv := httptest.NewServer(web.NewServer(web.Deps{
		Logger: slog.New(slog.DiscardHandler), Healthy: func(context.Context) error { return nil }, Metrics: http.NotFoundHandler(),
		Store: store, Probes: func() []*checks.Probe { return cfg.Probes },
	}))
	t.Cleanup(srv.Close)
	return srv, cfg
}

// serveStored returns every page and API response over the run's
// database, concatenated.
func serveStored(t *testing.T, h *cliRun) string {
	t.Helper()
	srv, cfg := storedServer(t, h)
	paths := []string{"/", "/?show=failing", "/api/v1/probes", "/api/v1/drifts", "/api/v1/silences", "/healthz"}
	for _, p := range cfg.Probes {
		paths = append(paths, "/probes/"+p.Name, "/api/v1/probes/"+p.Name+"/results")
	}
	var all strings.Builder
	for _, path := range paths {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d\n%s", path, resp.StatusCode, body)
		}
		all.Write(body)
	}
	return all.String()
}

// TestVersion: --version and `toolpulse version` print the build the
// metric and the User-Agent also name, and exit 0 without a config.
func TestVersion(t *testing.T) {
	want := results.ReadBuild().String() + "\n"
	if !strings.HasPrefix(want, "toolpulse dev") && !strings.HasPrefix(want, "toolpulse v") {
		t.Fatalf("version line %q names neither a release nor dev", want)
	}
	for _, args := range [][]string{{"--version"}, {"version"}, {"-c", "/nonexistent.yaml", "--version"}} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, func(string) (string, bool) { return "", false }, &out, &errOut)
		if code != exitOK || out.String() != want || errOut.Len() != 0 {
			t.Errorf("toolpulse %s: exit %d, stdout %q, stderr %q; want 0 and %q", strings.Join(args, " "), code, out.String(), errOut.String(), want)
		}
	}
}
