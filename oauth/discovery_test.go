package oauth

import (
	"slices"
	"testing"
)

// TestResourceMetadata: the resource_metadata of a Bearer challenge is
// found among other challenges and parameters, quoted commas included;
// other schemes and non-http(s) values are not it.
func TestResourceMetadata(t *testing.T) {
	for _, tt := range []struct {
		name   string
		values []string
		want   string
	}{
		{"plain", []string{`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"`},
			"https://mcp.example.com/.well-known/oauth-protected-resource"},
		{"after other params", []string{`Bearer realm="a, b", error="invalid_token", resource_metadata="http://127.0.0.1:8/m"`}, "http://127.0.0.1:8/m"},
		{"second challenge", []string{`Basic realm="x", Bearer scope="a b", resource_metadata="https://r.example/m"`}, "https://r.example/m"},
		{"second value", []string{`Basic realm="x"`, `bearer resource_metadata=https://r.example/m`}, "https://r.example/m"},
		{"other scheme", []string{`DPoP resource_metadata="https://r.example/m"`}, ""},
		{"not http", []string{`Bearer resource_metadata="file:///etc/passwd"`}, ""},
		{"none", []string{`Bearer realm="x"`}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := resourceMetadata(tt.values); got != tt.want {
				t.Errorf("resourceMetadata(%q) = %q, want %q", tt.values, got, tt.want)
			}
		})
	}
}

// TestWellKnown: RFC 9728 and RFC 8414 insert the well-known name between
// the host and the path; a resource also tries the root, and OpenID
// Connect's appended form is the issuer's last place.
func TestWellKnown(t *testing.T) {
	if got, want := wellKnown("https://mcp.example.com/v1/mcp?x=1", "oauth-protected-resource", false),
		[]string{"https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource"}; !slices.Equal(got, want) {
		t.Errorf("resource places = %q, want %q", got, want)
	}
	if got, want := wellKnown("https://mcp.example.com/", "oauth-protected-resource", false),
		[]string{"https://mcp.example.com/.well-known/oauth-protected-resource"}; !slices.Equal(got, want) {
		t.Errorf("root resource places = %q, want %q", got, want)
	}
	var got []string
	for _, c := range asCandidates("https://auth.example.com/tenant1") {
		got = append(got, c.url)
	}
	want := []string{"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
		"https://auth.example.com/.well-known/openid-configuration/tenant1",
		"https://auth.example.com/tenant1/.well-known/openid-configuration"}
	if !slices.Equal(got, want) {
		t.Errorf("issuer places = %q, want %q", got, want)
	}
}

// TestCovers: protected resource metadata counts only for its own
// resource and the paths under it (RFC 9728 §3.3).
func TestCovers(t *testing.T) {
	for _, tt := range []struct {
		resource, target string
		want             bool
	}{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp", true},
		{"https://mcp.example.com/", "https://mcp.example.com/mcp", true},
		{"https://mcp.example.com", "https://mcp.example.com/v1/mcp", true},
		{"https://MCP.example.com/v1", "https://mcp.example.com/v1/mcp", true},
		{"https://mcp.example.com/v1", "https://mcp.example.com/v10/mcp", false},
		{"https://mcp.example.com/other", "https://mcp.example.com/mcp", false},
		{"https://evil.example/mcp", "https://mcp.example.com/mcp", false},
		{"http://mcp.example.com/mcp", "https://mcp.example.com/mcp", false},
		{"", "https://mcp.example.com/mcp", false},
	} {
		if got := covers(tt.resource, tt.target); got != tt.want {
			t.Errorf("covers(%q, %q) = %v, want %v", tt.resource, tt.target, got, tt.want)
		}
	}
}
