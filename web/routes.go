package web

import (
	"net/http"

	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// NewServer returns the HTTP surface of SPEC §9: every route is listed in
// addRoutes; a bearer token, when configured, guards them all but /healthz,
// which load balancers probe without credentials; the guard in front keeps
// it read-only, refuses foreign Host names on a loopback listener, and
// rate limits strangers apart from authenticated clients.
func NewServer(deps Deps) http.Handler {
	mux := http.NewServeMux()
	addRoutes(mux, deps)
	return newGuard(mux, serverHosts(deps.Server), deps.Token)
}

// addRoutes is the whole HTTP surface in one place.
func addRoutes(mux *http.ServeMux, deps Deps) {
	mux.Handle("GET /healthz", handleHealthz(deps.Healthy, deps.role, deps.Fleet))
	mux.Handle("GET /metrics", requireToken(deps.Token, deps.Metrics))
	mux.Handle("GET /api/v1/probes", requireToken(deps.Token, handleProbes(deps.Store, deps.Probes)))
	mux.Handle("GET /api/v1/probes/{name}/results", requireToken(deps.Token, handleProbeResults(deps.Store, deps.Probes)))
	mux.Handle("GET /api/v1/drifts", requireToken(deps.Token, handleDrifts(deps.Store, deps.Probes)))
	mux.Handle("GET /api/v1/fleet", requireToken(deps.Token, handleFleet(deps)))
	mux.Handle("GET /api/v1/silences", requireToken(deps.Token, handleSilences(deps.Store, deps.nowFunc())))
	mux.Handle("GET /api/v1/maintenance", requireToken(deps.Token, handleMaintenance(deps.windows, deps.nowFunc())))
	// MCP: POST only (the endpoint is stateless); the guard lets POST
	// through to this path alone.
	mux.Handle("POST "+mcpPath, requireToken(deps.Token,
		mcpsdk.HealthHandler(toolHealth{store: deps.Store, probes: deps.Probes}, results.ReadBuild().Version)))
	pages := newStatusPages(deps)
	mux.Handle("GET /{$}", requireToken(deps.Token, pages.handleOverview()))
	mux.Handle("GET /probes/{name}", requireToken(deps.Token, pages.handleProbe()))
	mux.Handle("GET /runs/{operation_id}", requireToken(deps.Token, pages.handleRun()))
	mux.Handle("/", requireToken(deps.Token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, http.StatusNotFound, "not_found", "no such route: "+r.Method+" "+r.URL.Path)
	})))
}
