package prober

import (
	"net/url"
	"strings"
	"testing"
)

// TestSafeURL: a URL in a redirect message has no user info, query or
// fragment, and one longer than 120 bytes is cut there and marked "…".
// Its host and path are escaped, so the cut never splits a character.
func TestSafeURL(t *testing.T) {
	escaped := "https://api.example.com/" + strings.Repeat("%C3%BC", 30)
	for _, tc := range []struct{ name, in, want string }{
		{"short", "https://user:pw@api.example.com/v1/search?api_key=k#top", "https://api.example.com/v1/search"},
		{"long", "https://user:pw@api.example.com/" + strings.Repeat("ü", 30) + "?api_key=k#top", escaped[:120] + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := safeURL(u); got != tc.want {
				t.Errorf("safeURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
