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

// The pool of every shared transport. A transport holds no more
// connections to a host than runs in flight there, and max_concurrency
// bounds those, so the per-host cap is the total cap; MaxConnsPerHost
// stays unlimited, so that no run waits inside net/http, where the wait
// would read as the provider's latency. The total cap bounds memory when
// probes spread over many hosts; the idle timeout is net/http's default,
// longer than the default 1m interval. BENCHMARKS.md, "Connection pools",
// has the reasoning and its numbers.
const (
	maxIdleConns        = 1024
	maxIdleConnsPerHost = maxIdleConns
	idleConnTimeout     = 90 * time.Second
)

// transportPool hands out the Executor's shared HTTP transports: probes
// whose TLS settings are equal by checks.SameTLS (tls.ca_file,
// tls.insecure) share one *http.Transport and its keep-alive connections,
// across reloads too; a config built in code that sets anything else gets
// one of its own. What differs per run (the attempt's timeout, the
// redirect policy) lives on the http.Client each run builds around it.
//
// Sharing never mixes TLS settings (a connection serves only the settings
// that verified it), keeps no cookies and no TLS session cache, and sets
// headers per request; probes of one host may find each other's warm
// connection. Clients get a front transport whose CloseIdleConnections
// reaches nothing, so that a failing run (go-retryablehttp closes idle
// connections on an error) does not cost other probes theirs; closeIdle
// closes every pool and forgets the transports no run is using.
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
// (proxy from the environment, HTTP/2 when offered, gzip asked for and
// decoded, so that max_body_bytes counts decoded bytes) with the pool sized
// as above. The front is an *http.Transport holding no connection of its
// own: it hands http and https to conns (RegisterProtocol), so http.Client
// still enforces its timeout through the request's context without a
// goroutine per attempt, and it has HTTP/2 off so that it never registers
// a protocol over ours.
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
