package prober

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// Provider faults beyond the core table of operation_test.go: slow drips,
// decompression bombs, redirects, certificates, half-closed and silent
// connections, DNS, and a fleet of probes against one dead host.

// faultRun runs p once with the table's options (Rand 0.5) and fails the
// test, instead of hanging it, when the run is not back within limit: the
// faults here are providers that would otherwise hold a run forever.
func faultRun(t *testing.T, p *checks.Probe, limit time.Duration) results.Result {
	t.Helper()
	e := NewExecutor(Options{Rand: func() float64 { return 0.5 }, Version: "test"})
	t.Cleanup(e.CloseIdleConnections)
	done := make(chan results.Result, 1)
	go func() { done <- e.Run(t.Context(), p) }()
	select {
	case r := <-done:
		return r
	case <-time.After(limit):
		t.Fatalf("the run was still going after %v", limit)
		return results.Result{}
	}
}

// checkFault fails t when got is not what w describes.
func checkFault(t *testing.T, got results.Result, w want) {
	t.Helper()
	if err := checkOutcome(got, w); err != nil {
		t.Errorf("%v\nresult: %s", err, dump(got))
	}
}

// --- 1. Slow drip -----------------------------------------------------------

// dripEverySecond sends a 200 with a Content-Length and then one byte of
// body a second, until the client hangs up.
func dripEverySecond(t testing.TB) string {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := io.WriteString(w, " "); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
		}
	})
}

// dripHeaders sends its status line one byte a second, so that the
// headers never complete.
func dripHeaders(t testing.TB) string {
	return rawServer(t, func(c net.Conn, _ *bufio.Reader) {
		for _, b := range []byte("HTTP/1.1 200 OK\r\n") {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(time.Second)
		}
	})
}

// TestFaultSlowDrip: a provider that keeps the connection alive with one
// byte a second never holds a run past its per-attempt timeout, nor past
// the budget when there is no per-attempt timeout. The bounds leave room
// for a loaded machine under -race; a run the limits do not stop goes on
// until faultRun gives up at 10s.
func TestFaultSlowDrip(t *testing.T) {
	cases := []struct {
		name     string
		provider func(testing.TB) string
		probe    func(*checks.Probe)
		want     want
	}{
		{name: "body, one byte a second", provider: dripEverySecond,
			probe: func(p *checks.Probe) { p.Steps[0].Timeout, p.Steps[0].Retries.MaxAttempts = 600*time.Millisecond, 2 },
			want: want{outcome: results.Unavailable, code: results.CodeTimeout, retryable: true, attempts: 2, status: 200,
				under:   4 * time.Second,
				message: regexp.MustCompile(`^timed out after 600ms reading the response body$`)}},
		{name: "headers, one byte a second", provider: dripHeaders,
			probe: func(p *checks.Probe) { p.Steps[0].Timeout, p.Steps[0].Retries.MaxAttempts = 600*time.Millisecond, 2 },
			want: want{outcome: results.Unavailable, code: results.CodeTimeout, retryable: true, attempts: 2,
				under:   4 * time.Second,
				message: regexp.MustCompile(`^timed out after 600ms waiting for the response$`)}},
		// No per-attempt timeout: only the budget stands between the drip
		// and a run that never ends.
		{name: "body, no per-attempt timeout", provider: dripEverySecond,
			probe: func(p *checks.Probe) { p.Steps[0].Timeout, p.Steps[0].Retries.Budget = 0, 1500*time.Millisecond },
			want: want{outcome: results.Unavailable, code: results.CodeTimeout, retryable: true, attempts: 1, status: 200,
				under:   4 * time.Second,
				message: regexp.MustCompile(`^retry budget of 1.5s exhausted reading the response body$`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := testProbe(t, c.provider(t))
			c.probe(p)
			got := faultRun(t, p, 10*time.Second)
			checkFault(t, got, c.want)
		})
	}
}

// --- 2. Gzip bomb -----------------------------------------------------------

// gzipBombOf returns gzip data, about 1 KiB per MiB, that inflates to
// mib MiB of zeros: one compressed MiB repeated as concatenated gzip
// members, which gzip readers decode as one stream.
func gzipBombOf(mib int) []byte {
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	return bytes.Repeat(member.Bytes(), mib)
}

// TestFaultGzipBombMemory: max_body_bytes is counted on decoded bytes and
// the body is never inflated much past it. A 256 MiB bomb (about 256 KiB on
// the wire, below the cap) against a 64 KiB cap must end as
// response_too_large having allocated a few MiB at most. Not parallel: it
// reads the process's allocation counter.
func TestFaultGzipBombMemory(t *testing.T) {
	bomb := gzipBombOf(256)
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	})
	p := testProbe(t, url)
	p.MaxBodyBytes = 64 << 10
	if int64(len(bomb)) < p.MaxBodyBytes {
		t.Fatalf("the bomb is %d bytes on the wire, want more than the cap so that only decoding can catch it", len(bomb))
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := faultRun(t, p, 10*time.Second)
	runtime.ReadMemStats(&after)

	checkFault(t, got, want{outcome: results.ContractError, code: results.CodeResponseTooLarge, attempts: 1, status: 200,
		message: regexp.MustCompile(`^response body exceeds max_body_bytes \(65536 bytes, after decoding\)$`)})
	const budget = 16 << 20
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > budget {
		t.Errorf("the run allocated %d MiB for a 64 KiB cap, want under %d MiB", alloc>>20, budget>>20)
	}
	if len(got.ResponseSample) > sampleBytes {
		t.Errorf("sample of %d bytes, want at most %d", len(got.ResponseSample), sampleBytes)
	}
}

