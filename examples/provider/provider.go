// Package provider is the bundled example tool provider that `toolpulse
// demo` and the examples check: a search endpoint that can drift the way the
// seed-000 drill did, and an experiment tracker that can go down and recover.
package provider

import (
	"encoding/json"
	"net/http"
	"sync"
)

// Provider serves the example tools. Its failure modes are switched at run
// time so a demo can show a healthy tool, then the drift, then recovery.
// It is safe for concurrent use.
type Provider struct {
	mu       sync.Mutex
	drifted  bool
	down     bool
	requests map[string]int
}

// New returns a healthy provider.
func New() *Provider { return &Provider{requests: map[string]int{}} }

// SetDrifted switches /search between the original list layout and the
// `{"results": {"items": [...]}}` layout of seed 000.
func (p *Provider) SetDrifted(drifted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drifted = drifted
}

// SetDown makes /runs answer 503 (with Retry-After) until set back.
func (p *Provider) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// Requests returns how many requests a path has served.
func (p *Provider) Requests(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[path]
}

// Handler returns the provider's routes:
//
//	POST /search  seed-000 search results for {"query": ...}
//	GET  /runs    seed-003 experiment-tracker runs for ?config=...
func (p *Provider) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /search", p.search)
	mux.HandleFunc("GET /runs", p.runs)
	return mux
}

func (p *Provider) state(path string) (drifted, down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests[path]++
	return p.drifted, p.down
}

var searchResults = []map[string]any{
	{"id": "doc_784", "title": "API migration guide", "score": 0.93},
	{"id": "doc_112", "title": "Changelog 2026-10", "score": 0.81},
	{"id": "doc_090", "title": "Rate limits", "score": 0.42},
}

func (p *Provider) search(w http.ResponseWriter, r *http.Request) {
	drifted, _ := p.state("/search")
	var query struct {
		Query string `json:"query"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&query); err != nil || query.Query == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "body must be {\"query\": \"...\"}"})
		return
	}
	var body map[string]any
	if drifted {
		body = map[string]any{"results": map[string]any{"items": searchResults}, "next_cursor": nil}
	} else {
		body = map[string]any{"results": searchResults, "next_cursor": nil}
	}
	writeJSON(w, http.StatusOK, body)
}

func (p *Provider) runs(w http.ResponseWriter, r *http.Request) {
	_, down := p.state("/runs")
	if down {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "tracker is overloaded"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": []map[string]any{
		{"run_id": "run_0412", "dev_score": 0.871},
		{"run_id": "run_0398", "dev_score": 0.854},
	}})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
