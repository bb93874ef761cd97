package results

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
)

func TestCodeOutcome(t *testing.T) {
	for _, c := range UnavailableCodes {
		if got := c.Outcome(); got != Unavailable {
			t.Errorf("%s.Outcome() = %s, want unavailable", c, got)
		}
	}
	for _, c := range ContractCodes {
		if got := c.Outcome(); got != ContractError {
			t.Errorf("%s.Outcome() = %s, want contract_error", c, got)
		}
		if c.Retryable() {
			t.Errorf("%s.Retryable() = true; contract errors are never retried", c)
		}
	}
	if got := Code("unsupported_results_container").Outcome(); got != ContractError {
		t.Errorf("custom code outcome = %s, want contract_error", got)
	}
	if !CodeServerError.Retryable() || CodeCanceled.Retryable() {
		t.Errorf("server_error must be retryable and canceled must not")
	}
}

func TestValidCustomCode(t *testing.T) {
	tests := []struct {
		code string
		want bool
	}{
		{"unsupported_results_container", true},
		{"refund_not_processed", true},
		{"timeout", false}, // a rule cannot claim the provider was unreachable
		{"rate_limited", false},
		{"Bad-Code", false},
		{"", false},
		{"9lives", false},
		{"none", false}, // reserved: metrics' code label on pass
		{"other", false},
	}
	for _, tt := range tests {
		if got := ValidCustomCode(tt.code); got != tt.want {
			t.Errorf("ValidCustomCode(%q) = %v, want %v", tt.code, got, tt.want)
		}
	}
}