// --- 3. Redirects -----------------------------------------------------------

// TestFaultRedirectBounds: an attempt follows up to maxRedirects (10)
// redirects. A loop ends on the 11th response, a 3xx that expect.status
// rejects: contract_error/unexpected_status in one attempt, whose message
// says where the redirects led and that the limit stopped them. A chain of
// exactly 10 passes (307 keeps the POST and its fixture).
func TestFaultRedirectBounds(t *testing.T) {
	t.Run("loop", func(t *testing.T) {
		t.Parallel()
		var requests atomic.Int32
		url := serve(t, func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			http.Redirect(w, r, "/search", http.StatusFound)
		})
		got := faultRun(t, testProbe(t, url), 10*time.Second)
		checkFault(t, got, want{outcome: results.ContractError, code: results.CodeUnexpectedStatus, attempts: 1, status: 302,
			message: regexp.MustCompile(`^HTTP 302 Found after 10 redirect\(s\), at http://127\.0\.0\.1:\d+/search; ` +
				`redirect limit of 10 reached, Location not followed; expect\.status is \[200\]$`)})
		if got.Attempts[0].Message != got.Error.Message {
			t.Errorf("attempt message %q, want the result's %q", got.Attempts[0].Message, got.Error.Message)
		}
		if n := requests.Load(); n != maxRedirects+1 {
			t.Errorf("provider saw %d requests, want %d: the first and %d redirects, and no retry", n, maxRedirects+1, maxRedirects)
		}
	})
	t.Run("chain of 10", func(t *testing.T) {
		t.Parallel()
		var requests atomic.Int32
		url := serve(t, func(w http.ResponseWriter, r *http.Request) {
			n := requests.Add(1)
			body, _ := io.ReadAll(r.Body)
			switch {
			case n <= maxRedirects:
				http.Redirect(w, r, fmt.Sprintf("/hop/%d", n), http.StatusTemporaryRedirect)
			case r.Method != http.MethodPost || !strings.Contains(string(body), testFixtureQuery):
				http.Error(w, "the fixture was lost on the way", http.StatusBadRequest)
			default:
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, bodyOriginalList)
			}
		})
		got := faultRun(t, testProbe(t, url), 10*time.Second)
		checkFault(t, got, want{outcome: results.Pass, attempts: 1, status: 200, validated: 1, shape: true})
		if n := requests.Load(); n != maxRedirects+1 {
			t.Errorf("provider saw %d requests, want %d", n, maxRedirects+1)
		}
	})
}

// headerLog records the headers of every request a provider receives.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (l *headerLog) add(h http.Header) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, h.Clone())
}

