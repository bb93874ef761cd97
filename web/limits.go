package web

import (
	"container/list"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	ratelimit "golang.org/x/time/rate"

	"github.com/toolpulse/toolpulse/checks"
)

// The HTTP surface is read-only and small; these bound what one client,
// or all of them, can make it do.
const (
	// clientRate and clientBurst bound requests per client address and
	// budget: a dashboard polling every few seconds, or a person clicking
	// around, stays far below them.
	clientRate  = ratelimit.Limit(20) // per second
	clientBurst = 40
	// maxClients bounds the buckets kept, whatever the number of
	// addresses: past it, the least recently used bucket goes.
	maxClients = 4096
	// maxInFlight bounds requests served at once, whoever sends them.
	maxInFlight = 64
	// maxHeaderBytes bounds a request's headers (Go's default is 1 MiB).
	maxHeaderBytes = 16 << 10
)

// A budget is one of the separate rate-limit buckets each client address
// has, so that strangers spend their own and never the budget of a
// load balancer's /healthz or of an authenticated scraper behind the same
// address (a reverse proxy, or the same host).
type budget string

const (
	budgetHealthz  budget = "healthz"  // /healthz, which needs no token
	budgetAuthed   budget = "authed"   // requests carrying the configured token
	budgetStranger budget = "stranger" // requests without it, to be refused
	budgetMetrics  budget = "metrics"  // /metrics when no token is configured
	budgetOpen     budget = "open"     // everything else when no token is configured
)

// guard rejects what the read-only surface never needs, before routing:
// a Host name a loopback listener does not answer to (421), methods other
// than GET and HEAD (405), request bodies (413), a client over its rate
// (429, with Retry-After; MCP requests to /mcp count against a budget of
// their own, mcplimits.go), and more than maxInFlight requests at once
// (503). It tells authenticated requests from strangers before it counts
// them, so each spends its own budget.
type guard struct {
	next     http.Handler
	hosts    *hostPolicy   // nil: any Host
	token    checks.Secret // "": no authentication
	inFlight chan struct{}
	limits   *clientLimits // HTTP requests, per budget and client address
	// mcpLimits counts what MCP clients send to /mcp, per budget and
	// client address: JSON-RPC requests, and apart from them the other
	// messages (mcplimits.go).
	mcpLimits *clientLimits
}

func newGuard(next http.Handler, hosts *hostPolicy, token checks.Secret) *guard {
	return &guard{
		next: next, hosts: hosts, token: token,
		inFlight:  make(chan struct{}, maxInFlight),
		limits:    newClientLimits(maxClients),
		mcpLimits: newBucketLimits(maxClients, mcpRate, mcpBurst),
	}
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !g.hosts.allows(r.Host) {
		// A page that rebinds its own name to 127.0.0.1 sends that
		// name here; answering it would hand the page, same-origin,
		// everything the surface shows.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusMisdirectedRequest)
		fmt.Fprintf(w, "421 misdirected request: this server listens on loopback and answers to %s, not to Host %q\n",
			g.hosts, r.Host)
		return
	}
	// The MCP endpoint takes JSON-RPC requests by POST; its tools only
	// read, and its handler bounds the body.
	mcp := r.URL.Path == mcpPath && r.Method == http.MethodPost
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !mcp {
		w.Header().Set("Allow", "GET, HEAD")
		writeAPIError(w, http.StatusMethodNotAllowed, "method_not_allowed", "the HTTP surface is read-only: GET and HEAD only (POST to /mcp)")
		return
	}
	if !mcp && (r.ContentLength != 0 || len(r.TransferEncoding) > 0) {
		writeAPIError(w, http.StatusRequestEntityTooLarge, "request_too_large", "requests carry no body here")
		return
	}
	switch b := g.budget(r); {
	case r.URL.Path == mcpPath && (b == budgetAuthed || b == budgetOpen):
		// An MCP client's requests, counted as such; a stranger's are
		// refused anyway, and spend the strangers' budget below.
		if !g.chargeMCP(w, r, b) {
			return
		}
	default:
		if wait, ok := g.limits.allow(budgetKey(b, clientAddr(r)), time.Now()); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(wait)))
			writeAPIError(w, http.StatusTooManyRequests, "rate_limited", "too many requests from this client; slow down")
			return
		}
	}
	select {
	case g.inFlight <- struct{}{}:
		defer func() { <-g.inFlight }()
	default:
		w.Header().Set("Retry-After", "1")
		writeAPIError(w, http.StatusServiceUnavailable, "busy", "too many requests in flight; try again")
		return
	}
	g.next.ServeHTTP(w, r)
}

