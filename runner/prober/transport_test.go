package prober

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

// connServer is a loopback provider that counts the connections it has
// accepted and those still open.
type connServer struct {
	URL            string
	accepted, open atomic.Int32
}

// serveConns starts a connServer answering every request with h.
func serveConns(t *testing.T, h http.HandlerFunc) *connServer {
	t.Helper()
	c := &connServer{}
	s := httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			c.accepted.Add(1)
			c.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			c.open.Add(-1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	c.URL = s.URL
	return c
}

// originalList answers with the seed-000 list.
func originalList(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, bodyOriginalList)
}

// namedProbe is testProbe under another name: another probe of the same
// provider, as a config with several probes of one host has.
func namedProbe(t *testing.T, name, url string) *checks.Probe {
	p := testProbe(t, url)
	p.Name = name
	return p
}

// mustPass runs p and fails the test unless it passed.
func mustPass(t *testing.T, e *Executor, p *checks.Probe) {
	t.Helper()
	if got := e.Run(t.Context(), p); got.Outcome != results.Pass {
		t.Fatalf("run of %s: %s", p.Name, dump(got))
	}
}

// TestTransportSharedBySettings: probes share a transport exactly when
// their TLS settings are equal, compared by what checks sets (the CA
// certificates and the insecure flag), not by the config value, which
// every load builds anew. A config that sets anything else is shared by
// identity only.
func TestTransportSharedBySettings(t *testing.T) {
	now := time.Now()
	caA := newCert(t, nil, true, "", now, now.Add(time.Hour))
	caB := newCert(t, nil, true, "", now, now.Add(time.Hour))
	// roots is a pool of certs, built anew as each load of a ca_file does.
	roots := func(certs ...*testCert) *x509.CertPool {
		pool := x509.NewCertPool()
		for _, c := range certs {
			pool.AppendCertsFromPEM(c.pem)
		}
		return pool
	}
	named := &tls.Config{RootCAs: roots(caA), ServerName: "search.internal"}
	cases := []struct {
		name string
		a, b *tls.Config
		same bool
	}{
		{name: "both without a TLS config", same: true},
		{name: "the same ca_file, loaded twice",
			a: &tls.Config{RootCAs: roots(caA)}, b: &tls.Config{RootCAs: roots(caA)}, same: true},
		{name: "insecure, loaded twice",
			a: &tls.Config{InsecureSkipVerify: true}, b: &tls.Config{InsecureSkipVerify: true}, same: true},
		{name: "insecure and default", a: &tls.Config{InsecureSkipVerify: true}},
		{name: "a ca_file and default", a: &tls.Config{RootCAs: roots(caA)}},
		{name: "different CAs", a: &tls.Config{RootCAs: roots(caA)}, b: &tls.Config{RootCAs: roots(caB)}},
		{name: "one CA and both", a: &tls.Config{RootCAs: roots(caA)}, b: &tls.Config{RootCAs: roots(caA, caB)}},
		{name: "a ca_file, insecure or not",
			a: &tls.Config{RootCAs: roots(caA), InsecureSkipVerify: true}, b: &tls.Config{RootCAs: roots(caA)}},
		{name: "another setting, equal values",
			a: named, b: &tls.Config{RootCAs: roots(caA), ServerName: "search.internal"}},
		{name: "another setting, one value", a: named, b: named, same: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tp transportPool
			t.Cleanup(tp.closeIdle)
			a := tp.acquire(c.a)
			b := tp.acquire(c.b)
			tp.release(a)
			tp.release(b)
			if got := a == b; got != c.same {
				t.Errorf("shared = %v, want %v", got, c.same)
			}
			if want := map[bool]int{true: 1, false: 2}[c.same]; tp.size() != want {
				t.Errorf("%d transports, want %d", tp.size(), want)
			}
		})
	}
}

// TestTransportSharedConnections: probes of one provider share its
// connections: three probes, each run twice in turn, use one connection,
// where a pool per probe would hold three.
func TestTransportSharedConnections(t *testing.T) {
	s := serveConns(t, originalList)
	e := NewExecutor(Options{Version: "test"})
	t.Cleanup(e.CloseIdleConnections)
	probes := []*checks.Probe{namedProbe(t, "a", s.URL), namedProbe(t, "b", s.URL), namedProbe(t, "c", s.URL)}
	for range 2 {
		for _, p := range probes {
			mustPass(t, e, p)
		}
	}
	if n := s.accepted.Load(); n != 1 {
		t.Errorf("6 runs of 3 probes opened %d connections, want 1", n)
	}
}