func (l *headerLog) all() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// TestFaultRedirectDropsSecrets: a probe's configured headers are secrets,
// and a redirect to another origin must not carry them. The other origin
// here is another port of 127.0.0.1, to which net/http alone would forward
// even Authorization (it compares host names only), and an API key
// header, which net/http forwards anywhere. A redirect within the probe's
// own origin keeps them: the provider still needs them.
func TestFaultRedirectDropsSecrets(t *testing.T) {
	var other, home headerLog
	otherURL := serve(t, func(w http.ResponseWriter, r *http.Request) {
		other.add(r.Header)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, bodyOriginalList)
	})
	homeURL := serve(t, func(w http.ResponseWriter, r *http.Request) {
		home.add(r.Header)
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/search":
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, otherURL+"/search", http.StatusTemporaryRedirect)
		}
	})
	p := testProbe(t, homeURL)
	p.Steps[0].Request.Headers["X-Api-Key"] = "key-SECRET"

	got := faultRun(t, p, 10*time.Second)
	checkFault(t, got, want{outcome: results.Pass, attempts: 1, status: 200, validated: 1, shape: true})

	homeSeen, otherSeen := home.all(), other.all()
	if len(homeSeen) != 2 || len(otherSeen) != 1 {
		t.Fatalf("home saw %d requests, the other origin %d; want 2 and 1", len(homeSeen), len(otherSeen))
	}
	for i, h := range homeSeen {
		if h.Get("Authorization") != "Bearer sk-test-SECRET" || h.Get("X-Api-Key") != "key-SECRET" {
			t.Errorf("home request %d lacks the configured headers: %v", i+1, h)
		}
	}
	h := otherSeen[0]
	for name, values := range h {
		for _, v := range values {
			if strings.Contains(v, "SECRET") {
				t.Errorf("the other origin received %s: %q", name, v)
			}
		}
	}
	if h.Get("User-Agent") != testUserAgent {
		t.Errorf("the other origin got User-Agent %q, want %q: only the configured headers are dropped", h.Get("User-Agent"), testUserAgent)
	}
}

// redirectNames is what the resolver of redirected requests answers in
// TestFaultRedirectPolicy: names that stand for a cloud's metadata
// service, an intranet host, a public API, and a name whose answer mixes
// a public address with the metadata one.
var redirectNames = map[string][]netip.Addr{
	"metadata.test": {netip.MustParseAddr("169.254.169.254")},
	"intranet.test": {netip.MustParseAddr("10.0.0.7")},
	"api.test":      {netip.MustParseAddr("203.0.113.10")},
	"mixed.test":    {netip.MustParseAddr("203.0.113.10"), netip.MustParseAddr("169.254.169.254")},
}

