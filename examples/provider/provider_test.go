package provider

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestProviderModes(t *testing.T) {
	p := New()
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()

	search := func() map[string]any {
		t.Helper()
		resp, err := http.Post(srv.URL+"/search", "application/json", strings.NewReader(`{"query":"API migration guide"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return body
	}
	if _, ok := search()["results"].([]any); !ok {
		t.Errorf("healthy /search: results is not a list")
	}
	p.SetDrifted(true)
	wrapped, ok := search()["results"].(map[string]any)
	if _, isList := wrapped["items"].([]any); !ok || !isList {
		t.Errorf("drifted /search: results is not {items: [...]}")
	}
	if got := p.Requests("/search"); got != 2 {
		t.Errorf("Requests(/search) = %d, want 2", got)
	}

	tests := []struct {
		name string
		down bool
		want int
	}{
		{"tracker down", true, http.StatusServiceUnavailable},
		{"tracker up", false, http.StatusOK},
	}
	for _, tt := range tests {
		p.SetDown(tt.down)
		resp, err := http.Get(srv.URL + "/runs?config=cfg-9f2c")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}

	resp, err := http.Post(srv.URL+"/search", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("/search without a query: status %d, want 400", resp.StatusCode)
	}
}
