package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
)

func TestGuard(t *testing.T) {
	f := newStatusFixture(t)
	do := func(method, path, body string) (*http.Response, string) {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, f.srv.URL+path, r)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"read-only: POST", http.MethodPost, "/api/v1/probes", "{}", 405, `"code":"method_not_allowed"`},
		{"read-only: DELETE", http.MethodDelete, "/probes/search", "", 405, `"code":"method_not_allowed"`},
		{"read-only: PUT on the page", http.MethodPut, "/", "", 405, `"code":"method_not_allowed"`},
		{"HEAD is fine", http.MethodHead, "/", "", 200, ""},
		{"a GET with a body", http.MethodGet, "/api/v1/probes", "x", 413, `"code":"request_too_large"`},
		// The mux cleans dot segments and redirects; escaped ones stay in
		// the name. Neither reaches a file: there are none to reach.
		{"traversal, escaped", http.MethodGet, "/probes/..%2f..%2fetc%2fpasswd", "", 404, "no probe named"},
		{"traversal, in the API", http.MethodGet, "/api/v1/probes/..%2f..%2fetc%2fpasswd/results", "", 404, `"code":"not_found"`},
		{"traversal, plain", http.MethodGet, "/probes/../../etc/passwd", "", 404, `"code":"not_found"`},
	}
	for _, tt := range tests {
		resp, body := do(tt.method, tt.path, tt.body)
		if resp.StatusCode != tt.status || !strings.Contains(body, tt.want) || strings.Contains(body, "root:") {
			t.Errorf("%s: %s %s = %d %q, want %d containing %q", tt.name, tt.method, tt.path, resp.StatusCode, body, tt.status, tt.want)
		}
		if resp.StatusCode == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: Allow = %q", tt.name, resp.Header.Get("Allow"))
		}
	}
	// Oversized headers are refused by the server itself.
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 2*maxHeaderBytes))
	srv := &http.Server{Handler: http.NotFoundHandler(), MaxHeaderBytes: maxHeaderBytes}
	big := httptest.NewUnstartedServer(srv.Handler)
	big.Config = srv
	big.Start()
	defer big.Close()
	req.URL.Host = strings.TrimPrefix(big.URL, "http://")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("oversized headers: %d, want 431", resp.StatusCode)
		}
	}
}

func TestGuardRateLimit(t *testing.T) {
	c := newClientLimits(maxClients)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := range clientBurst {
		if _, ok := c.allow("10.0.0.1", now); !ok {
			t.Fatalf("request %d refused within the burst", i+1)
		}
	}
	wait, ok := c.allow("10.0.0.1", now)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("past the burst: ok %v, wait %v; want refused with a wait under 1s", ok, wait)
	}
	if _, ok := c.allow("10.0.0.2", now); !ok {
		t.Errorf("another client is limited by the first one's burst")
	}
	if _, ok := c.allow("10.0.0.1", now.Add(time.Duration(float64(time.Second)/float64(clientRate))+time.Millisecond)); !ok {
		t.Errorf("the bucket does not refill at clientRate")
	}
}

// TestClientLimitsBounded: however many addresses arrive at once, none of
// them idle, the table keeps maxClients buckets, and the one to go is the
// least recently used.
func TestClientLimitsBounded(t *testing.T) {
	c := newClientLimits(maxClients)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := range maxClients {
		c.allow("client-"+strconv.Itoa(i), now)
	}
	c.allow("client-0", now) // used again: client-1 is now the oldest
	for i := range 100 {
		c.allow("stranger-"+strconv.Itoa(i), now)
	}
	if got := c.len(); got != maxClients {
		t.Errorf("%d buckets kept after %d addresses, want the cap %d", got, maxClients+100, maxClients)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byKey) != c.lru.Len() {
		t.Errorf("index of %d keys for %d buckets", len(c.byKey), c.lru.Len())
	}
	for key, want := range map[string]bool{"client-0": true, "client-1": false, "client-100": false, "client-101": true, "stranger-99": true} {
		if _, got := c.byKey[key]; got != want {
			t.Errorf("%s kept: %v, want %v", key, got, want)
		}
	}
}