// TestFaultRedirectPolicy: a provider chooses where its redirects go, and
// what they reach would be stored as the probe's answer. A probe on
// loopback (every provider here) follows redirects to public addresses
// and to loopback, never to link-local ones (cloud metadata) nor private
// ones; the decision is taken on the address the target resolves to when
// it is dialled, so a name resolving to 169.254.169.254 is refused like
// the literal. The test's dialler connects every address it is asked for
// to one loopback server that answers a valid list: a redirect the policy
// lets through would pass, and the dial log shows what was attempted. No
// redirect carries a Referer (net/http would send the previous URL, query
// and its api_key included), nor the configured headers.
func TestFaultRedirectPolicy(t *testing.T) {
	cases := []struct {
		name     string
		location string // where /moved redirects; {port} is the target's port
		noFollow bool
		want     want
		dialed   string // the address the dialler must have been asked for; "": none
	}{
		{name: "link-local name", location: "http://metadata.test:{port}/latest/meta-data/iam/",
			want: want{outcome: results.ContractError, code: results.CodeRedirectRefused, attempts: 1,
				message: regexp.MustCompile(`^redirect refused: the provider redirected to metadata\.test \(169\.254\.169\.254\), a link-local address \(.*\); redirects never go there`)}},
		{name: "link-local literal", location: "http://169.254.169.254:{port}/latest/meta-data/",
			want: want{outcome: results.ContractError, code: results.CodeRedirectRefused, attempts: 1,
				message: regexp.MustCompile(`^redirect refused: the provider redirected to 169\.254\.169\.254, a link-local address`)}},
		{name: "link-local as IPv4-mapped IPv6", location: "http://[::ffff:169.254.169.254]:{port}/",
			want: want{outcome: results.ContractError, code: results.CodeRedirectRefused, attempts: 1,
				message: regexp.MustCompile(`^redirect refused: the provider redirected to ::ffff:169\.254\.169\.254 \(169\.254\.169\.254\), a link-local address`)}},
		{name: "IPv6 link-local", location: "http://[fe80::1]:{port}/",
			want: want{outcome: results.ContractError, code: results.CodeRedirectRefused, attempts: 1,
				message: regexp.MustCompile(`^redirect refused: the provider redirected to fe80::1, a link-local address`)}},
		{name: "public and link-local in one answer", location: "http://mixed.test:{port}/",
			want: want{outcome: results.ContractError, code: results.CodeRedirectRefused, attempts: 1,
				message: regexp.MustCompile(`^redirect refused: the provider redirected to mixed\.test \(169\.254\.169\.254\)`)}},
		{name: "private from a loopback probe", location: "http://intranet.test:{port}/",
			want: want{outcome: results.ContractError, code: results.CodeRedirectRefused, attempts: 1,
				message: regexp.MustCompile(`^redirect refused: the provider redirected to intranet\.test \(10\.0\.0\.7\), a private address; redirects go there only from a probe whose own host is on one`)}},
		{name: "CGNAT from a loopback probe", location: "http://100.100.100.200:{port}/",
			want: want{outcome: results.ContractError, code: results.CodeRedirectRefused, attempts: 1,
				message: regexp.MustCompile(`^redirect refused: the provider redirected to 100\.100\.100\.200, a private address`)}},
		{name: "public name", location: "http://api.test:{port}/search",
			want:   want{outcome: results.Pass, attempts: 1, status: 200, validated: 1, shape: true},
			dialed: "203.0.113.10:{port}"},
		{name: "loopback to loopback", location: "http://127.0.0.1:{port}/search",
			want:   want{outcome: results.Pass, attempts: 1, status: 200, validated: 1, shape: true},
			dialed: "127.0.0.1:{port}"},
		{name: "follow_redirects false", location: "http://127.0.0.1:{port}/search", noFollow: true,
			want: want{outcome: results.ContractError, code: results.CodeUnexpectedStatus, attempts: 1, status: 307,
				message: regexp.MustCompile(`^HTTP 307 Temporary Redirect; request\.follow_redirects is false, Location not followed; expect\.status is \[200\]$`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var home, target headerLog
			targetURL := serve(t, func(w http.ResponseWriter, r *http.Request) {
				target.add(r.Header)
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, bodyOriginalList)
			})
			targetAddr := strings.TrimPrefix(targetURL, "http://")
			_, port, _ := net.SplitHostPort(targetAddr)
			location := strings.ReplaceAll(c.location, "{port}", port)
			homeURL := serve(t, func(w http.ResponseWriter, r *http.Request) {
				home.add(r.Header)
				io.Copy(io.Discard, r.Body)
				switch r.URL.Path {
				case "/search":
					http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
				case "/moved":
					http.Redirect(w, r, location, http.StatusTemporaryRedirect)
				}
			})
			p := testProbe(t, homeURL)
			p.Steps[0].Request.Query["api_key"] = "query-SECRET"
			if c.noFollow {
				p.Steps[0].Request.NoRedirects = true
			}

			e := NewExecutor(Options{Rand: func() float64 { return 0.5 }, Version: "test"})
			t.Cleanup(e.CloseIdleConnections)
			var dialMu sync.Mutex
			var dialed []string
			e.transports.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
				if addrs, ok := redirectNames[host]; ok {
					return addrs, nil
				}
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			homeAddr := strings.TrimPrefix(homeURL, "http://")
			e.transports.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				var d net.Dialer
				if addr == homeAddr { // the same-origin hop
					return d.DialContext(ctx, network, addr)
				}
				dialMu.Lock()
				dialed = append(dialed, addr)
				dialMu.Unlock()
				return d.DialContext(ctx, network, targetAddr)
			}
			got := e.Run(t.Context(), p)
			checkFault(t, got, c.want)

			dialMu.Lock()
			defer dialMu.Unlock()
			targetSeen := target.all()
			if c.dialed == "" {
				if len(dialed) > 0 || len(targetSeen) > 0 {
					t.Errorf("dialled %q, the target saw %d requests; want no connection attempted", dialed, len(targetSeen))
				}
				if len(got.ResponseSample) > 0 {
					t.Errorf("sample %q, want none: no answer came from the target", got.ResponseSample)
				}
			} else if want := strings.ReplaceAll(c.dialed, "{port}", port); !slices.Equal(dialed, []string{want}) {
				t.Errorf("dialled %q, want [%s]", dialed, want)
			}
			homeSeen := home.all()
			if want := 2 - btoi(c.noFollow); len(homeSeen) != want {
				t.Errorf("home saw %d requests, want %d", len(homeSeen), want)
			}
			for i, h := range append(homeSeen, targetSeen...) {
				if ref := h.Get("Referer"); ref != "" {
					t.Errorf("request %d carried Referer %q", i+1, ref)
				}
				for name, values := range h {
					for _, v := range values {
						if strings.Contains(v, "query-SECRET") {
							t.Errorf("request %d carried the query's key in %s: %q", i+1, name, v)
						}
					}
				}
			}
			for i, h := range targetSeen {
				if h.Get("Authorization") != "" {
					t.Errorf("target request %d carried Authorization", i+1)
				}
			}
		})
	}
}

