package prober

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// The benchmarks of one operation's hot steps, each on its own. The whole
// operation is BenchmarkOperation (executor_test.go); the same with the
// real store and metrics is cmd/toolpulse's BenchmarkOperationAllIn.

// BenchmarkRequestBuild builds the request of testProbe (POST, one header,
// one query parameter, a JSON fixture) the way every run does: URL parse
// and query merge, the fixture marshalled, the retryablehttp request and
// its headers.
func BenchmarkRequestBuild(b *testing.B) {
	e := NewExecutor(Options{Version: "test"})
	p := testProbe(b, "http://127.0.0.1:9/api")
	req, err := newRequest(p.Steps[0].Request, e.userAgent)
	if err != nil {
		b.Fatal(err)
	}
	if got, want := req.URL.String(), "http://127.0.0.1:9/api/search?lang="+testQueryLanguage; got != want {
		b.Fatalf("URL = %s, want %s", got, want)
	}
	if req.Header.Get("Content-Type") != "application/json" || req.Header.Get("Authorization") == "" {
		b.Fatalf("headers = %v, want the JSON content type and the probe's Authorization", req.Header)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newRequest(p.Steps[0].Request, e.userAgent); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClassify maps what an attempt ends with to a code: statuses as
// checkRetry judges them, and transport errors as net/http really returns
// them (captured once from loopback servers), plus the body-too-large
// error readBody returns. Errors that match late in codeOf's order
// (connection refused runs every TLS check first) cost the most.
func BenchmarkClassify(b *testing.B) {
	expect := []int{200}
	tests := []struct {
		name   string
		err    error
		status int
		want   results.Code
	}{
		{name: "200 expected", status: 200, want: ""},
		{name: "503", status: http.StatusServiceUnavailable, want: results.CodeServerError},
		{name: "404", status: http.StatusNotFound, want: results.CodeUnexpectedStatus},
		{name: "429", status: http.StatusTooManyRequests, want: results.CodeRateLimited},
		{name: "timeout", err: benchTimeoutError(b), want: results.CodeTimeout},
		{name: "connection refused", err: benchGet(b, http.DefaultClient, closedPort(b)), want: results.CodeConnectionRefused},
		{name: "tls untrusted", err: benchTLSError(b), want: results.CodeTLSError},
		{name: "too large", err: &tooLargeError{limit: 1 << 20, declared: -1}, want: results.CodeResponseTooLarge},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			if got := codeOf(tt.err, tt.status, expect); got != tt.want {
				b.Fatalf("codeOf(%v, %d) = %q, want %q", tt.err, tt.status, got, tt.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				codeOf(tt.err, tt.status, expect)
			}
		})
	}
}

// benchGet returns the error of a GET of url with c; a response is a bug
// in the benchmark.
func benchGet(b *testing.B, c *http.Client, url string) error {
	b.Helper()
	resp, err := c.Get(url)
	if err == nil {
		resp.Body.Close()
		b.Fatalf("GET %s answered %s, want an error", url, resp.Status)
	}
	return err
}

// benchTimeoutError is the error of an attempt whose per-attempt timeout
// (http.Client.Timeout) ran out while waiting for the headers.
func benchTimeoutError(b *testing.B) error {
	c := &http.Client{Timeout: 20 * time.Millisecond}
	defer c.CloseIdleConnections()
	return benchGet(b, c, hang(b))
}

// benchTLSError is the error of a GET from an HTTPS server whose
// certificate the client does not trust.
func benchTLSError(b *testing.B) error {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the expected handshake failure
	s.StartTLS()
	b.Cleanup(s.Close)
	c := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer c.CloseIdleConnections()
	return benchGet(b, c, s.URL)
}