// TestGuardBudgets: strangers who have spent their budget get 429, while
// the load balancer's /healthz and an authenticated scraper from the same
// address (a reverse proxy, or the same host) are still answered.
func TestGuardBudgets(t *testing.T) {
	const token = "tp-token-3f9a7c1e"
	for _, tt := range []struct {
		name  string
		token checks.Secret
		spent budget // the budget drained before the requests
		reqs  []struct {
			path, auth string
			status     int
		}
	}{
		{"with a token", token, budgetStranger, []struct {
			path, auth string
			status     int
		}{
			{"/api/v1/probes", "", 429},
			{"/metrics", "Bearer nope", 429},
			{"/metrics", "Bearer " + token, 200},
			{"/api/v1/probes", "bearer " + token, 200},
			{"/", basic("prometheus", token), 200},
			{"/healthz", "", 200},
		}},
		{"without a token", "", budgetOpen, []struct {
			path, auth string
			status     int
		}{
			{"/api/v1/probes", "", 429},
			{"/metrics", "", 200},
			{"/healthz", "", 200},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := NewServer(Deps{
				Logger:  slog.New(slog.DiscardHandler),
				Token:   tt.token,
				Healthy: func(context.Context) error { return nil },
				Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
				Store:   emptyStore(t),
				Probes:  func() []*checks.Probe { return nil },
			})
			srv := httptest.NewServer(h)
			defer srv.Close()
			// Drained at an instant ahead of the clock, so that it stays
			// empty however long the requests take.
			ahead := time.Now().Add(time.Hour)
			for range clientBurst {
				h.(*guard).limits.allow(budgetKey(tt.spent, "127.0.0.1"), ahead)
			}
			for _, r := range tt.reqs {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+r.path, nil)
				if r.auth != "" {
					req.Header.Set("Authorization", r.auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != r.status {
					t.Errorf("GET %s (Authorization %q) with the %s budget spent = %d, want %d", r.path, r.auth, tt.spent, resp.StatusCode, r.status)
				}
			}
		})
	}
}

// TestGuardHostNames: a loopback listener answers only to local names,
// its own listen host and public_url's host, on every route, so that a
// page which rebinds its own name to 127.0.0.1 cannot read it.
func TestGuardHostNames(t *testing.T) {
	loopback := checks.Server{Listen: "127.0.0.2:9321", PublicURL: "https://Status.example.com/toolpulse"}
	network := checks.Server{Listen: "0.0.0.0:9321", Token: "tp-token-3f9a7c1e"}
	tests := []struct {
		name         string
		server       checks.Server
		method, path string
		host         string
		status       int
	}{
		{"localhost", loopback, "GET", "/", "localhost:9321", 200},
		{"localhost in capitals, no port", loopback, "GET", "/", "LOCALHOST", 200},
		{"127.0.0.1", loopback, "GET", "/api/v1/probes", "127.0.0.1:9321", 200},
		{"::1", loopback, "GET", "/api/v1/probes", "[::1]:9321", 200},
		{"::1 without a port", loopback, "GET", "/api/v1/probes", "[::1]", 200},
		{"the listen host", loopback, "GET", "/metrics", "127.0.0.2:9321", 200},
		{"public_url's host, through a proxy", loopback, "GET", "/", "status.example.com", 200},
		{"a rebound name", loopback, "GET", "/", "attacker.example:9321", 421},
		{"a rebound name, API", loopback, "GET", "/api/v1/drifts", "attacker.example:9321", 421},
		{"a rebound name, metrics", loopback, "GET", "/metrics", "attacker.example:9321", 421},
		{"a rebound name, healthz", loopback, "GET", "/healthz", "attacker.example:9321", 421},
		{"a rebound name, MCP", loopback, "POST", "/mcp", "attacker.example:9321", 421},
		{"a rebound name, unknown route", loopback, "GET", "/nope", "attacker.example", 421},
		{"localhost as a prefix", loopback, "GET", "/", "localhost.attacker.example", 421},
		{"127.0.0.1 as a prefix", loopback, "GET", "/", "127.0.0.1.nip.io:9321", 421},
		{"another loopback address", loopback, "GET", "/", "127.0.0.3:9321", 421},
		{"the demo's listener", checks.Server{}, "GET", "/", "attacker.example", 421},
		{"the demo's listener, locally", checks.Server{}, "GET", "/", "127.0.0.1:5000", 200},
		{"a listener other hosts reach", network, "GET", "/healthz", "toolpulse.internal:9321", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(NewServer(Deps{
				Logger:  slog.New(slog.DiscardHandler),
				Server:  tt.server,
				Token:   tt.server.Token,
				Healthy: func(context.Context) error { return nil },
				Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
				Store:   emptyStore(t),
				Probes:  func() []*checks.Probe { return nil },
			}))
			defer srv.Close()
			var body io.Reader
			if tt.method == http.MethodPost {
				body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			}
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, body)
			req.Host = tt.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if tt.status == 421 {
				if resp.StatusCode != 421 || !strings.HasPrefix(string(b), "421 misdirected request") {
					t.Errorf("%s %s, Host %s = %d %q, want 421 misdirected request", tt.method, tt.path, tt.host, resp.StatusCode, b)
				}
				return
			}
			if resp.StatusCode == 421 {
				t.Errorf("%s %s, Host %s = 421 %q, want it answered", tt.method, tt.path, tt.host, b)
			}
		})
	}
}

func TestGuardOverTheWire(t *testing.T) {
	g := newGuard(http.NotFoundHandler(), serverHosts(checks.Server{}), "")
	srv := httptest.NewServer(g)
	defer srv.Close()
	get := func() *http.Response {
		t.Helper()
		resp, err := http.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// Every slot taken: the next request is turned away at once.
	for range maxInFlight {
		g.inFlight <- struct{}{}
	}
	if resp := get(); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("with %d requests in flight: %d, want 503 with Retry-After", maxInFlight, resp.StatusCode)
	}
	for range maxInFlight {
		<-g.inFlight
	}
	// The loopback client's bucket, drained at an instant ahead of the
	// clock: a request over the wire then finds it empty however long the
	// machine takes, where a burst of real requests could take long
	// enough on a loaded machine to refill it.
	ahead := time.Now().Add(time.Hour)
	for range clientBurst {
		g.limits.allow(budgetKey(budgetOpen, "127.0.0.1"), ahead)
	}
	if resp := get(); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("with the client's bucket empty: %d (Retry-After %q), want 429 with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
