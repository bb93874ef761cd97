package results

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHTTPTarget(t *testing.T) {
	tests := []struct {
		name, method, url, want string
	}{
		{"method, host and path", "POST", "http://127.0.0.1:8099/search", "POST http://127.0.0.1:8099/search"},
		{"no query, no fragment", "GET", "https://api.example.com/v1/search?api_key=SECRET&q=x#frag", "GET https://api.example.com/v1/search"},
		{"no userinfo", "GET", "https://user:SECRET@api.example.com/v1", "GET https://api.example.com/v1"},
		{"GET by default", "", "https://api.example.com", "GET https://api.example.com"},
		{"a step's template stays as written", "DELETE", "http://127.0.0.1:8099/refunds/{{refund_id}}", "DELETE http://127.0.0.1:8099/refunds/{{refund_id}}"},
		{"no host", "GET", "/relative/path", ""},
		{"does not parse", "GET", "http://[::1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HTTPTarget(tt.method, tt.url)
			if got != tt.want {
				t.Errorf("HTTPTarget(%q, %q) = %q, want %q", tt.method, tt.url, got, tt.want)
			}
			if strings.Contains(got, "SECRET") {
				t.Errorf("HTTPTarget(%q, %q) = %q shows the secret", tt.method, tt.url, got)
			}
		})
	}
}

func TestToolTarget(t *testing.T) {
	if got, want := ToolTarget("search", "https://mcp.example.com/mcp"), "tool search at https://mcp.example.com/mcp"; got != want {
		t.Errorf("ToolTarget = %q, want %q", got, want)
	}
	if got, want := ToolTarget("search", ""), "tool search"; got != want {
		t.Errorf("ToolTarget without a server = %q, want %q", got, want)
	}
}

func TestExcerpt(t *testing.T) {
	if got := Excerpt("\n  index rebuilding\n"); got != "index rebuilding" {
		t.Errorf("Excerpt trims to %q, want %q", got, "index rebuilding")
	}
	long := strings.Repeat("é", ExcerptRunes+10)
	got := Excerpt(long)
	if n := utf8.RuneCountInString(got); n != ExcerptRunes || !strings.HasSuffix(got, "…") {
		t.Errorf("Excerpt of %d characters: %d characters (%q...), want %d ending in …", ExcerptRunes+10, n, got[:10], ExcerptRunes)
	}
	exact := strings.Repeat("x", ExcerptRunes)
	if got := Excerpt(exact); got != exact {
		t.Errorf("Excerpt cut a body of exactly %d characters", ExcerptRunes)
	}
}

// TestNewAlertExcerpt: a failed run's alert carries the start of its body
// and an MCP run's its tool and server; a passing run's carries no body.
func TestNewAlertExcerpt(t *testing.T) {
	failed := &Result{Probe: "p", Outcome: Unavailable, Error: &Error{Code: CodeServerError, Message: "HTTP 503"},
		HTTPStatus: 503, ResponseSample: "index rebuilding\n", MCP: &MCPTarget{Tool: "search", Server: "http://127.0.0.1:3901/mcp"}}
	a := NewAlert(AlertFiring, failed, failed.StartedAt)
	if a.ResponseExcerpt != "index rebuilding" {
		t.Errorf("firing alert's excerpt = %q, want %q", a.ResponseExcerpt, "index rebuilding")
	}
	if want := "tool search at http://127.0.0.1:3901/mcp"; a.Target != want {
		t.Errorf("target = %q, want %q", a.Target, want)
	}
	passed := &Result{Probe: "p", Outcome: Pass, ResponseSample: "should not be kept"}
	if a := NewAlert(AlertResolved, passed, passed.StartedAt); a.ResponseExcerpt != "" {
		t.Errorf("resolved alert carries a body %q", a.ResponseExcerpt)
	}
}