// TestTransportNoLaxerConnection: a connection is only reused by probes
// with the TLS settings that verified it. After an insecure probe has
// left a connection to a self-signed provider open, a probe without
// tls.insecure must still fail verification, and a probe trusting the
// certificate through ca_file gets a connection of its own.
func TestTransportNoLaxerConnection(t *testing.T) {
	now := time.Now()
	cert := newCert(t, nil, false, "", now.Add(-time.Hour), now.Add(time.Hour))
	url := tlsProvider(t, cert)
	insecure := parseProbe(t, url, `{insecure: true}`, nil)
	strict := parseProbe(t, url, "", nil)
	trusting := parseProbe(t, url, `{ca_file: self.pem}`, map[string][]byte{"self.pem": cert.pem})

	e := NewExecutor(Options{Version: "test"})
	t.Cleanup(e.CloseIdleConnections)
	mustPass(t, e, insecure)
	if got := e.Run(t.Context(), strict); got.Code() != results.CodeTLSError {
		t.Errorf("strict probe after an insecure one: %s, want tls_error", dump(got))
	}
	mustPass(t, e, trusting)
	if got := e.Run(t.Context(), strict); got.Code() != results.CodeTLSError {
		t.Errorf("strict probe after a trusting one: %s, want tls_error", dump(got))
	}
	if n := e.transports.size(); n != 3 {
		t.Errorf("%d transports for three TLS settings, want 3", n)
	}
}