// TestFaultRedirectPolicySteps: a step's request is sent like a single
// probe's, under the same redirect policy: a step redirected to the
// metadata address fails there as redirect_refused, and a step with
// follow_redirects: false takes the 3xx as its answer.
func TestFaultRedirectPolicySteps(t *testing.T) {
	var dialed atomic.Int32
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	cfg, err := checks.Parse("checks.yaml", []byte(`version: 1
probes:
  - name: p
    retries: {max_attempts: 2, base_delay: 1ms, max_delay: 2ms, budget: 5s}
    steps:
      - {name: moved, request: {url: "${URL}/a", follow_redirects: false}, expect: {status: [302]}}
      - {name: token, request: {url: "${URL}/token"}}
`), t.TempDir(), func(k string) (string, bool) { return url, k == "URL" })
	if err != nil {
		t.Fatal(err)
	}
	e := NewExecutor(Options{Rand: func() float64 { return 0.5 }, Version: "test"})
	t.Cleanup(e.CloseIdleConnections)
	e.transports.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed.Add(1)
		return nil, fmt.Errorf("the test dials nothing for a redirect, asked for %s", addr)
	}
	got := e.Run(t.Context(), cfg.Probes[0])
	if got.Outcome != results.ContractError || got.Code() != results.CodeRedirectRefused || got.Step != "token" {
		t.Fatalf("run = %s %v (step %q), want contract_error redirect_refused at token", got.Outcome, got.Error, got.Step)
	}
	if len(got.Attempts) != 2 {
		t.Errorf("%d attempts, want 2: one per step, a refused redirect is not retried", len(got.Attempts))
	}
	if n := dialed.Load(); n != 0 {
		t.Errorf("%d dials for redirects, want none", n)
	}
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// --- 4. TLS -----------------------------------------------------------------

// testCert is a certificate with its key, as a server presents it, and as
// PEM for a ca_file.
type testCert struct {
	cert tls.Certificate
	x509 *x509.Certificate
	pem  []byte
}

// newCert makes a certificate for 127.0.0.1 (or dnsName, when set) valid
// from notBefore to notAfter, signed by parent, or self-signed when parent
// is nil. isCA makes it a CA.
func newCert(t *testing.T, parent *testCert, isCA bool, dnsName string, notBefore, notAfter time.Time) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "toolpulse test " + serial.String()},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  isCA,
	}
	if dnsName != "" {
		tmpl.DNSNames = []string{dnsName}
	} else {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	signer, signerKey := tmpl, any(key)
	if parent != nil {
		signer, signerKey = parent.x509, parent.cert.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCert{
		cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: parsed},
		x509: parsed,
		pem:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	}
}

