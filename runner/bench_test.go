package runner

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
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
	req, err := newRequest(p, e.userAgent)
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
		if _, err := newRequest(p, e.userAgent); err != nil {
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

// BenchmarkDriftLookup is the recorder's drift detection for one run,
// over the real store holding a profile learned from the seed-000 list
// layout: "same shape" is the common case (the profile in memory judges
// and learns the answer, no store read); "drifted" is a run in the wrapped
// layout, whose drift is novel. The profile learns nothing in either case,
// since commit is never called.
func BenchmarkDriftLookup(b *testing.B) {
	tests := []struct {
		name      string
		body      string
		wantDrift bool // a drift event is returned
	}{
		{"same shape", seedBaselineBody, false},
		{"drifted", seedWrappedBody, true},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			ctx := context.Background()
			store := newTestStore(b)
			clock := newTestClock(alertT0)
			p := NewRecorder(store, notifyOn(1, time.Hour, true), RecorderOptions{Clock: clock})
			if err := p.Load(ctx); err != nil {
				b.Fatal(err)
			}
			for range shape.ProfileWarmup + 1 {
				clock.Advance(time.Minute)
				process(b, p, pipelineRun(b, "external_search", clock.Now(), seedBaselineBody, ""))
			}
			clock.Advance(time.Minute)
			now := clock.Now()
			r := pipelineRun(b, "external_search", now, tt.body, "")
			var d Decision
			out, err := p.detectDrift(ctx, r, now, &d)
			switch {
			case err != nil:
				b.Fatal(err)
			case (out.drift != nil) != tt.wantDrift:
				b.Fatalf("drift event = %+v, want one: %t", out.drift, tt.wantDrift)
			case (d.Baseline == seedBaselineFP) != (tt.body != seedBaselineBody):
				b.Fatalf("Decision.Baseline = %q for the %s case", d.Baseline, tt.name)
			}
			store.resetCalls()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.detectDrift(ctx, r, now, &d); err != nil {
					b.Fatal(err)
				}
			}
			if n := store.callCount("ShapeProfile") + store.callCount("RecentShapes"); n != 0 {
				b.Fatalf("%d profile reads from the store in the loop, want 0", n)
			}
		})
	}
}
