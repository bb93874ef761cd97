package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
)

func TestServerRoutes(t *testing.T) {
	const token = "tp-token-3f9a7c1e"
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "toolpulse_runs_total 1\n")
	})
	var healthErr error
	srv := httptest.NewServer(newServer(serverDeps{
		logger:  slog.New(slog.DiscardHandler),
		token:   checks.Secret(token),
		healthy: func(context.Context) error { return healthErr },
		metrics: metrics,
	}))
	defer srv.Close()

	get := func(path, auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		name       string
		path, auth string
		unhealthy  error
		wantStatus int
		wantBody   string
	}{
		{"healthz needs no token", "/healthz", "", nil, 200, `{"status":"ok"}`},
		{"healthz says why it is unhealthy", "/healthz", "", errors.New("store: disk I/O error"), 503, `"code":"unhealthy","message":"store: disk I/O error"`},
		{"metrics without token", "/metrics", "", nil, 401, `"code":"unauthorized"`},
		{"metrics with a wrong token", "/metrics", "Bearer nope", nil, 401, `"code":"unauthorized"`},
		{"metrics with the token", "/metrics", "Bearer " + token, nil, 200, "toolpulse_runs_total 1"},
		{"unknown route", "/nope", "Bearer " + token, nil, 404, `"code":"not_found"`},
		{"unknown route hides itself without a token", "/nope", "", nil, 401, `"code":"unauthorized"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			healthErr = tt.unhealthy
			status, body := get(tt.path, tt.auth)
			if status != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
				t.Errorf("GET %s = %d %q, want %d containing %q", tt.path, status, body, tt.wantStatus, tt.wantBody)
			}
			if strings.Contains(body, token) {
				t.Errorf("the token leaked into a response: %q", body)
			}
		})
	}
}
