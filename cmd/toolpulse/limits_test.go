package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
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
	g := newGuard(http.NotFoundHandler())
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := range clientBurst {
		if _, ok := g.allow("10.0.0.1", now); !ok {
			t.Fatalf("request %d refused within the burst", i+1)
		}
	}
	wait, ok := g.allow("10.0.0.1", now)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("past the burst: ok %v, wait %v; want refused with a wait under 1s", ok, wait)
	}
	if _, ok := g.allow("10.0.0.2", now); !ok {
		t.Errorf("another client is limited by the first one's burst")
	}
	if _, ok := g.allow("10.0.0.1", now.Add(time.Duration(float64(time.Second)/float64(clientRate))+time.Millisecond)); !ok {
		t.Errorf("the bucket does not refill at clientRate")
	}

	// Idle clients are forgotten once the table is full.
	for i := range maxClients {
		g.allow("client-"+strconv.Itoa(i), now)
	}
	g.allow("198.51.100.1", now.Add(2*clientIdle))
	if n := len(g.clients); n > 2 {
		t.Errorf("%d limiters kept after the idle ones were due to go", n)
	}
}

func TestGuardOverTheWire(t *testing.T) {
	g := newGuard(http.NotFoundHandler())
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
		g.allow("127.0.0.1", ahead)
	}
	if resp := get(); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("with the client's bucket empty: %d (Retry-After %q), want 429 with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
