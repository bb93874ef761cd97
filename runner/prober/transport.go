package prober

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/checks"
)

// Sizing of every shared transport's connection pool.
//
// A transport dials a new connection only when a request finds no idle
// one, so the connections it holds to one host never outnumber the
// requests in flight to that host at once, give or take the odd dial that
// completes after an idle connection served its request; and the daemon
// never has more than max_concurrency runs in flight. Reuse survives a
// burst as long as the per-host cap is at least max_concurrency: every
// run of the burst returns its connection and the next burst finds it.
// A per-host cap above the runs in flight costs nothing, since the pool
// never grows past its peak, so the per-host cap is simply the total cap,
// and max_concurrency (64 by default, resizable on reload) is what bounds
// it in practice. MaxConnsPerHost stays unlimited for the same reason: a
// transport-level queue would only make runs wait inside net/http, where
// the wait would be measured as the provider's latency or timeout.
//
// The total cap is what bounds memory when probes spread over many hosts.
// An idle HTTP/1.1 connection costs some 10 KB of heap (its read and write
// buffers) and two goroutine stacks, about 20 KB in all, a TLS one more, so
// 1,024 of them stay within 20 to 40 MB whatever the number of probes: a
// fleet of 10,000 probes on 10,000 hosts keeps the 1,024 most recently
// used warm and dials for the others, as their first runs did. A pool per
// probe kept one connection per probe instead, and memory grew with the
// fleet.
//
// The idle timeout is net/http's default: a probe at the default 1m
// interval finds its connection still open at its next run, with room for
// a late run; providers commonly drop idle connections after 60 to 120
// seconds anyway, and net/http discards a connection whose close arrived
// before it was reused.
const (
	maxIdleConns        = 1024
	maxIdleConnsPerHost = maxIdleConns
	idleConnTimeout     = 90 * time.Second
)

// transportPool hands out the Executor's shared HTTP transports. Probes
// whose transport settings are equal share one *http.Transport and so one
// pool of keep-alive connections; what differs per probe (the per-attempt
// Timeout, the redirect policy) lives on the http.Client each run builds
// around it. The only transport setting a probe has is its TLS
// configuration (tls.ca_file and tls.insecure): probes without one share
// the default transport, and probes whose configs trust the same roots
// with the same insecure flag share another, even across reloads, which
// rebuild every config. A config that sets anything else (only code, not
// checks.yaml, builds one) gets a transport of its own.
//
// What sharing changes, and what it does not:
//
//   - A probe never rides a connection verified under other TLS settings
//     than its own: a connection belongs to the transport whose settings
//     verified it. A probe without tls.insecure never reuses a connection
//     an insecure probe opened to the same host.
//   - Nothing else crosses between probes. There is no cookie jar; headers
//     are set on each request, and the redirect policy that drops them on
//     a cross-origin redirect is the probe's own. The TLS configs have no
//     ClientSessionCache, so no session ticket is stored or resumed: a new
//     connection always makes a full handshake, whoever opens it.
//   - A run may reuse a connection another probe of the same host opened.
//     Its latency then leaves out connect and TLS handshake, as it did
//     whenever its own previous run had left a connection open; what
//     changes is that a probe's first run, or a run after an interval
//     longer than the idle timeout, may now find one warm. Over
//     HTTP/2 the probes of one host multiplex on one connection, as any
//     client of that host would, and a connection-level failure (GOAWAY, a
//     reset) is seen by every run in flight on it, each classifying it on
//     its own. A provider that authenticates connections rather than
//     requests (NTLM) would see every probe of it on one authenticated
//     connection; toolpulse speaks no such scheme.
//   - One probe's failure does not cost the others their connections:
//     go-retryablehttp closes its client's idle connections whenever a run
//     ends in an error, which on a shared transport would drop every
//     probe's warm connection on each failing run. Clients are therefore
//     given a front transport (see newSharedTransport) whose
//     CloseIdleConnections reaches nothing; only CloseIdleConnections on
//     the Executor closes the shared pools.
//
// Transports are dropped, not kept per probe value: closeIdle closes every
// pool's idle connections and forgets the transports no run is using, so
// a reload leaves no transport behind, and one still in use is closed
// again on the next call, once its run has handed its connection back.
type transportPool struct {
	mu      sync.Mutex
	entries []*sharedTransport
	// byConfig remembers the entry of each probe TLS config seen since the
	// last closeIdle (the nil key: probes without one), so that a run
	// costs one map lookup rather than comparing certificate pools.
	byConfig map[*tls.Config]*sharedTransport

	// lookup and dial resolve and dial for redirected requests (see
	// newGuardedTransport); nil: the system's resolver and net/http's
	// default dialer. Tests set them before the first run.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

// sharedTransport is one pool of connections and its front.
type sharedTransport struct {
	// config is what the transport was built from: nil for Go's defaults.
	config *tls.Config
	// plain says config sets nothing but RootCAs and InsecureSkipVerify,
	// so that probes whose configs compare equal by checks.SameTLS may share it;
	// a config that is not plain is shared by identity only.
	plain bool
	// conns holds the connections; front is what clients are given.
	conns, front *http.Transport
	inFlight     int // runs between acquire and release
	// guarded holds the connections of redirected requests, one pool per
	// reach, built on first use: a redirect never rides a connection
	// opened without its reach's judgement (see redirectTransport).
	guarded [reaches]*http.Transport
}

// acquire returns the transport for a probe's TLS config (nil: Go's
// defaults), building it on first use, and counts a run on it until
// release.
func (tp *transportPool) acquire(config *tls.Config) *sharedTransport {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	st, ok := tp.byConfig[config]
	if !ok {
		st = tp.find(config)
		if tp.byConfig == nil {
			tp.byConfig = map[*tls.Config]*sharedTransport{}
		}
		tp.byConfig[config] = st
	}
	st.inFlight++
	return st
}

// release ends a run acquire counted.
func (tp *transportPool) release(st *sharedTransport) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	st.inFlight--
}

