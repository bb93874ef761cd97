package harness

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestProviders(t *testing.T) {
	bodies := Bodies(func(n int64) []byte { return []byte(`{"n": ` + string(rune('0'+n)) + `}`) })
	echo := EchoCredentials()
	for _, tc := range []struct {
		name   string
		p      *Provider
		path   string
		status int
		body   string
	}{
		{"bodies, first", bodies, "/x", 200, `{"n": 1}`},
		{"bodies, second", bodies, "/y", 200, `{"n": 2}`},
		{"echo /ok", echo, "/ok?a=b", 200, `{"results": {"echo": "Bearer s3cret", "url": "/ok?a=b"}}`},
		{"echo /search", echo, "/search", 200, `{"results": {"echo": "Bearer s3cret", "url": "/search"}}`},
		{"echo /key", echo, "/key", 200, `{"Bearer s3cret": [1]}`},
		{"echo /err", echo, "/err", 500, `upstream rejected Bearer s3cret`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.p)
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			req.Header.Set("Authorization", "Bearer s3cret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || strings.TrimSpace(string(b)) != tc.body || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("got %d %s %q, want %d application/json %q", resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.status, tc.body)
			}
		})
	}
	if bodies.Requests() != 2 || echo.Requests() != 4 {
		t.Errorf("requests %d and %d, want 2 and 4", bodies.Requests(), echo.Requests())
	}
}
