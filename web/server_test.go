package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net"
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
	srv := httptest.NewServer(NewServer(Deps{
		Logger:  slog.New(slog.DiscardHandler),
		Token:   checks.Secret(token),
		Healthy: func(context.Context) error { return healthErr },
		Metrics: metrics,
		Store:   emptyStore(t),
		Probes:  func() []*checks.Probe { return nil },
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
		{"healthz needs no token", "/healthz", "", nil, 200, `{"status":"ok","role":"leader"`},
		{"healthz says why it is unhealthy", "/healthz", "", errors.New("store: disk I/O error"), 503, `"code":"unhealthy","message":"store: disk I/O error"`},
		{"metrics without token", "/metrics", "", nil, 401, `"code":"unauthorized"`},
		{"metrics with a wrong token", "/metrics", "Bearer nope", nil, 401, `"code":"unauthorized"`},
		{"metrics with the token", "/metrics", "Bearer " + token, nil, 200, "toolpulse_runs_total 1"},
		{"the scheme in lower case (RFC 7235)", "/metrics", "bearer " + token, nil, 200, "toolpulse_runs_total 1"},
		{"the scheme in capitals", "/metrics", "BEARER " + token, nil, 200, "toolpulse_runs_total 1"},
		{"the token without a scheme", "/metrics", token, nil, 401, `"code":"unauthorized"`},
		{"the token under another scheme", "/metrics", "Token " + token, nil, 401, `"code":"unauthorized"`},
		{"a prefix of the token", "/metrics", "Bearer " + token[:len(token)-1], nil, 401, `"code":"unauthorized"`},
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

// TestServeWarnsOfClearText: serving plain HTTP on an address other hosts
// reach logs a warning at start, since the token and every answer cross
// the network in clear; a loopback listener logs none.
func TestServeWarnsOfClearText(t *testing.T) {
	for _, tt := range []struct {
		name string
		addr net.Addr // what the listener says it listens on; nil: itself
		warn bool
	}{
		{"loopback", nil, false},
		{"every interface", &net.TCPAddr{IP: net.IPv4zero, Port: 9321}, true},
		{"a LAN address", &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 9321}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var l net.Listener = ln
			if tt.addr != nil {
				l = addrListener{ln, tt.addr}
			}
			var logs bytes.Buffer // read once Serve has returned
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- Serve(ctx, l, http.NotFoundHandler(), slog.New(slog.NewTextHandler(&logs, nil))) }()
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(logs.String(), "level=WARN msg=\"serving plain HTTP beyond loopback"); got != tt.warn {
				t.Errorf("clear-text warning logged: %v, want %v; log:\n%s", got, tt.warn, logs.String())
			}
		})
	}
}

// addrListener is a loopback listener that reports another address.
type addrListener struct {
	net.Listener
	addr net.Addr
}

func (l addrListener) Addr() net.Addr { return l.addr }

func emptyStore(t *testing.T) *sqlite.Store {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}
