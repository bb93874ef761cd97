package web

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

// The status page is server-rendered HTML with its stylesheet inline and
// its charts as inline SVG: no script, no external asset, nothing for a
// browser to fetch but the page itself.
//
//go:embed templates
var webFiles embed.FS

const (
	// stripRuns is how many runs the outcome strip and sparkline draw.
	stripRuns = 50
	// probePageRuns is how many runs a probe's page lists.
	probePageRuns = 100
	// probePageDrifts is how many drift events a probe's page lists.
	probePageDrifts = 10
	// overviewDiffLines is how many diff lines the overview shows per probe;
	// the probe's page has them all.
	overviewDiffLines = 4

	defaultRefresh = 15 * time.Second
	minRefresh     = 5 * time.Second
	maxRefresh     = time.Hour
)

// statusPages renders the overview at / and a page per probe.
type statusPages struct {
	deps      Deps // for the fleet
	logger    *slog.Logger
	store     Store
	probes    func() []*checks.Probe
	now       func() time.Time
	templates *template.Template
	css       template.CSS
	banner    func() string // nil: no config banner
	// csp allows exactly the inline stylesheet, by its hash, and nothing
	// else: no script, no frame, no fetch, no form.
	csp string
}

func newStatusPages(deps Deps) *statusPages {
	css, err := fs.ReadFile(webFiles, "templates/style.css")
	if err != nil {
		panic(err) // embedded at build time: a missing file is a build defect
	}
	templates := template.Must(template.New("").Funcs(template.FuncMap{
		"latency":   present.FormatLatency,
		"stripRuns": func() int { return stripRuns },
	}).ParseFS(webFiles, "templates/*.html"))
	sum := sha256.Sum256(css)
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	return &statusPages{
		deps:      deps,
		logger:    deps.Logger,
		store:     deps.Store,
		probes:    deps.Probes,
		now:       now,
		templates: templates,
		css:       template.CSS(css),
		banner:    deps.ConfigBanner,
		csp: "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
			"img-src data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	}
}

// page is what every page's head and foot need.
type page struct {
	Title       string
	CSS         template.CSS
	Refresh     int    // seconds; 0: no automatic refresh
	StopRefresh string // this page without automatic refresh
	GeneratedAt string
	// ConfigBanner warns that the config file on disk is not the running
	// config; "" when it is.
	ConfigBanner string
	// Silences are the silences muting alerts now, so that a quiet
	// channel is not mistaken for a healthy one; Maintenance the
	// maintenance windows on now, for the same reason.
	Silences    []silenceView
	Maintenance []maintenanceView
}

// silenceView is an active silence as the pages show it.
type silenceView struct {
	ID                    int64
	Matches, Ends, Reason string
}

// refreshOf reads ?refresh= (seconds; 0 turns it off), bounded to
// [minRefresh, maxRefresh].
func refreshOf(r *http.Request) (time.Duration, error) {
	s := r.URL.Query().Get("refresh")
	if s == "" {
		return defaultRefresh, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("refresh: want a number of seconds (0 turns it off), got %q", s)
	}
	if n == 0 {
		return 0, nil
	}
	return min(max(time.Duration(n)*time.Second, minRefresh), maxRefresh), nil
}

func (sp *statusPages) newPage(r *http.Request, now time.Time, title string) (page, error) {
	refresh, err := refreshOf(r)
	stop := r.URL.Query()
	stop.Set("refresh", "0")
	pg := page{Title: title, CSS: sp.css, Refresh: int(refresh / time.Second),
		StopRefresh: r.URL.Path + "?" + stop.Encode(), GeneratedAt: results.FormatTime(now)}
	if sp.banner != nil {
		pg.ConfigBanner = sp.banner()
	}
	silences, serr := sp.store.Silences(r.Context(), now, false)
	if serr != nil {
		// The page is still worth showing without them.
		sp.logger.Error("status page: reading silences failed", "error", serr)
	}
	for _, s := range silences {
		if s.ActiveAt(now) {
			pg.Silences = append(pg.Silences, silenceView{ID: s.ID, Matches: s.Matchers.String(),
				Ends: results.FormatTime(s.EndsAt), Reason: s.Reason})
		}
	}
	_, pg.Maintenance = maintenanceViews(sp.deps.windows(), now)
	return pg, err
}

type errorView struct {
	page
	Status  int
	Code    string
	Message string
}

func (sp *statusPages) renderError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	ev := errorView{page: page{Title: http.StatusText(status) + " · toolpulse", CSS: sp.css,
		GeneratedAt: results.FormatTime(sp.now())}, Status: status, Code: code, Message: message}
	sp.render(w, status, "error", ev)
}

// render executes a page into memory first, so that a template failure
// becomes a clean 500 instead of half a page.
func (sp *statusPages) render(w http.ResponseWriter, status int, name string, data any) {
	var b strings.Builder
	if err := sp.templates.ExecuteTemplate(&b, name, data); err != nil {
		sp.logger.Error("status page: render", "page", name, "err", err)
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString("internal error rendering the page\n")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	}
	h := w.Header()
	h.Set("Content-Security-Policy", sp.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}