func TestRedactor(t *testing.T) {
	// odd holds every character an encoder treats specially: a slash,
	// HTML's three, a quote, a space, a plus and non-ASCII.
	const odd = "k3y/<a&b>\"q+r é€😀"
	r := NewRedactor("sk-live-abcdef", "sk-live-abcdef-extended", "ab", "", odd, "pct%2Fescaped", "päss-wörd-9")
	tests := []struct{ in, want string }{
		{"Bearer sk-live-abcdef", "Bearer <redacted>"},
		{"token=sk-live-abcdef-extended;", "token=<redacted>;"},
		{"ab stays: too short to be a secret", "ab stays: too short to be a secret"},
		{"", ""},
		// Every form a provider or toolpulse itself may give a secret.
		{"as is: " + odd, "as is: <redacted>"},
		{"query: ?k=" + url.QueryEscape(odd) + "&x=1", "query: ?k=<redacted>&x=1"},
		{"path: /v1/" + url.PathEscape(odd) + "/x", "path: /v1/<redacted>/x"},
		{"whole path: " + (&url.URL{Path: odd}).EscapedPath(), "whole path: <redacted>"},
		{"unescaped: pct/escaped", "unescaped: <redacted>"},
		{"base64: " + base64.StdEncoding.EncodeToString([]byte(odd)) + ".", "base64: <redacted>."},
		{"base64url: " + base64.RawURLEncoding.EncodeToString([]byte(odd)) + ".", "base64url: <redacted>."},
		{"base64 of a token: " + base64.RawStdEncoding.EncodeToString([]byte("sk-live-abcdef")), "base64 of a token: <redacted>"},
		{"html: " + html.EscapeString(odd), "html: <redacted>"},
		{`json (Go): {"k":` + goJSON(odd) + `}`, `json (Go): {"k":"<redacted>"}`},
		{`json (PHP): {"k":"k3y\/<a&b>\"q+r \u00e9\u20ac\ud83d\ude00"}`, `json (PHP): {"k":"<redacted>"}`},
		{`json (upper-case hex): {"k":"k3y\/\u003Ca\u0026b\u003E\"q+r \u00E9\u20AC\uD83D\uDE00"}`, `json (upper-case hex): {"k":"<redacted>"}`},
		{`json, non-ASCII only: "p\u00e4ss-w\u00f6rd-9"`, `json, non-ASCII only: "<redacted>"`},
		{`json of base64: "` + strings.ReplaceAll(base64.StdEncoding.EncodeToString([]byte(odd)), "/", `\/`) + `"`, `json of base64: "<redacted>"`},
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var zero *Redactor
	if got := zero.Redact("x sk-live-abcdef"); got != "x sk-live-abcdef" {
		t.Errorf("nil Redactor changed text: %q", got)
	}
	res := Result{
		Error:          &Error{Code: CodeServerError, Message: "echo sk-live-abcdef"},
		Attempts:       []Attempt{{Message: "sk-live-abcdef"}},
		ResponseSample: `{"auth":"sk-live-abcdef"}`,
	}
	res.MCP = &MCPTarget{Tool: "search", Server: "https://mcp.example.com/t/sk-live-abcdef/mcp"}
	r.RedactResult(&res)
	b, _ := json.Marshal(res)
	if bytes.Contains(b, []byte("sk-live")) {
		t.Errorf("RedactResult left a secret: %s", b)
	}
}

// goJSON is s as encoding/json writes a string, HTML escaping included.
func goJSON(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestEnvelopeGolden(t *testing.T) {
	started := time.Date(2026, 10, 26, 13, 7, 0, 123456789, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		res  Result
	}{
		{"pass", Result{
			OperationID: "0b7f6c1e-2f65-4a39-9a8e-6a1c8d3f2b10", Probe: "external_search",
			StartedAt: started, Duration: 41 * time.Millisecond, Outcome: Pass,
			Attempts: []Attempt{{Number: 1}, {Number: 2}}, HTTPStatus: 200, SelectedCount: 2, ValidatedCount: 2,
			Shape:    &Shape{Fingerprint: "4917809db2bdb220", Canonical: "…"},
			Consumer: ConsumerRef{Name: "select_results", Version: "2", RuleHash: "9c1e0a4f5b6d7e8f"},
		}},
		{"contract_error", Result{
			OperationID: "5a0e4c1b-7d2e-4f7a-8b9c-0d1e2f3a4b5c", Probe: "external_search",
			StartedAt: started, Duration: 41 * time.Millisecond, Outcome: ContractError,
			Error:    &Error{Code: "unsupported_results_container", Message: "results is map"},
			Attempts: []Attempt{{Number: 1}}, HTTPStatus: 200,
			Shape: &Shape{Fingerprint: "b600aab8c56e2f2f", Baseline: "4917809db2bdb220",
				Drift: []string{"results: list<object(3 keys)> -> object(1 keys)"}},
			Consumer: ConsumerRef{Name: "select_results", Version: "2", RuleHash: "9c1e0a4f5b6d7e8f"},
		}},
		{"unavailable", Result{
			OperationID: "c3d4e5f6-0000-4000-8000-000000000001", Probe: "tracker",
			StartedAt: started, Duration: 5 * time.Second, Outcome: Unavailable,
			Error:    NewError(CodeConnectionRefused, "dial tcp 127.0.0.1:9: connection refused"),
			Attempts: []Attempt{{Number: 1}, {Number: 2}, {Number: 3}},
			Consumer: ConsumerRef{Name: "search_runs", Version: "1", RuleHash: "0011223344556677"},
		}},
		// tool_name stays the probe's name; kind and mcp say what it called.
		{"mcp", Result{
			OperationID: "9f8e7d6c-0000-4000-8000-000000000002", Probe: "weather_tool",
			Kind: ProbeMCP, MCP: &MCPTarget{Tool: "get-weather", Server: "http://127.0.0.1:3901/mcp"},
			StartedAt: started, Duration: 12 * time.Millisecond, Outcome: ContractError,
			Error:    NewError(CodeToolMissing, "tool get-weather is not in tools/list"),
			Attempts: []Attempt{{Number: 1}}, HTTPStatus: 200,
			Consumer: ConsumerRef{Name: "weather_forecast", Version: "1", RuleHash: "8899aabbccddeeff"},
		}},
		// A run a daemon recorded names the instance that ran it (a run
		// without one, as above, has no node at all).
		{"node", Result{
			OperationID: "1c2d3e4f-0000-4000-8000-000000000004", Probe: "tracker", Node: "web-1",
			StartedAt: started, Duration: 30 * time.Millisecond, Outcome: Pass,
			Attempts: []Attempt{{Number: 1}}, HTTPStatus: 200, SelectedCount: 1, ValidatedCount: 1,
			Consumer: ConsumerRef{Name: "search_runs", Version: "1", RuleHash: "0011223344556677"},
		}},
		// A traced run names the trace its requests carried (SPEC §10.1).
		{"trace", Result{
			OperationID: "2d3e4f5a-0000-4000-8000-000000000005", Probe: "tracker",
			TraceID:   "4bf92f3577b34da6a3ce929d0e0e4736",
			StartedAt: started, Duration: 30 * time.Millisecond, Outcome: Unavailable,
			Error:    NewError(CodeServerError, "HTTP 503 Service Unavailable"),
			Attempts: []Attempt{{Number: 1, HTTPStatus: 503}}, HTTPStatus: 503,
			Consumer: ConsumerRef{Name: "search_runs", Version: "1", RuleHash: "0011223344556677"},
		}},
		// A steps probe names the step that decided, and lists each step.
		{"steps", Result{
			OperationID: "6b5a4c3d-0000-4000-8000-000000000003", Probe: "refund_order_31",
			Kind: ProbeSteps, StartedAt: started, Duration: 2140 * time.Millisecond, Outcome: ContractError,
			Error: NewError(CodeClaimMismatch, `step verify: claim false after 3 polls: state: "pending"`),
			Step:  "verify",
			// One refund, three polls (the first retried once), a clean-up:
			// one retry, so 2 attempts.
			Attempts: []Attempt{{Number: 1, Try: 1, Step: "refund"},
				{Number: 2, Try: 1, Poll: 1, Step: "verify", Code: CodeTimeout}, {Number: 3, Try: 2, Poll: 1, Step: "verify"},
				{Number: 4, Try: 1, Poll: 2, Step: "verify"}, {Number: 5, Try: 1, Poll: 3, Step: "verify"},
				{Number: 6, Try: 1, Step: "cleanup"}},
			HTTPStatus: 200,
			Steps: []StepResult{
				{Name: "refund", Outcome: Pass, Duration: 20 * time.Millisecond},
				{Name: "verify", Outcome: ContractError, Duration: 2027 * time.Millisecond, Polls: 3,
					Error: NewError(CodeClaimMismatch, `claim false after 3 polls: state: "pending"`)},
				{Name: "cleanup", Outcome: Pass, Duration: 6 * time.Millisecond, Always: true},
				{Name: "notify", Outcome: Pass, Always: true, Skipped: true},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // shape summaries contain < and >
			enc.SetIndent("", "  ")
			if err := enc.Encode(tt.res.Envelope()); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			testkit.Golden(t, filepath.Join("testdata", "envelope-"+tt.name+".golden"), got)
		})
	}
}

// TestEnvelopeNeverEmptySuccess is the seed-003 guard at the envelope: a
// failure must never serialise as data, and a pass never as an error.
func TestEnvelopeNeverEmptySuccess(t *testing.T) {
	failed := Result{Outcome: Unavailable, Error: NewError(CodeTimeout, "deadline")}
	env := failed.Envelope()
	if env.Data != nil || env.Error == nil || env.Status != Unavailable {
		t.Errorf("failed result envelope = %+v, want error set and data null", env)
	}
	passed := Result{Outcome: Pass, SelectedCount: 1, ValidatedCount: 1}
	env = passed.Envelope()
	if env.Data == nil || env.Error != nil {
		t.Errorf("pass envelope = %+v, want data set and error null", env)
	}
}

func TestSilenceMatches(t *testing.T) {
	labels := map[string]string{"team": "search", "env": "prod"}
	tests := []struct {
		name  string
		m     Matchers
		probe string
		want  bool
	}{
		{"nothing matches nothing", Matchers{}, "search", false},
		{"probe named", Matchers{Probes: []string{"weather", "search"}}, "search", true},
		{"probe not named", Matchers{Probes: []string{"weather"}}, "search", false},
		{"every label", Matchers{Labels: map[string]string{"team": "search", "env": "prod"}}, "search", true},
		{"a label differs", Matchers{Labels: map[string]string{"team": "search", "env": "dev"}}, "search", false},
		{"a label missing", Matchers{Labels: map[string]string{"region": "eu"}}, "search", false},
		{"probe and label", Matchers{Probes: []string{"search"}, Labels: map[string]string{"env": "prod"}}, "search", true},
		{"probe but not label", Matchers{Probes: []string{"search"}, Labels: map[string]string{"env": "dev"}}, "search", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Silence{Matchers: tt.m}).Matches(tt.probe, labels); got != tt.want {
				t.Errorf("Matches(%q): got %v, want %v", tt.probe, got, tt.want)
			}
		})
	}
}

func TestSilenceActiveAt(t *testing.T) {
	start := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
	s := Silence{StartsAt: start, EndsAt: start.Add(time.Hour)}
	tests := []struct {
		name    string
		expired time.Time
		at      time.Time
		want    bool
	}{
		{"before the start", time.Time{}, start.Add(-time.Millisecond), false},
		{"at the start", time.Time{}, start, true},
		{"at the end", time.Time{}, start.Add(time.Hour), false},
		{"before its expiry", start.Add(time.Minute), start.Add(time.Second), true},
		{"at its expiry", start.Add(time.Minute), start.Add(time.Minute), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := s
			s.ExpiredAt = tt.expired
			if got := s.ActiveAt(tt.at); got != tt.want {
				t.Errorf("ActiveAt(%v): got %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

// TestMCPServer: every surface names an MCP server by scheme, host and
// path; credentials, query and fragment never show.
func TestMCPServer(t *testing.T) {
	for _, tt := range []struct{ name, url, want string }{
		{"plain", "http://127.0.0.1:3901/mcp", "http://127.0.0.1:3901/mcp"},
		{"credentials and query", "https://user:pw-SECRET@tools.example.com/v1/mcp?token=t0k3n#frag", "https://tools.example.com/v1/mcp"},
		{"escaped path kept", "http://h.example/a%2Fb/mcp", "http://h.example/a%2Fb/mcp"},
		{"no path", "http://h.example", "http://h.example"},
		{"no host", "/mcp", ""},
		{"unparsable", "http://[::1", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := MCPServer(tt.url); got != tt.want {
				t.Errorf("MCPServer(%q): got %q, want %q", tt.url, got, tt.want)
			}
		})
	}
}

// TestEffectiveKind: a result without a kind is an HTTP probe's, as every
// result recorded before kinds were.
func TestEffectiveKind(t *testing.T) {
	for _, tt := range []struct {
		kind, want ProbeKind
	}{{"", ProbeHTTP}, {ProbeHTTP, ProbeHTTP}, {ProbeMCP, ProbeMCP}} {
		r := Result{Kind: tt.kind}
		if got := r.EffectiveKind(); got != tt.want {
			t.Errorf("EffectiveKind of Kind %q: got %q, want %q", tt.kind, got, tt.want)
		}
		if got := r.Envelope().Kind; got != tt.want {
			t.Errorf("Envelope().Kind of Kind %q: got %q, want %q", tt.kind, got, tt.want)
		}
	}
	if _, err := ParseProbeKind("grpc"); err == nil || !strings.Contains(err.Error(), "want http, mcp or steps") {
		t.Errorf("ParseProbeKind(grpc): got %v, want an error naming http and mcp", err)
	}
}

// TestAttemptCount: a run's attempts are 1 plus its retries; the rows of
// an MCP try, the steps of a run and the polls of a verification are not
// retries.
func TestAttemptCount(t *testing.T) {
	tests := []struct {
		name     string
		attempts []Attempt
		want     int
	}{
		{"no exchange", nil, 0},
		{"one try", []Attempt{{Number: 1, Try: 1}}, 1},
		{"three tries", []Attempt{{Number: 1, Try: 1}, {Number: 2, Try: 2}, {Number: 3, Try: 3}}, 3},
		{"rows before tries were recorded", []Attempt{{Number: 1}, {Number: 2}}, 2},
		{"an MCP try's rows", []Attempt{{Number: 1, Try: 1, Method: "initialize"}, {Number: 2, Try: 1, Method: "tools/call"}}, 1},
		{"steps and polls, no retry", []Attempt{{Number: 1, Try: 1, Step: "refund"},
			{Number: 2, Try: 1, Poll: 1, Step: "verify"}, {Number: 3, Try: 1, Poll: 2, Step: "verify"},
			{Number: 4, Try: 1, Poll: 3, Step: "verify"}, {Number: 5, Try: 1, Poll: 4, Step: "verify"},
			{Number: 6, Try: 1, Step: "revert"}}, 1},
		{"a retried step and a retried poll", []Attempt{{Number: 1, Try: 1, Step: "refund"}, {Number: 2, Try: 2, Step: "refund"},
			{Number: 3, Try: 1, Poll: 1, Step: "verify"}, {Number: 4, Try: 1, Poll: 2, Step: "verify"},
			{Number: 5, Try: 2, Poll: 2, Step: "verify"}}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Result{Attempts: tt.attempts}
			if got := r.AttemptCount(); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// TestAttemptVerdict: the expected server/discover refusal of a server of
// the 2025 era reads as the fallback it is, not as "ok 400".
func TestAttemptVerdict(t *testing.T) {
	tests := []struct {
		name string
		a    Attempt
		want string
	}{
		{"ok", Attempt{HTTPStatus: 200}, "ok"},
		{"failed", Attempt{HTTPStatus: 503, Code: CodeServerError}, "server_error"},
		{"discover refused", Attempt{Method: "server/discover", HTTPStatus: 400}, "fallback"},
		{"discover answered", Attempt{Method: "server/discover", HTTPStatus: 200}, "ok"},
		{"discover blamed", Attempt{Method: "server/discover", HTTPStatus: 503, Code: CodeServerError}, "server_error"},
		{"another method's 400", Attempt{Method: "initialize", HTTPStatus: 400}, "ok"},
	}
	for _, tt := range tests {
		if got := tt.a.Verdict(); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
