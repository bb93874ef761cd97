package main

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

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
		store:   emptyStore(t),
		probes:  func() []*checks.Probe { return nil },
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
		{"status page without token", "/", "", nil, 401, `"code":"unauthorized"`},
		{"status page with the token as a browser's password", "/", basic("anyone", token), nil, 200, "<!doctype html>"},
		{"probe page with the token", "/probes/nope", "Bearer " + token, nil, 404, "no probe named"},
		{"a wrong browser password", "/", basic("anyone", "nope"), nil, 401, `"code":"unauthorized"`},
		{"the token as a browser's user name is not enough", "/", basic(token, ""), nil, 401, `"code":"unauthorized"`},
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

func emptyStore(t *testing.T) *sqlite.Store {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}
