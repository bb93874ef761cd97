package prober

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/toolpulse/toolpulse/results"
)

// TestRunReusesConnections runs a probe three times and requires one TCP
// connection: runs share the executor's pooled transport rather than
// dialling anew.
func TestRunReusesConnections(t *testing.T) {
	var conns atomic.Int32
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(bodyOriginalList))
	}))
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)

	e := NewExecutor(Options{})
	t.Cleanup(e.CloseIdleConnections)
	p := testProbe(t, s.URL)
	for i := range 3 {
		if got := e.Run(t.Context(), p); got.Outcome != results.Pass {
			t.Fatalf("run %d: %s", i+1, dump(got))
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("3 runs opened %d connections, want 1", n)
	}
}

// TestRunConcurrently runs one probe from several goroutines at once, as
// `toolpulse check` and the daemon may: each run keeps its own state.
func TestRunConcurrently(t *testing.T) {
	url := unavailableThenOK(t)
	e := NewExecutor(Options{})
	t.Cleanup(e.CloseIdleConnections)
	p := testProbe(t, url)
	var wg sync.WaitGroup
	got := make([]results.Result, 8)
	for i := range got {
		wg.Go(func() { got[i] = e.Run(t.Context(), p) })
	}
	wg.Wait()
	ids := map[string]bool{}
	for i, r := range got {
		// Exactly one run meets the 503 and passes on its retry.
		if r.Outcome != results.Pass || len(r.Attempts) < 1 || len(r.Attempts) > 2 || ids[r.OperationID] {
			t.Errorf("run %d: %s", i, dump(r))
		}
		ids[r.OperationID] = true
	}
}

// explodingClock is the real clock but for its Now.
type explodingClock struct {
	clockwork.Clock
	now func() time.Time
}

func (c explodingClock) Now() time.Time { return c.now() }

// TestRunNeverPanics injects dependencies that panic at every step: Run
// must still return a recorded internal_error.
func TestRunNeverPanics(t *testing.T) {
	url := jsonBody(500, `{}`)(t)
	var calls atomic.Int32
	tests := map[string]Options{
		"clock": {Clock: explodingClock{clockwork.NewRealClock(), func() time.Time { panic("clock exploded") }}},
		"clock mid-run": {Clock: explodingClock{clockwork.NewRealClock(), func() time.Time {
			if calls.Add(1) > 3 {
				panic("clock exploded")
			}
			return time.Now()
		}}},
		"ids":       {NewID: func() string { panic("ids exploded") }},
		"nil probe": {},
	}
	for name, opts := range tests {
		t.Run(name, func(t *testing.T) {
			e := NewExecutor(opts)
			t.Cleanup(e.CloseIdleConnections)
			p := testProbe(t, url)
			if name == "nil probe" {
				p = nil
			}
			got := e.Run(t.Context(), p)
			if got.Outcome != results.ContractError || got.Code() != results.CodeInternalError || got.Error.Retryable {
				t.Errorf("%s", dump(got))
			}
		})
	}
}

// TestRunTrustsConfiguredCA is the untrusted-certificate row's control:
// the same kind of server passes once the probe's TLS config trusts it.
func TestRunTrustsConfiguredCA(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(bodyOriginalList))
	}))
	t.Cleanup(s.Close)
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	p := testProbe(t, s.URL)
	p.TLS = &tls.Config{RootCAs: pool}
	e := NewExecutor(Options{})
	t.Cleanup(e.CloseIdleConnections)
	if got := e.Run(t.Context(), p); got.Outcome != results.Pass {
		t.Errorf("%s", dump(got))
	}
}

// TestNewExecutorDefaults runs with zero Options: every dependency must be
// defaulted, ids must be UUIDs and the User-Agent must name toolpulse.
func TestNewExecutorDefaults(t *testing.T) {
	var agent atomic.Value
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		agent.Store(r.Header.Get("User-Agent"))
		w.Write([]byte(bodyOriginalList))
	})
	e := NewExecutor(Options{})
	t.Cleanup(e.CloseIdleConnections)
	got := e.Run(t.Context(), testProbe(t, url))
	if got.Outcome != results.Pass {
		t.Fatalf("%s", dump(got))
	}
	if len(got.OperationID) != 36 {
		t.Errorf("operation id %q is not a UUID", got.OperationID)
	}
	// The version is the binary's own, the one --version and
	// toolpulse_build_info show.
	if ua, _ := agent.Load().(string); ua != "toolpulse/"+results.ReadBuild().Label() {
		t.Errorf("User-Agent = %q, want toolpulse/%s", ua, results.ReadBuild().Label())
	}
}

// BenchmarkOperation is one whole passing operation: request, 20-item
// search body, decode, shape, consumer rules.
func BenchmarkOperation(b *testing.B) {
	body := []byte(searchBody(20))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer s.Close()
	e := NewExecutor(Options{})
	defer e.CloseIdleConnections()
	p := testProbe(b, s.URL)
	if got := e.Run(b.Context(), p); got.Outcome != results.Pass || got.ValidatedCount != 20 {
		b.Fatalf("%s", dump(got))
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Run(b.Context(), p)
	}
}
