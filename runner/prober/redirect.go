package prober

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// maxRedirects is how many redirects one attempt follows. The response
// that would be the next one is kept as the attempt's answer, so a loop
// ends as that 3xx status, judged by expect.status (an unexpected_status
// contract error, never retried: a loop is not transient). net/http's
// default instead fails with an error, which would read as a retried
// network_error and repeat the whole loop on every attempt.
const maxRedirects = 10

// redirectPolicy is the CheckRedirect of p's client.
//
// With request.follow_redirects: false, the first 3xx is the answer.
//
// Every header a probe configures is a secret (checks.Secret), so on a
// redirect to another origin (scheme, host or port) all of them are
// dropped: net/http drops only Authorization and cookies, and only when
// the host name changes, so it would send an API key header anywhere, and
// Authorization to another port of the same host. Headers toolpulse sets
// itself (User-Agent, Content-Type) go on. A redirect back to the probe's
// own origin gets the configured headers again.
//
// No Referer goes with a redirect: net/http sets it to the previous URL,
// query included, which may carry a credential (an api_key parameter) to
// whatever host the provider names. Only a Referer the probe configures
// itself is kept, within its own origin, like any configured header.
//
// Where a redirect may go is not decided here but where it is dialled
// (see redirectTransport): a host name says nothing about the address it
// resolves to at the moment of the connection.
func redirectPolicy(r checks.Request) func(*http.Request, []*http.Request) error {
	ownReferer := false
	for k := range r.Headers {
		ownReferer = ownReferer || strings.EqualFold(k, "Referer")
	}
	return func(req *http.Request, via []*http.Request) error {
		if r.NoRedirects || len(via) > maxRedirects {
			return http.ErrUseLastResponse
		}
		if !ownReferer {
			req.Header.Del("Referer")
		}
		if !sameOrigin(req.URL, via[0].URL) {
			for k := range r.Headers {
				req.Header.Del(k)
			}
		}
		return nil
	}
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// redirectNote says how an attempt's response was reached, for messages:
// "" without redirects. noFollow is request.follow_redirects: false.
func redirectNote(resp *http.Response, noFollow bool) string {
	if resp == nil || resp.Request == nil {
		return ""
	}
	n := 0
	for r := resp.Request; r.Response != nil && r.Response.Request != nil; r = r.Response.Request {
		n++
	}
	note := ""
	if n > 0 {
		note = fmt.Sprintf(" after %d redirect(s), at %s", n, safeURL(resp.Request.URL))
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 && resp.Header.Get("Location") != "" {
		switch {
		case noFollow:
			note += "; request.follow_redirects is false, Location not followed"
		case n >= maxRedirects:
			note += fmt.Sprintf("; redirect limit of %d reached, Location not followed", maxRedirects)
		}
	}
	return note
}

// safeURL is u without user info and query, which may carry credentials,
// bounded for a message.
func safeURL(u *url.URL) string {
	v := *u
	v.User, v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = nil, "", false, "", ""
	s := v.String()
	return results.ClipBytes(s, 120)
}

// Where a redirect may go.
//
// A provider names the target of its redirects, and a probe's answer is
// stored, shown and captured: a redirect to http://169.254.169.254/ would
// put the cloud's instance credentials on the status page. So a redirected
// request is dialled only to a public address, and to a private or
// loopback one only when the probe's own host is on one of the same kind
// (a probe of a service on 10.0.0.0/8 may follow it to another private
// address; one on 127.0.0.1 to loopback). Link-local addresses are never
// entered, whatever the probe's host.
//
// The decision is made on the addresses the target resolves to when the
// connection is made, and the connection goes to an address that was
// judged, so that a public name resolving to 169.254.169.254, or one that
// changes its answer between two lookups, is refused too. Redirected
// requests ride pools of their own, one per reach (see sharedTransport),
// so that a redirect never reuses a connection a probe of an internal host
// opened without that judgement.

// addrClass is the kind of address a connection may go to.
type addrClass int

const (
	classPublic addrClass = iota
	classPrivate
	classLoopback
	classLinkLocal
)

var classNames = [...]string{
	classPublic:    "a public address",
	classPrivate:   "a private address",
	classLoopback:  "a loopback address",
	classLinkLocal: "a link-local address (where clouds serve instance metadata and credentials)",
}

var (
	// cgnat is shared address space (RFC 6598), private in all but name.
	cgnat = netip.MustParsePrefix("100.64.0.0/10")
	// thisNetwork is 0.0.0.0/8, which Linux dials as the local host.
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	// nat64 embeds an IPv4 address (RFC 6052) that a NAT64 gateway
	// reaches on the prober's behalf.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// classOf returns the kind of address a is.
func classOf(a netip.Addr) addrClass {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return classLinkLocal
	case a.IsLoopback(), a.IsUnspecified(), thisNetwork.Contains(a):
		return classLoopback
	case a.IsPrivate(), cgnat.Contains(a):
		return classPrivate
	}
	return classPublic
}

// reach is the set of non-public kinds of address a probe's redirects may
// enter: those its own host is on, but link-local.
type reach uint8

const (
	reachPrivate reach = 1 << iota
	reachLoopback
	reaches = 4 // the number of distinct reach values
)

// allows reports whether r admits an address of class c.
func (r reach) allows(c addrClass) bool {
	switch c {
	case classPublic:
		return true
	case classPrivate:
		return r&reachPrivate != 0
	case classLoopback:
		return r&reachLoopback != 0
	}
	return false
}

// reachOf is the reach of a probe whose host resolves to addrs.
func reachOf(addrs []netip.Addr) reach {
	var r reach
	for _, a := range addrs {
		switch classOf(a) {
		case classPrivate:
			r |= reachPrivate
		case classLoopback:
			r |= reachLoopback
		}
	}
	return r
}

// redirectRefusedError is a redirect whose target resolves to an address
// the probe's reach does not admit.
type redirectRefusedError struct {
	host  string
	addr  netip.Addr
	class addrClass
}

func (e *redirectRefusedError) Error() string {
	at := e.host
	if a, err := netip.ParseAddr(strings.Trim(e.host, "[]")); err != nil || a != e.addr {
		at += " (" + e.addr.String() + ")"
	}
	why := "redirects go there only from a probe whose own host is on one"
	if e.class == classLinkLocal {
		why = "redirects never go there"
	}
	return fmt.Sprintf("redirect refused: the provider redirected to %s, %s; %s (set request.follow_redirects: false to judge the 3xx itself)",
		at, classNames[e.class], why)
}

// admit returns a *redirectRefusedError when any of the addresses host
// resolves to is outside r: an answer that mixes a public address with
// an internal one is refused as a whole.
func (r reach) admit(host string, addrs []netip.Addr) error {
	for _, a := range addrs {
		if c := classOf(a); !r.allows(c) {
			return &redirectRefusedError{host: host, addr: a.Unmap(), class: c}
		}
	}
	return nil
}

// resolve returns the addresses of host, an IP literal or a name.
func (tp *transportPool) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a.WithZone("")}, nil
	}
	if tp.lookup != nil {
		return tp.lookup(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// dialer is how connections are opened: net/http's default dialer, or a
// test's.
func (tp *transportPool) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if tp.dial != nil {
		return tp.dial
	}
	return defaultDialer.DialContext
}

// defaultDialer has the settings of http.DefaultTransport's.
var defaultDialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// redirectDial is the state of one redirected request, in its context:
// whether the transport sends it through a proxy, whose address is then
// what gets dialled.
type redirectDial struct {
	mu       sync.Mutex
	viaProxy bool
}

type redirectDialKey struct{}

func redirectDialOf(ctx context.Context) *redirectDial {
	d, _ := ctx.Value(redirectDialKey{}).(*redirectDial)
	return d
}

// newGuardedTransport is a transport for the redirected requests of
// probes with TLS config and reach r. It dials only addresses r admits,
// each judged after resolution and dialled as the address itself. Behind
// a proxy from the environment the proxy is dialled as configured, and
// the target is judged by what this host's resolver says of it before the
// request is handed over; a name this resolver does not know is left to
// the proxy.
func (tp *transportPool) newGuardedTransport(config *tls.Config, r reach) *http.Transport {
	t := newTransport(config)
	t.Proxy = func(req *http.Request) (*url.URL, error) {
		u, err := http.ProxyFromEnvironment(req)
		if u == nil || err != nil {
			return u, err
		}
		if addrs, err := tp.resolve(req.Context(), req.URL.Hostname()); err == nil {
			if err := r.admit(req.URL.Hostname(), addrs); err != nil {
				return nil, err
			}
		}
		if d := redirectDialOf(req.Context()); d != nil {
			d.mu.Lock()
			d.viaProxy = true
			d.mu.Unlock()
		}
		return u, nil
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dial := tp.dialer()
		if d := redirectDialOf(ctx); d != nil {
			d.mu.Lock()
			proxied := d.viaProxy
			d.mu.Unlock()
			if proxied {
				return dial(ctx, network, addr)
			}
		}
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("dialling %s: bad port", addr)
		}
		addrs, err := tp.resolve(ctx, host)
		if err != nil {
			return nil, err
		}
		if err := r.admit(host, addrs); err != nil {
			return nil, err
		}
		var errs []error
		for _, a := range addrs {
			c, err := dial(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		if len(errs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
		return nil, errs[0]
	}
	return t
}

// redirectTransport is the RoundTripper of one probe's client: the first
// request of an attempt goes to the probe's shared transport, as
// configured, and every redirected one to the guarded transport of the
// probe's reach, which it works out on the first redirect from the
// addresses of the probe's own host.
type redirectTransport struct {
	pool  *transportPool
	first http.RoundTripper // the shared transport's front
	host  string            // the probe's own host

	once  sync.Once
	reach reach
}

func (rt *redirectTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Response == nil {
		return rt.first.RoundTrip(req)
	}
	rt.once.Do(func() {
		// A host that does not resolve here (a proxy resolves it) is
		// taken for a public one.
		if addrs, err := rt.pool.resolve(req.Context(), rt.host); err == nil {
			rt.reach = reachOf(addrs)
		}
	})
	ctx := context.WithValue(req.Context(), redirectDialKey{}, &redirectDial{})
	return rt.pool.guarded(rt.first, rt.reach).RoundTrip(req.WithContext(ctx))
}
