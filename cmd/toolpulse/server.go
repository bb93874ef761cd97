package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// serverDeps is what the read-only HTTP surface needs.
type serverDeps struct {
	logger *slog.Logger
	// server is the config the surface serves under: a loopback listen
	// address (or none: the demo's listeners are loopback) makes it answer
	// only to local Host names and the host of public_url.
	server  checks.Server
	token   checks.Secret               // "" means no authentication
	healthy func(context.Context) error // nil error: the daemon and the store are healthy
	metrics http.Handler
	store   readStore
	probes  func() []*checks.Probe // the probes of the running config
	now     func() time.Time       // nil: time.Now
	// configBanner says how the config file on disk stands against the
	// running config, for the status page; nil or "": nothing to say.
	configBanner func() string
}

// nowFunc returns deps.now, or time.Now when it is nil.
func (deps serverDeps) nowFunc() func() time.Time {
	if deps.now == nil {
		return time.Now
	}
	return deps.now
}

// newServer returns the HTTP surface of SPEC §9: every route is listed in
// addRoutes; a bearer token, when configured, guards them all but /healthz,
// which load balancers probe without credentials; the guard in front keeps
// it read-only, refuses foreign Host names on a loopback listener, and
// rate limits strangers apart from authenticated clients.
func newServer(deps serverDeps) http.Handler {
	mux := http.NewServeMux()
	addRoutes(mux, deps)
	return newGuard(mux, serverHosts(deps.server), deps.token)
}

// addRoutes is the whole HTTP surface in one place.
func addRoutes(mux *http.ServeMux, deps serverDeps) {
	mux.Handle("GET /healthz", handleHealthz(deps.healthy))
	mux.Handle("GET /metrics", requireToken(deps.token, deps.metrics))
	mux.Handle("GET /api/v1/probes", requireToken(deps.token, handleProbes(deps.store, deps.probes)))
	mux.Handle("GET /api/v1/probes/{name}/results", requireToken(deps.token, handleProbeResults(deps.store, deps.probes)))
	mux.Handle("GET /api/v1/drifts", requireToken(deps.token, handleDrifts(deps.store, deps.probes)))
	mux.Handle("GET /api/v1/silences", requireToken(deps.token, handleSilences(deps.store, deps.nowFunc())))
	// MCP: POST only (the endpoint is stateless); the guard lets POST
	// through to this path alone.
	mux.Handle("POST "+mcpPath, requireToken(deps.token,
		mcpsdk.HealthHandler(toolHealth{store: deps.store, probes: deps.probes}, results.ReadBuild().Version)))
	pages := newStatusPages(deps)
	mux.Handle("GET /{$}", requireToken(deps.token, pages.handleOverview()))
	mux.Handle("GET /probes/{name}", requireToken(deps.token, pages.handleProbe()))
	mux.Handle("GET /runs/{operation_id}", requireToken(deps.token, pages.handleRun()))
	mux.Handle("/", requireToken(deps.token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, http.StatusNotFound, "not_found", "no such route: "+r.Method+" "+r.URL.Path)
	})))
}

func handleHealthz(healthy func(context.Context) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := healthy(ctx); err != nil {
			writeAPIError(w, http.StatusServiceUnavailable, "unhealthy", err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
}

// requireToken guards next with the token, compared in constant time;
// with no token configured it lets everything through. Scripts send it as
// a bearer token; a browser, which cannot, is asked for it by its own
// password prompt (HTTP Basic, any user name), so the status page needs
// no login form and no script.
func requireToken(token checks.Secret, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r, token) {
			w.Header().Add("WWW-Authenticate", `Bearer realm="toolpulse"`)
			w.Header().Add("WWW-Authenticate", `Basic realm="toolpulse", charset="UTF-8"`)
			writeAPIError(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized reports whether r carries token, as a bearer token (the
// scheme in any case, RFC 7235) or as a Basic password. The token is
// compared in constant time.
func authorized(r *http.Request, token checks.Secret) bool {
	want := []byte(token.Reveal())
	if _, pass, ok := r.BasicAuth(); ok {
		return subtle.ConstantTimeCompare([]byte(pass), want) == 1
	}
	scheme, credentials, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimLeft(credentials, " ")), want) == 1
}

// apiError is the JSON body of every error the API returns; code is stable.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeAPIError(w http.ResponseWriter, status int, code, message string) {
	var body apiError
	body.Error.Code, body.Error.Message = code, message
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// loopbackAddr reports whether addr is a TCP address only local clients
// reach.
func loopbackAddr(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// serve runs the HTTP surface on ln until ctx ends, then shuts it down
// gracefully. It returns once the server has stopped.
func serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("serving", "url", "http://"+ln.Addr().String())
	if !loopbackAddr(ln.Addr()) {
		logger.Warn("serving plain HTTP beyond loopback: the token and every response cross the network in clear; put a TLS-terminating proxy in front, or listen on 127.0.0.1 behind one",
			"listen", ln.Addr().String())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdown)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