// TestTransportFailureKeepsOthersConnections: go-retryablehttp closes its
// client's idle connections whenever a run ends in an error. A failing
// probe must not close the connections of the probes it shares a
// transport with: the healthy probe's next run reuses its connection.
func TestTransportFailureKeepsOthersConnections(t *testing.T) {
	huge := serve(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"results":[`+strings.Repeat(`{"id":"doc"},`, 100)+`{"id":"doc"}]}`)
	})
	cases := []struct {
		name    string
		failing func(t *testing.T) *checks.Probe
		code    results.Code
	}{
		{name: "connection refused", code: results.CodeConnectionRefused, failing: func(t *testing.T) *checks.Probe {
			return namedProbe(t, "refused", closedPort(t))
		}},
		{name: "body too large", code: results.CodeResponseTooLarge, failing: func(t *testing.T) *checks.Probe {
			p := namedProbe(t, "too_large", huge)
			p.MaxBodyBytes = 64
			return p
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := serveConns(t, originalList)
			e := NewExecutor(Options{Version: "test"})
			t.Cleanup(e.CloseIdleConnections)
			healthy := namedProbe(t, "healthy", s.URL)
			mustPass(t, e, healthy)
			failing := c.failing(t)
			failing.Steps[0].Retries.MaxAttempts = 1
			if got := e.Run(t.Context(), failing); got.Code() != c.code {
				t.Fatalf("failing probe: %s, want %s", dump(got), c.code)
			}
			mustPass(t, e, healthy)
			if n := s.accepted.Load(); n != 1 {
				t.Errorf("the healthy probe opened %d connections, want 1: the failing run closed its idle connection", n)
			}
		})
	}
}

// TestTransportCloseIdleConnections: CloseIdleConnections closes every
// idle connection, ends the goroutines behind them and forgets the
// transports, which a reload's new probe values then build again: reloads
// leave no transport behind.
func TestTransportCloseIdleConnections(t *testing.T) {
	s := serveConns(t, originalList)
	checkLeaks := testkit.NoLeaks(t)
	e := NewExecutor(Options{Version: "test"})
	now := time.Now()
	ca := newCert(t, nil, true, "", now, now.Add(time.Hour))
	for reload := range 3 {
		// Every reload loads new values, TLS configs included.
		plain := namedProbe(t, "plain", s.URL)
		withCA := namedProbe(t, "with_ca", s.URL)
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca.pem)
		withCA.TLS = &tls.Config{RootCAs: pool}
		mustPass(t, e, plain)
		mustPass(t, e, withCA)
		if n := e.transports.size(); n != 2 {
			t.Errorf("reload %d: %d transports, want 2", reload, n)
		}
		if n := s.open.Load(); n != 2 {
			t.Errorf("reload %d: %d connections open, want 2", reload, n)
		}
		e.CloseIdleConnections()
		if n := e.transports.size(); n != 0 {
			t.Errorf("reload %d: %d transports after CloseIdleConnections, want 0", reload, n)
		}
		waitFor(t, "the provider sees the connections closed", func() bool { return s.open.Load() == 0 })
	}
	checkLeaks()
}

// TestTransportCloseDuringRun: a transport in use by a run when
// CloseIdleConnections is called is kept until the next call, which closes
// whatever the run handed back and then forgets it. net/http closes a
// connection handed back after CloseIdleConnections on its own, but only
// until the transport's next request (another run's retry, say), so a
// forgotten transport could otherwise keep one idle, with its goroutines,
// for the whole idle timeout.
func TestTransportCloseDuringRun(t *testing.T) {
	gate, started := make(chan struct{}), make(chan struct{}, 1)
	s := serveConns(t, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-gate
		originalList(w, r)
	})
	checkLeaks := testkit.NoLeaks(t)
	e := NewExecutor(Options{Version: "test"})
	done := make(chan results.Result, 1)
	go func() { done <- e.Run(t.Context(), testProbe(t, s.URL)) }()
	<-started
	e.CloseIdleConnections()
	close(gate)
	if got := <-done; got.Outcome != results.Pass {
		t.Fatalf("%s", dump(got))
	}
	if n := e.transports.size(); n != 1 {
		t.Errorf("%d transports after the run, want 1: the one in use when connections were closed", n)
	}
	e.CloseIdleConnections()
	waitFor(t, "the provider sees the connection closed", func() bool { return s.open.Load() == 0 })
	if n := e.transports.size(); n != 0 {
		t.Errorf("%d transports after the second CloseIdleConnections, want 0", n)
	}
	checkLeaks()
}

// TestTransportHTTP2: a provider that speaks HTTP/2 is still spoken to in
// HTTP/2 through the shared transport's front, and its probes multiplex
// on one connection.
func TestTransportHTTP2(t *testing.T) {
	var protos, conns atomic.Int32
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			protos.Add(1)
		}
		originalList(w, r)
	}))
	s.EnableHTTP2 = true
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())

	e := NewExecutor(Options{Version: "test"})
	t.Cleanup(e.CloseIdleConnections)
	for _, name := range []string{"a", "b", "c"} {
		p := namedProbe(t, name, s.URL)
		p.TLS = &tls.Config{RootCAs: pool}
		mustPass(t, e, p)
	}
	if n := protos.Load(); n != 3 {
		t.Errorf("%d of 3 requests arrived over HTTP/2", n)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("3 probes opened %d connections, want 1", n)
	}
}

// TestRedirectReach: where a probe's redirects may go, by the addresses
// its own host resolves to and those the target resolves to. Link-local
// (cloud metadata) is never entered; private and loopback only from a
// probe whose host is on one of the same kind.
func TestRedirectReach(t *testing.T) {
	addrs := func(ss ...string) []netip.Addr {
		var out []netip.Addr
		for _, s := range ss {
			out = append(out, netip.MustParseAddr(s))
		}
		return out
	}
	cases := []struct {
		name         string
		probe, to    []netip.Addr
		refusedClass addrClass // -1: admitted
	}{
		{"public to public", addrs("203.0.113.10"), addrs("198.51.100.7"), -1},
		{"public to metadata", addrs("203.0.113.10"), addrs("169.254.169.254"), classLinkLocal},
		{"public to loopback", addrs("203.0.113.10"), addrs("127.0.0.1"), classLoopback},
		{"public to 0.0.0.0", addrs("203.0.113.10"), addrs("0.0.0.0"), classLoopback},
		{"public to ::", addrs("203.0.113.10"), addrs("::"), classLoopback},
		{"public to RFC 1918", addrs("203.0.113.10"), addrs("192.168.1.1"), classPrivate},
		{"public to ULA", addrs("203.0.113.10"), addrs("fd00:ec2::254"), classPrivate},
		{"public to CGNAT", addrs("203.0.113.10"), addrs("100.64.0.1"), classPrivate},
		{"public to metadata through NAT64", addrs("203.0.113.10"), addrs("64:ff9b::a9fe:a9fe"), classLinkLocal},
		{"private to private", addrs("10.0.0.5"), addrs("172.16.3.4"), -1},
		{"private to loopback", addrs("10.0.0.5"), addrs("127.0.0.1"), classLoopback},
		{"private to metadata", addrs("10.0.0.5"), addrs("169.254.169.254"), classLinkLocal},
		{"loopback to loopback", addrs("127.0.0.1"), addrs("::1"), -1},
		{"loopback to private", addrs("127.0.0.1"), addrs("10.0.0.7"), classPrivate},
		{"loopback to metadata", addrs("127.0.0.1", "::1"), addrs("169.254.169.254"), classLinkLocal},
		{"link-local probe to link-local", addrs("169.254.10.1"), addrs("169.254.169.254"), classLinkLocal},
		{"mixed answer", addrs("127.0.0.1"), addrs("127.0.0.2", "169.254.169.254"), classLinkLocal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := reachOf(c.probe).admit("target", c.to)
			var refused *redirectRefusedError
			switch {
			case c.refusedClass < 0 && err != nil:
				t.Errorf("refused: %v; want admitted", err)
			case c.refusedClass >= 0 && !errors.As(err, &refused):
				t.Errorf("admitted (%v); want refused as %s", err, classNames[c.refusedClass])
			case c.refusedClass >= 0 && refused.class != c.refusedClass:
				t.Errorf("refused as %s, want %s", classNames[refused.class], classNames[c.refusedClass])
			}
		})
	}
}

// waitFor polls cond until it holds, or fails the test after 20 seconds, as the daemon tests wait
// saying what it waited for.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("timed out after 20s waiting for %s", what)
		}
	}
}
