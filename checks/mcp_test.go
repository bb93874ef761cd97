package checks

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

// TestLoadValidMCP: MCP probes get their mcp keys, the mcp defaults and
// every setting an HTTP probe has; an HTTP probe next to them is as before.
func TestLoadValidMCP(t *testing.T) {
	cfg, err := Load("testdata/valid-mcp.yaml", mapEnv(map[string]string{"MCP_TOKEN": "mcp-token-5150"}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	retries := Retries{MaxAttempts: DefaultMaxAttempts, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay, Budget: DefaultBudget}
	want := []Probe{
		{
			Name: "weather_tool",
			Steps: []Step{{
				MCP: &MCP{
					URL:     "https://probe:mcp-pass-31@mcp.example.test/mcp",
					Headers: map[string]Secret{"Authorization": "Bearer mcp-token-5150", "X-Team": "weather"},
					Tool:    "get-weather",
					Arguments: map[string]any{"location": "New York", "days": 2, "units": map[string]any{"temp": "c"},
						"tags": []any{"a", "b"}, "hint": nil},
					IsError:          results.Unavailable,
					AllowDestructive: true,
					Watch:            MCPWatch{Prompts: true, Resources: true},
				},
				// a tenth of the interval: no jitter is written
				Timeout: 4 * time.Second,
				Retries: Retries{MaxAttempts: 2, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay, Budget: DefaultBudget},
				Expect:  Expect{Status: []int{200, 202}, MinResults: 1},
			}},
			Interval:     30 * time.Second,
			Jitter:       3 * time.Second,
			MaxBodyBytes: 65536,
			Locations:    []string{results.DefaultLocation},
			Trace:        true,
			Labels:       map[string]string{"team": "weather"},
		},
		{
			Name: "minimal_tool",
			Steps: []Step{{
				MCP:     &MCP{URL: "http://127.0.0.1:3901/mcp", Tool: "echo", Arguments: map[string]any{}, IsError: results.ContractError},
				Timeout: 4 * time.Second,
				Retries: retries,
				Expect:  Expect{Status: []int{200, 202}, MinResults: DefaultMinResults},
			}},
			Interval:     DefaultInterval,
			Jitter:       DefaultJitter,
			MaxBodyBytes: DefaultMaxBodyBytes,
			Locations:    []string{results.DefaultLocation},
			Trace:        true,
		},
		{
			Name: "null_arguments",
			Steps: []Step{{
				MCP:     &MCP{URL: "http://127.0.0.1:3901/mcp", Tool: "echo", Arguments: map[string]any{}, IsError: results.ContractError},
				Timeout: 4 * time.Second,
				Retries: retries,
				Expect:  Expect{Status: []int{200, 202}, MinResults: DefaultMinResults},
			}},
			Interval:     DefaultInterval,
			Jitter:       DefaultJitter,
			MaxBodyBytes: DefaultMaxBodyBytes,
			Locations:    []string{results.DefaultLocation},
			Trace:        true,
		},
		{
			Name: "http_items",
			Steps: []Step{{
				Request: Request{Method: "GET", URL: "http://127.0.0.1:8099/items"},
				Timeout: 4 * time.Second,
				Retries: retries,
				Expect:  Expect{Status: []int{200, 202}, MinResults: DefaultMinResults},
			}},
			Interval:     DefaultInterval,
			Jitter:       DefaultJitter,
			MaxBodyBytes: DefaultMaxBodyBytes,
			Locations:    []string{results.DefaultLocation},
			Trace:        true,
		},
	}
	if len(cfg.Probes) != len(want) {
		t.Fatalf("got %d probes, want %d", len(cfg.Probes), len(want))
	}
	wantKind := []results.ProbeKind{results.ProbeMCP, results.ProbeMCP, results.ProbeMCP, results.ProbeHTTP}
	wantConsumer := []string{"weather_forecast", "items", "items", "items"}
	for i, p := range cfg.Probes {
		if got := p.Kind(); got != wantKind[i] {
			t.Errorf("probe %s: Kind = %q, want %q", p.Name, got, wantKind[i])
		}
		if p.Consumer() == nil || p.Consumer() != cfg.Consumers[wantConsumer[i]] {
			t.Errorf("probe %s: Consumer is not %s", p.Name, wantConsumer[i])
		}
		got := *p
		got.Steps = slices.Clone(p.Steps)
		got.Steps[0].Consumer, got.TLS = nil, nil
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("probe %d =\n%#v\n%#v\nwant\n%#v\n%#v", i, got, got.Steps[0].MCP, want[i], want[i].Steps[0].MCP)
		}
	}
	if tc := cfg.Probes[0].TLS; tc == nil || tc.RootCAs == nil || tc.InsecureSkipVerify {
		t.Errorf("weather_tool TLS = %+v, want RootCAs from certs/ca.pem", tc)
	}
	if tc := cfg.Probes[2].TLS; tc == nil || !tc.InsecureSkipVerify {
		t.Errorf("null_arguments TLS = %+v, want InsecureSkipVerify", tc)
	}
	if cfg.Probes[1].TLS != nil {
		t.Errorf("minimal_tool TLS = %+v, want nil", cfg.Probes[1].TLS)
	}

	// Fixtures: result or response, and the accessor that tells them apart.
	wantFixtures := []consumers.Fixture{
		{Name: "structured answer",
			Result: map[string]any{"content": []any{map[string]any{"type": "text", "text": `{"temperature": 21}`}},
				"structuredContent": map[string]any{"temperature": 21}, "isError": false},
			MinResults: 1, Expect: consumers.Expectation{Outcome: results.Pass}},
		{Name: "the tool says it failed",
			Result: map[string]any{"content": []any{
				map[string]any{"type": "text", "text": "upstream weather service down"},
				map[string]any{"type": "image", "data": "aGk=", "mimeType": "image/png"}},
				"isError": true, "_meta": map[string]any{"trace": "abc"}},
			MinResults: 1, Expect: consumers.Expectation{Outcome: results.ContractError, Code: "tool_said_error"}},
		{Name: "plain response", Response: map[string]any{"temperature": 21},
			MinResults: 1, Expect: consumers.Expectation{Outcome: results.Pass}},
	}
	got := cfg.Consumers["weather_forecast"].Fixtures
	if !reflect.DeepEqual(got, wantFixtures) {
		t.Errorf("fixtures =\n%#v\nwant\n%#v", got, wantFixtures)
	}
	for i, f := range got {
		r, ok := f.ToolResult()
		if ok != (i < 2) || (ok && !reflect.DeepEqual(r, f.Result)) {
			t.Errorf("fixture %q: ToolResult = %v, %v", f.Name, r, ok)
		}
	}

	// The consumer's rules read result and tool (SPEC §10).
	c := cfg.Consumers["weather_forecast"]
	tool := map[string]any{"name": "get-weather", "annotations": map[string]any{"readOnlyHint": true}}
	in := consumers.Input{Response: map[string]any{"temperature": 21}, Result: wantFixtures[0].Result, Tool: tool, Status: 200}
	if v := c.Apply(in, 1); v.Err != nil {
		t.Errorf("Apply on the structured answer: %v", v.Err)
	}
	in.Result = wantFixtures[1].Result
	if v := c.Apply(in, 1); v.Err == nil || v.Err.Code != "tool_said_error" {
		t.Errorf("Apply on isError: %+v, want tool_said_error", v)
	}
}

// TestMCPSecrets: an mcp header value, its bearer credential and the URL's
// password (and its Basic form) join the redactor, and a loaded MCP probe
// prints none of them.
func TestMCPSecrets(t *testing.T) {
	cfg, err := Load("testdata/valid-mcp.yaml", mapEnv(map[string]string{"MCP_TOKEN": "mcp-token-5150"}))
	if err != nil {
		t.Fatal(err)
	}
	secrets := cfg.Secrets()
	basic := base64.StdEncoding.EncodeToString([]byte("probe:mcp-pass-31"))
	for _, s := range []string{"Bearer mcp-token-5150", "mcp-token-5150", "mcp-pass-31", basic} {
		if !slices.Contains(secrets, s) {
			t.Errorf("Secrets() = %q, want %q among them", secrets, s)
		}
	}
	echo := "tools/call failed: Authorization: Bearer mcp-token-5150 at https://probe:mcp-pass-31@mcp.example.test/mcp (Basic " + basic + ")"
	scrubbed := cfg.Redactor().Redact(echo)
	for _, s := range []string{"mcp-token-5150", "mcp-pass-31", basic} {
		if strings.Contains(scrubbed, s) {
			t.Errorf("Redactor left %q in %q", s, scrubbed)
		}
	}

	var dump strings.Builder
	p := cfg.Probes[0]
	fmt.Fprintf(&dump, "%v %+v %#v %v\n", *p, *p.Steps[0].MCP, p.Steps[0].MCP.Headers, p.Steps[0].MCP)
	out, _ := json.Marshal(p.Steps[0].MCP)
	dump.Write(out)
	slog.New(slog.NewJSONHandler(&dump, nil)).Info("probe", "mcp", p.Steps[0].MCP)
	if strings.Contains(dump.String(), "mcp-token-5150") {
		t.Errorf("the header token shows in:\n%s", dump.String())
	}
}

// TestMCPProbeKindIsExclusive: the probe kinds table drives both the
// "neither" and the "both" errors, so that every kind reads right in both.
func TestMCPProbeKindIsExclusive(t *testing.T) {
	_, err := Parse("checks.yaml", []byte("version: 1\nconsumers: [{name: c, select: response.items}]\nprobes:\n  - {name: p, consumer: c}\n  - {name: q, consumer: c, mcp: {url: 'http://h/', tool: t}, request: {url: 'http://h/'}}\n"), t.TempDir(), nil)
	want := "checks.yaml:4:5: probes[0]: a probe needs one of request (an HTTP call, at least request.url), mcp (an MCP tool call, at least mcp.url and mcp.tool) or steps (a list of calls run in order, each a request or an mcp)\n" +
		"checks.yaml:5:62: probes[1].request: not allowed next to mcp; a probe has exactly one of request, mcp or steps"
	if err == nil || err.Error() != want {
		t.Errorf("errors:\n%v\nwant:\n%s", err, want)
	}
}

// TestLoadValidStdio: a stdio MCP probe gets its command, env and dir as
// written, its env values count as secrets, and it names its server by the
// command, without the env.
func TestLoadValidStdio(t *testing.T) {
	cfg, err := Load("testdata/valid-mcp-stdio.yaml", mapEnv(map[string]string{"MEMORY_FILE": "/var/tmp/canary.json"}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	p := cfg.Probe("memory_canary")
	m := p.Steps[0].MCP
	dir, _ := filepath.Abs("testdata/servers/memory") // relative to the config, as every path
	want := &MCP{
		Command:   []string{"npx", "-y", "@modelcontextprotocol/server-memory@2026.1.26"},
		Env:       map[string]Secret{"MEMORY_FILE_PATH": "/var/tmp/canary.json", "API_KEY": "stdio-env-secret-42"},
		Dir:       dir,
		Tool:      "read_graph",
		Arguments: map[string]any{},
		IsError:   results.ContractError,
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("MCP = %+v, want %+v", m, want)
	}
	if !slices.Contains(cfg.Secrets(), "stdio-env-secret-42") {
		t.Errorf("Secrets() = %q, want the env value among them", cfg.Secrets())
	}
	if got, want := p.MCPTarget().Server, "stdio: npx -y @modelcontextprotocol/server-memory@2026.1.26"; got != want {
		t.Errorf("MCPTarget().Server = %q, want %q", got, want)
	}
}