// tlsProvider serves the original list over HTTPS with cert.
func tlsProvider(t *testing.T, cert *testCert) string {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, bodyOriginalList)
	}))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert.cert}}
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the expected handshake failures
	s.StartTLS()
	t.Cleanup(s.Close)
	return s.URL
}

// parseProbe loads a one-probe checks.yaml for url with the given tls
// block ("" for none) through checks.Parse, as `toolpulse run` would,
// with files (name to content) written next to it.
func parseProbe(t *testing.T, url, tlsBlock string, files map[string][]byte) *checks.Probe {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	yaml := fmt.Sprintf(`version: 1
consumers:
  - name: results
    select: response.results
    validate: type(.id) == "string"
probes:
  - name: tls_probe
    request: {url: %q}
    consumer: results
    timeout: 2s
    retries: {max_attempts: 1}
`, url+"/search")
	if tlsBlock != "" {
		yaml += "    tls: " + tlsBlock + "\n"
	}
	cfg, err := checks.Parse(filepath.Join(dir, "checks.yaml"), []byte(yaml), dir, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("parse:\n%s\n%v", yaml, err)
	}
	return cfg.Probes[0]
}

// TestFaultTLS: an expired, a self-signed, an unknown-CA and a wrong-name
// certificate are unavailable/tls_error; tls.ca_file trusts a CA (or the
// self-signed certificate itself) and tls.insecure accepts anything, but a
// trusted CA does not make an expired or misnamed certificate acceptable.
func TestFaultTLS(t *testing.T) {
	now := time.Now()
	from, to := now.Add(-time.Hour), now.Add(time.Hour)
	ca := newCert(t, nil, true, "", from, to)
	selfSigned := newCert(t, nil, false, "", from, to)
	signed := newCert(t, ca, false, "", from, to)
	expired := newCert(t, ca, false, "", now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	misnamed := newCert(t, ca, false, "other.example", from, to)
	caFile := map[string][]byte{"ca.pem": ca.pem}

	fails := func(message string) want {
		return want{outcome: results.Unavailable, code: results.CodeTLSError, retryable: true, attempts: 1,
			message: regexp.MustCompile(message)}
	}
	passes := want{outcome: results.Pass, attempts: 1, status: 200, validated: 1, shape: true}
	cases := []struct {
		name  string
		cert  *testCert
		tls   string
		files map[string][]byte
		want  want
	}{
		{name: "self-signed", cert: selfSigned, want: fails(`certificate signed by unknown authority`)},
		{name: "self-signed, insecure", cert: selfSigned, tls: `{insecure: true}`, want: passes},
		{name: "self-signed, itself as ca_file", cert: selfSigned, tls: `{ca_file: self.pem}`,
			files: map[string][]byte{"self.pem": selfSigned.pem}, want: passes},
		{name: "unknown CA", cert: signed, want: fails(`certificate signed by unknown authority`)},
		{name: "CA in ca_file", cert: signed, tls: `{ca_file: ca.pem}`, files: caFile, want: passes},
		{name: "expired, CA in ca_file", cert: expired, tls: `{ca_file: ca.pem}`, files: caFile,
			want: fails(`certificate has expired`)},
		{name: "expired, insecure", cert: expired, tls: `{insecure: true}`, want: passes},
		{name: "wrong name, CA in ca_file", cert: misnamed, tls: `{ca_file: ca.pem}`, files: caFile,
			want: fails(`127\.0\.0\.1 because it doesn't contain any IP SANs`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := parseProbe(t, tlsProvider(t, c.cert), c.tls, c.files)
			got := faultRun(t, p, 10*time.Second)
			checkFault(t, got, c.want)
		})
	}
}

// --- 5. Silent and half-closed connections ----------------------------------

// silentListener accepts connections and holds them without reading or
// writing a byte, until the test ends.
func silentListener(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// halfClose answers with prefix and then closes its write side, keeping
// the read side open until the client hangs up: the client sees a clean
// EOF, not a reset.
func halfClose(prefix string) func(testing.TB) string {
	return func(t testing.TB) string {
		return rawServer(t, func(c net.Conn, br *bufio.Reader) {
			io.WriteString(c, prefix)
			c.(*net.TCPConn).CloseWrite()
			io.Copy(io.Discard, br)
		})
	}
}

// TestFaultSilentAndHalfClosed: a listener that accepts and never answers
// is a timeout bounded by the per-attempt timeout; a provider that closes
// its write side before the response is complete is connection_reset,
// retried, with the headers' status when they arrived (a close inside a
// header line reads as a malformed response instead: network_error).
func TestFaultSilentAndHalfClosed(t *testing.T) {
	const headers = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
	closedEarly := regexp.MustCompile(`^connection closed before the response was complete: `)
	cases := []struct {
		name     string
		provider func(testing.TB) string
		probe    func(*checks.Probe)
		want     want
	}{
		{name: "accepts and never answers", provider: silentListener, probe: withTimeout(shortTimeout, 2),
			want: want{outcome: results.Unavailable, code: results.CodeTimeout, retryable: true, attempts: 2,
				under: 2 * time.Second, message: regexp.MustCompile(`^timed out after 250ms waiting for the response$`)}},
		{name: "half-closed before the status line", provider: halfClose(""),
			want: want{outcome: results.Unavailable, code: results.CodeConnectionReset, retryable: true, attempts: 3,
				under: 2 * time.Second, message: closedEarly}},
		// net/http reports a header line cut short by the close as malformed,
		// not as an early EOF: the transport error is all that reaches us, so
		// this is the fallback network_error, still unavailable and retried.
		{name: "half-closed inside the headers", provider: halfClose("HTTP/1.1 200 OK\r\nContent-Ty"),
			want: want{outcome: results.Unavailable, code: results.CodeNetworkError, retryable: true, attempts: 3,
				under: 2 * time.Second, message: regexp.MustCompile(`malformed MIME header`)}},
		{name: "half-closed after the headers", provider: halfClose(headers),
			want: want{outcome: results.Unavailable, code: results.CodeConnectionReset, retryable: true, attempts: 3, status: 200,
				under: 2 * time.Second, message: closedEarly}},
		{name: "half-closed mid-body", provider: halfClose(headers + `{"results":[{"id":"doc_784",`),
			want: want{outcome: results.Unavailable, code: results.CodeConnectionReset, retryable: true, attempts: 3, status: 200,
				under: 2 * time.Second, message: closedEarly}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := testProbe(t, c.provider(t))
			if c.probe != nil {
				c.probe(p)
			}
			got := faultRun(t, p, 10*time.Second)
			checkFault(t, got, c.want)
		})
	}
}

// --- 6. DNS -----------------------------------------------------------------

// TestFaultDNSNoRetryStorm: a name that cannot resolve (.invalid, RFC 6761)
// is dns_error, retried max_attempts times and no more, each retry after
// its full back-off: a failing resolver answers at once, so without the
// waits the attempts would hammer it back to back.
func TestFaultDNSNoRetryStorm(t *testing.T) {
	t.Parallel()
	p := testProbe(t, "http://toolpulse-fault.invalid")
	p.Steps[0].Retries = checks.Retries{MaxAttempts: 4, BaseDelay: 40 * time.Millisecond, MaxDelay: 80 * time.Millisecond, Budget: 10 * time.Second}
	got := faultRun(t, p, 10*time.Second)
	checkFault(t, got, want{outcome: results.Unavailable, code: results.CodeDNSError, retryable: true, attempts: 4,
		waits:   []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond},
		message: regexp.MustCompile(`no such host`)})
	for i := 1; i < len(got.Attempts); i++ {
		prev, a := got.Attempts[i-1], got.Attempts[i]
		if gap := a.StartedAt.Sub(prev.StartedAt.Add(prev.Duration)); gap < prev.Wait {
			t.Errorf("attempt %d started %v after attempt %d ended, before its %v back-off", a.Number, gap, prev.Number, prev.Wait)
		}
	}
}
