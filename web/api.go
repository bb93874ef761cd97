package web

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

// Store is what the JSON API and the status page read; *sqlite.Store implements it.
type Store interface {
	Latest(ctx context.Context) ([]results.Result, error)
	History(ctx context.Context, q results.HistoryQuery) ([]results.Result, error)
	Drifts(ctx context.Context, probe string, since time.Time, limit int) ([]results.Drift, error)
	RecentRuns(ctx context.Context, probes []string, n int) (map[string][]results.RecentRun, error)
	LastDrifts(ctx context.Context, probes []string) (map[string]results.Drift, error)
	AlertStates(ctx context.Context) (map[string]results.AlertState, error)
	LatestAlerts(ctx context.Context, probes []string) (map[string]results.Alert, error)
	Silences(ctx context.Context, now time.Time, includeExpired bool) ([]results.Silence, error)
	// Result is one stored run with its attempts and steps, or an error
	// wrapping results.ErrNotFound.
	Result(ctx context.Context, operationID string) (results.Result, error)
}

// maxAPILimit bounds one page of the API, whatever the client asks.
const maxAPILimit = 1000

// probeSummary is a probe as /api/v1/probes shows it: its config, without
// the request (URLs and headers may carry secrets; of an MCP probe, only
// the tool and the server's scheme, host and path), and its latest run.
type probeSummary struct {
	Name     string              `json:"name"`
	Kind     results.ProbeKind   `json:"kind"`
	MCP      *results.MCPTarget  `json:"mcp,omitempty"` // an MCP probe's tool and server (never its URL's credentials or query)
	Consumer results.ConsumerRef `json:"consumer"`
	Interval string              `json:"interval"`
	Labels   map[string]string   `json:"labels"`
	Latest   *results.Envelope   `json:"latest"`
	Alert    probeAlert          `json:"alert"`
}

func handleProbes(store Store, probes func() []*checks.Probe) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !onlyParams(w, r) {
			return
		}
		latest, err := store.Latest(r.Context())
		if err != nil {
			writeAPIError(w, http.StatusInternalServerError, "store_error", "reading the latest results failed")
			return
		}
		byProbe := map[string]*results.Result{}
		for i := range latest {
			byProbe[latest[i].Probe] = &latest[i]
		}
		ps := probes()
		names := make([]string, len(ps))
		for i, p := range ps {
			names[i] = p.Name
		}
		alerts, err := readAlerts(r.Context(), store, names)
		if err != nil {
			writeAPIError(w, http.StatusInternalServerError, "store_error", "reading the alert state failed")
			return
		}
		out := []probeSummary{}
		for _, p := range ps {
			s := probeSummary{Name: p.Name, Kind: p.Kind(), MCP: p.MCPTarget(),
				Interval: p.Interval.String(), Labels: p.Labels}
			if p.Consumer() != nil { // the loader always sets one; a hand-built probe may not
				s.Consumer = p.Consumer().Ref()
			}
			if s.Labels == nil {
				s.Labels = map[string]string{}
			}
			if res, ok := byProbe[p.Name]; ok {
				env := res.Envelope()
				s.Latest = &env
			}
			s.Alert = alerts[p.Name]
			out = append(out, s)
		}
		writeJSON(w, map[string]any{"probes": out})
	})
}

func handleProbeResults(store Store, probes func() []*checks.Probe) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !onlyParams(w, r, "since", "limit", "location") {
			return
		}
		q, ok := pageQuery(w, r)
		if !ok {
			return
		}
		locations, ok := locationParams(w, r)
		if !ok {
			return
		}
		rows, err := store.History(r.Context(), results.HistoryQuery{Probes: []string{name}, Since: q.since, Limit: q.limit, Locations: locations})
		if err != nil {
			writeAPIError(w, http.StatusInternalServerError, "store_error", "reading results failed")
			return
		}
		if !configured(probes, name) && len(rows) == 0 {
			writeAPIError(w, http.StatusNotFound, "not_found", "no probe named "+strconv.Quote(name))
			return
		}
		envs := make([]results.Envelope, len(rows))
		for i := range rows {
			envs[i] = rows[i].Envelope()
		}
		writeJSON(w, map[string]any{"probe": name, "results": envs})
	})
}

// driftJSON is a drift event as the API shows it: kind is "response" (the
// response's shape) or "definition" (an MCP tool's definition, with the
// old and new description when it changed).
type driftJSON struct {
	Kind        results.DriftKind `json:"kind"`
	Probe       string            `json:"probe"`
	OperationID string            `json:"operation_id"`
	DetectedAt  string            `json:"detected_at"`
	Baseline    string            `json:"baseline"`
	Current     string            `json:"current"`
	Diff        []string          `json:"diff"`
	// DescriptionBefore and DescriptionAfter are null unless a definition
	// drift changed the tool's description.
	DescriptionBefore *string `json:"description_before"`
	DescriptionAfter  *string `json:"description_after"`
	// Step is the step of a steps probe whose answer drifted; absent for
	// a single probe's drift.
	Step string `json:"step,omitempty"`
}

