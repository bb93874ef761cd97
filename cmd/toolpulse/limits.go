package main

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	ratelimit "golang.org/x/time/rate"
)

// The HTTP surface is read-only and small; these bound what one client,
// or all of them, can make it do.
const (
	// clientRate and clientBurst bound requests per client address: a
	// dashboard polling every few seconds, or a person clicking around,
	// stays far below them.
	clientRate  = ratelimit.Limit(20) // per second
	clientBurst = 40
	// maxClients bounds the per-client limiters kept; past it, limiters
	// idle for clientIdle are dropped.
	maxClients = 4096
	clientIdle = time.Minute
	// maxInFlight bounds requests served at once, whoever sends them.
	maxInFlight = 64
	// maxHeaderBytes bounds a request's headers (Go's default is 1 MiB).
	maxHeaderBytes = 16 << 10
)

// guard rejects what the read-only surface never needs, before routing:
// methods other than GET and HEAD (405), request bodies (413), a client
// over its rate (429, with Retry-After), and more than maxInFlight
// requests at once (503).
type guard struct {
	next     http.Handler
	inFlight chan struct{}

	mu      sync.Mutex
	clients map[string]*client
}

type client struct {
	limiter  *ratelimit.Limiter
	lastSeen time.Time
}

func newGuard(next http.Handler) *guard {
	return &guard{next: next, inFlight: make(chan struct{}, maxInFlight), clients: map[string]*client{}}
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
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
	if wait, ok := g.allow(clientAddr(r), time.Now()); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(wait.Round(time.Second)/time.Second))))
		writeAPIError(w, http.StatusTooManyRequests, "rate_limited", "too many requests from this client; slow down")
		return
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

// allow takes a token from addr's bucket, or says how long until one is
// there.
func (g *guard) allow(addr string, now time.Time) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.clients[addr]
	if !ok {
		if len(g.clients) >= maxClients {
			for a, old := range g.clients {
				if now.Sub(old.lastSeen) > clientIdle {
					delete(g.clients, a)
				}
			}
		}
		c = &client{limiter: ratelimit.NewLimiter(clientRate, clientBurst)}
		g.clients[addr] = c
	}
	c.lastSeen = now
	res := c.limiter.ReserveN(now, 1)
	if delay := res.DelayFrom(now); delay > 0 {
		res.CancelAt(now)
		return delay, false
	}
	return 0, true
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