// budget is the bucket r spends from.
func (g *guard) budget(r *http.Request) budget {
	switch {
	case r.URL.Path == "/healthz":
		return budgetHealthz
	case g.token != "" && authorized(r, g.token):
		return budgetAuthed
	case g.token != "":
		return budgetStranger
	case r.URL.Path == "/metrics":
		return budgetMetrics
	}
	return budgetOpen
}

// budgetKey names the bucket of one budget of one client address.
func budgetKey(b budget, addr string) string { return string(b) + " " + addr }

// clientLimits is a token bucket per key, at most capacity of them: a new key
// past capacity takes the place of the least recently used one. Every call is
// O(1), however many keys there are.
type clientLimits struct {
	mu       sync.Mutex
	capacity int
	rate     ratelimit.Limit
	burst    int
	byKey    map[string]*list.Element
	lru      list.List // of *clientBucket, the most recently used in front
}

type clientBucket struct {
	key     string
	limiter *ratelimit.Limiter
}

// newClientLimits counts HTTP requests: clientRate, clientBurst.
func newClientLimits(capacity int) *clientLimits {
	return newBucketLimits(capacity, clientRate, clientBurst)
}

// newBucketLimits keeps up to capacity buckets of the given rate and burst.
func newBucketLimits(capacity int, rate ratelimit.Limit, burst int) *clientLimits {
	return &clientLimits{capacity: capacity, rate: rate, burst: burst, byKey: make(map[string]*list.Element, capacity)}
}

// allow takes a token from key's bucket, or says how long until one is
// there.
func (c *clientLimits) allow(key string, now time.Time) (time.Duration, bool) {
	return c.allowN(key, 1, now)
}

// allowN takes n tokens from key's bucket at once, or none and says how
// long until there are n; n over the burst waits for the whole burst.
func (c *clientLimits) allowN(key string, n int, now time.Time) (time.Duration, bool) {
	n = min(n, c.burst)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	switch {
	case ok:
		c.lru.MoveToFront(e)
	case c.lru.Len() >= c.capacity:
		// Reuse the oldest entry for the newcomer: a fresh, full bucket.
		e = c.lru.Back()
		b := e.Value.(*clientBucket)
		delete(c.byKey, b.key)
		b.key, b.limiter = key, ratelimit.NewLimiter(c.rate, c.burst)
		c.byKey[key] = e
		c.lru.MoveToFront(e)
	default:
		e = c.lru.PushFront(&clientBucket{key: key, limiter: ratelimit.NewLimiter(c.rate, c.burst)})
		c.byKey[key] = e
	}
	res := e.Value.(*clientBucket).limiter.ReserveN(now, n)
	if delay := res.DelayFrom(now); delay > 0 {
		res.CancelAt(now)
		return delay, false
	}
	return 0, true
}

// len is the number of buckets kept.
func (c *clientLimits) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// clientAddr is the request's remote IP, without its port: one client
// opening many connections is still one client.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// hostPolicy is the Host names, any port, a loopback listener answers
// to. A nil policy answers any Host: a listener other hosts reach is
// addressed by whatever name they know it by, and needs a token.
type hostPolicy struct {
	names []string // lower case, IPv6 without brackets
}

// serverHosts is the host policy for server: nil when it listens beyond
// loopback; otherwise localhost, 127.0.0.1 and ::1, the listen host, and
// the host of public_url, which a reverse proxy on the same host may pass
// on. A server without a listen address (the demo's, which listens on
// 127.0.0.1 itself) counts as loopback.
func serverHosts(server checks.Server) *hostPolicy {
	if server.Listen != "" && !server.Loopback() {
		return nil
	}
	p := &hostPolicy{names: []string{"localhost", "127.0.0.1", "::1"}}
	if host, _, err := net.SplitHostPort(server.Listen); err == nil && host != "" {
		p.add(host)
	}
	if u, err := url.Parse(server.PublicURL); err == nil && u.Hostname() != "" {
		p.add(u.Hostname())
	}
	return p
}

func (p *hostPolicy) add(name string) {
	name = strings.ToLower(name)
	for _, n := range p.names {
		if n == name {
			return
		}
	}
	p.names = append(p.names, name)
}

// allows reports whether a request with this Host header is answered. A
// request without one (HTTP/1.0) names no host a page could have rebound.
func (p *hostPolicy) allows(host string) bool {
	if p == nil || host == "" {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1]
	}
	name = strings.ToLower(name)
	for _, n := range p.names {
		if n == name {
			return true
		}
	}
	return false
}

// String lists the names, IPv6 in brackets as a Host header carries it.
func (p *hostPolicy) String() string {
	names := make([]string, len(p.names))
	for i, n := range p.names {
		if strings.Contains(n, ":") {
			n = "[" + n + "]"
		}
		names[i] = n
	}
	return strings.Join(names, ", ")
}