func handleDrifts(store Store, probes func() []*checks.Probe) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !onlyParams(w, r, "probe", "since", "limit") {
			return
		}
		q, ok := pageQuery(w, r)
		if !ok {
			return
		}
		probe := r.URL.Query().Get("probe")
		drifts, err := store.Drifts(r.Context(), probe, q.since, q.limit)
		if err != nil {
			writeAPIError(w, http.StatusInternalServerError, "store_error", "reading drifts failed")
			return
		}
		if probe != "" && len(drifts) == 0 && !configured(probes, probe) {
			// An empty list would read as "no drift" for a misspelt
			// name; answer as /api/v1/probes/{name}/results does.
			rows, err := store.History(r.Context(), results.HistoryQuery{Probes: []string{probe}, Limit: 1})
			if err != nil {
				writeAPIError(w, http.StatusInternalServerError, "store_error", "reading results failed")
				return
			}
			if len(rows) == 0 {
				writeAPIError(w, http.StatusNotFound, "not_found", "no probe named "+strconv.Quote(probe))
				return
			}
		}
		out := make([]driftJSON, len(drifts))
		for i, d := range drifts {
			out[i] = driftJSON{Kind: d.KindOrResponse(), Probe: d.Probe, OperationID: d.OperationID,
				DetectedAt: results.FormatTime(d.DetectedAt), Baseline: d.Baseline, Current: d.Current, Diff: d.Diff, Step: d.Step}
			if d.Before != "" || d.After != "" {
				out[i].DescriptionBefore, out[i].DescriptionAfter = &d.Before, &d.After
			}
		}
		writeJSON(w, map[string]any{"drifts": out})
	})
}

// handleSilences lists the silences not ended or expired at now, as
// `toolpulse silence list --format json` prints them; all=true adds the
// rest.
func handleSilences(store Store, now func() time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !onlyParams(w, r, "all") {
			return
		}
		var all bool
		switch v := r.URL.Query().Get("all"); v {
		case "", "false":
		case "true":
			all = true
		default:
			writeAPIError(w, http.StatusBadRequest, "bad_request", "all: want true or false, got "+strconv.Quote(v))
			return
		}
		silences, err := store.Silences(r.Context(), now(), all)
		if err != nil {
			writeAPIError(w, http.StatusInternalServerError, "store_error", "reading silences failed")
			return
		}
		out := make([]present.SilenceRow, len(silences))
		for i, s := range silences {
			out[i] = present.ToSilenceRow(s)
		}
		writeJSON(w, map[string]any{"silences": out})
	})
}

// configured reports whether the running config has a probe named name.
func configured(probes func() []*checks.Probe, name string) bool {
	for _, p := range probes() {
		if p.Name == name {
			return true
		}
	}
	return false
}

// onlyParams answers 400 itself, naming them, when the request has query
// parameters other than allowed: a filter the endpoint does not support
// (?outcome=) must not be silently ignored, or the caller reads an
// unfiltered answer as a filtered one.
func onlyParams(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	var unknown []string
	for name := range r.URL.Query() {
		if !slices.Contains(allowed, name) {
			unknown = append(unknown, strconv.Quote(name))
		}
	}
	if len(unknown) == 0 {
		return true
	}
	slices.Sort(unknown)
	takes := "takes no query parameters"
	if len(allowed) > 0 {
		takes = "takes " + strings.Join(allowed, ", ")
	}
	noun := "parameter"
	if len(unknown) > 1 {
		noun = "parameters"
	}
	writeAPIError(w, http.StatusBadRequest, "bad_request",
		"unknown query "+noun+" "+strings.Join(unknown, ", ")+"; "+r.URL.Path+" "+takes)
	return false
}

type apiPage struct {
	since time.Time
	limit int
}

// pageQuery reads ?since= (a duration ago, RFC 3339 time or date) and
// ?limit= (default 50, at most maxAPILimit), answering 400 itself when
// either is malformed.
func pageQuery(w http.ResponseWriter, r *http.Request) (apiPage, bool) {
	p := apiPage{limit: results.DefaultLimit}
	var err error
	if p.since, err = present.ParseInstant(r.URL.Query().Get("since"), time.Now()); err != nil {
		writeAPIError(w, http.StatusBadRequest, "bad_request", "since: "+err.Error())
		return p, false
	}
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeAPIError(w, http.StatusBadRequest, "bad_request", "limit: want a positive integer, got "+strconv.Quote(s))
			return p, false
		}
		p.limit = min(n, maxAPILimit)
	}
	return p, true
}

func writeJSON(w http.ResponseWriter, body any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body)
}