// find returns the entry whose settings equal config's, adding one when
// there is none. tp.mu must be held.
func (tp *transportPool) find(config *tls.Config) *sharedTransport {
	plain := plainTLS(config)
	for _, st := range tp.entries {
		if plain && st.plain && checks.SameTLS(st.config, config) || !plain && st.config == config {
			return st
		}
	}
	st := newSharedTransport(config, plain)
	tp.entries = append(tp.entries, st)
	return st
}

// guarded returns the transport for the redirected requests of the runs
// of front, the front of a transport acquire handed out, whose probes have
// reach r.
func (tp *transportPool) guarded(front http.RoundTripper, r reach) http.RoundTripper {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for _, st := range tp.entries {
		if st.front == front {
			if st.guarded[r] == nil {
				st.guarded[r] = tp.newGuardedTransport(st.config, r)
			}
			return st.guarded[r]
		}
	}
	// Not a transport of the pool: a guarded transport of Go's defaults
	// that keeps no connection.
	t := tp.newGuardedTransport(nil, r)
	t.DisableKeepAlives = true
	return t
}

// closeIdle closes the idle connections of every transport and forgets
// those no run is using.
func (tp *transportPool) closeIdle() {
	tp.mu.Lock()
	all := tp.entries
	tp.entries, tp.byConfig = nil, nil
	for _, st := range all {
		if st.inFlight > 0 {
			tp.entries = append(tp.entries, st)
		}
	}
	tp.mu.Unlock()
	for _, st := range all {
		st.conns.CloseIdleConnections()
		st.front.CloseIdleConnections()
		for _, g := range st.guarded {
			if g != nil {
				g.CloseIdleConnections()
			}
		}
	}
}

// size returns how many transports the pool holds, for tests.
func (tp *transportPool) size() int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return len(tp.entries)
}

// newSharedTransport builds the transport for config: net/http's defaults
// (proxy from the environment, dial and TLS handshake timeouts, HTTP/2
// when the server offers it, gzip asked for and decoded, so that
// max_body_bytes counts decoded bytes) with the pool sized as above.
//
// The front is an *http.Transport too, holding no connection of its own:
// it hands every http and https request to conns (RegisterProtocol), and
// its CloseIdleConnections only reaches itself. It is a Transport, not a
// wrapper type, because http.Client enforces its Timeout with the
// request's context only for transports it knows (a Transport, or one
// whose registered protocol is one); any other RoundTripper costs a
// goroutine and a timer per attempt. It is built with the same settings
// as conns, so that the one request net/http keeps from registered
// protocols (an https WebSocket upgrade) would still be made with the
// probe's TLS settings, but with HTTP/2 off: it then never registers a
// protocol over ours, and never offers h2 on a connection it cannot speak
// it on.
func newSharedTransport(config *tls.Config, plain bool) *sharedTransport {
	conns := newTransport(config)
	front := newTransport(config)
	front.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	front.RegisterProtocol("http", conns)
	front.RegisterProtocol("https", conns)
	return &sharedTransport{config: config, plain: plain, conns: conns, front: front}
}

// newTransport is net/http's default transport with config (nil: Go's
// defaults) and the pool sized as above.
func newTransport(config *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = maxIdleConns
	t.MaxIdleConnsPerHost = maxIdleConnsPerHost
	t.IdleConnTimeout = idleConnTimeout
	if config != nil {
		t.TLSClientConfig = config.Clone()
	}
	return t
}

// plainTLS reports whether c sets nothing but what checks sets from
// tls.ca_file and tls.insecure; nil is plain.
func plainTLS(c *tls.Config) bool {
	if c == nil {
		return true
	}
	rest := c.Clone()
	rest.RootCAs, rest.InsecureSkipVerify = nil, false
	return reflect.DeepEqual(rest, new(tls.Config).Clone())
}
