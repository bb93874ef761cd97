package web

import (
	"cmp"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
	"github.com/toolpulse/toolpulse/results/sqlite"
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
	// channel is not mistaken for a healthy one.
	Silences []silenceView
}

// silenceView is an active silence as the pages show it.
type silenceView struct {
	ID                    int64
	Matches, Ends, Reason string
}

// state is a probe's or a run's outcome as the page shows it: a class for
// the colour, and always the word and a symbol, so colour is never the
// only signal.
type state struct {
	Class, Word, Symbol string
}

var noData = state{Class: "none", Word: "no data", Symbol: "·"}

func stateOf(o results.Outcome) state {
	switch o {
	case results.Pass:
		return state{Class: "pass", Word: "pass", Symbol: "✓"}
	case results.ContractError:
		return state{Class: "contract_error", Word: "contract_error", Symbol: "✗"}
	case results.Unavailable:
		return state{Class: "unavailable", Word: "unavailable", Symbol: "!"}
	}
	return noData
}

// severity orders the overview: what needs a person first.
func severity(s state) int {
	switch s.Class {
	case "unavailable":
		return 0
	case "contract_error":
		return 1
	case "none":
		return 2
	}
	return 3
}

// moment is an instant as the page shows it: relative, with the exact UTC
// time on hover.
type moment struct {
	Ago, At string
}

func momentOf(now, t time.Time) moment {
	return moment{Ago: ago(now.Sub(t)), At: results.FormatTime(t)}
}

// ago is a duration in the largest unit that keeps it short: "12s ago",
// "5m ago", "3h ago", "2d ago".
func ago(d time.Duration) string {
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// since says how long the last outcome of runs (oldest first) has held:
// from the start of its unbroken streak, or "for 50+ runs" when the streak
// fills the whole window and its start is not known.
func since(now time.Time, runs []results.RecentRun) string {
	if len(runs) == 0 {
		return ""
	}
	last := runs[len(runs)-1].Outcome
	start := len(runs) - 1
	for start > 0 && runs[start-1].Outcome == last {
		start--
	}
	if start == 0 && len(runs) >= stripRuns {
		return fmt.Sprintf("for %d+ runs", len(runs))
	}
	return "for " + strings.TrimSuffix(ago(now.Sub(runs[start].StartedAt)), " ago")
}

// row is one probe on the overview, and the head of its own page.
type row struct {
	Name     string
	Href     string
	Interval string
	Consumer results.ConsumerRef
	Labels   []string // "key=value", sorted
	State    state
	Code     string
	Message  string
	LastRun  *moment
	Latency  string
	Since    string
	Strip    strip
	Spark    sparkline
	Drift    *driftView
	Alert    *alertView // nil: never alerted and not firing
	// MCP is an MCP probe's tool and server, as every surface names them
	// (results.MCPServer); nil for an HTTP probe.
	MCP *results.MCPTarget
}

// driftView is a drift event with its diff, cut to max lines when max > 0.
type driftView struct {
	When moment
	// Kind is "definition" for a change of an MCP tool's definition, with
	// its old and new description when that changed; "" for a change of
	// the response's shape.
	Kind              string
	Before, After     string
	Baseline, Current string
	Lines             []string
	More              int
	// Now says whether the probe's latest run is drifted and where it
	// stands against this drift (see driftNow); "" when the probe has no
	// run.
	Now string
	// Step is the step of a steps probe whose answer drifted; "" for a
	// single probe's drift.
	Step string
}

func newDriftView(now time.Time, d results.Drift, max int, latest *results.Result) *driftView {
	v := &driftView{When: momentOf(now, d.DetectedAt), Baseline: d.Baseline, Current: d.Current, Lines: d.Diff, Step: d.Step}
	if d.Step != "" && latest != nil {
		// A step's drift is judged against the latest run's answer of
		// that step, not the run's own (a steps run has none).
		step := &results.Result{}
		for _, st := range latest.Steps {
			if st.Name == d.Step {
				step.Shape = st.Shape
			}
		}
		latest = step
	}
	if d.Kind == results.DriftDefinition {
		// The latest run's shape says nothing about the tool's definition.
		v.Kind, v.Before, v.After = string(d.Kind), d.Before, d.After
	} else {
		v.Now = driftNow(d, latest)
	}
	if max > 0 && len(v.Lines) > max {
		v.Lines, v.More = v.Lines[:max], len(v.Lines)-max
	}
	return v
}

// driftNow says whether the latest run is drifted, as the daemon recorded
// it (against the probe's learned profile), and how it stands against the
// drift d reported: still in that shape, in a shape now learned, back to
// the baseline, or elsewhere.
func driftNow(d results.Drift, latest *results.Result) string {
	switch {
	case latest == nil:
		return ""
	case latest.Shape == nil:
		return "the latest run has no shape (no JSON answer)"
	case len(latest.Shape.Drift) > 0 && latest.Shape.Fingerprint == d.Current:
		return "the latest run is in this drifted shape"
	case len(latest.Shape.Drift) > 0:
		return "the latest run is drifted too, in another shape, " + latest.Shape.Fingerprint
	case latest.Shape.Fingerprint == d.Baseline:
		return "the latest run is back to the baseline shape"
	case latest.Shape.Fingerprint == d.Current:
		return "the latest run is in this shape, now learned: it no longer drifts"
	}
	return "the latest run fits the learned shape, in " + latest.Shape.Fingerprint
}

// requestView is what a probe's page shows of an HTTP probe's request:
// the method, host and path, never the query or headers, which may carry
// secrets. An MCP probe shows row.MCP instead.
type requestView struct {
	Method, Host, Path string
}

// newRequestView is what the probe page shows of p's request, or nil for
// an MCP probe and for a URL without a host.
func newRequestView(p *checks.Probe) *requestView {
	if p.MCP != nil {
		return nil
	}
	u, err := url.Parse(p.Request.URL)
	if err != nil || u.Host == "" {
		return nil
	}
	return &requestView{Method: cmp.Or(p.Request.Method, http.MethodGet), Host: u.Host, Path: p.ScrubURL(cmp.Or(u.EscapedPath(), "/"))}
}

// stepConfigView is one configured step of a steps probe as its page
// lists it: its name, kind and target (an HTTP step's method, host and
// path, never its query or headers; an MCP step's tool and server).
type stepConfigView struct {
	Name, Target string
	Kind         results.ProbeKind
	// Verify marks a step polled until its claim holds; Always one that
	// runs whatever happened.
	Verify, Always bool
}

// newStepConfigViews lists p's steps; nil for a single probe.
func newStepConfigViews(p *checks.Probe) []stepConfigView {
	var out []stepConfigView
	for i := range p.Steps {
		st := &p.Steps[i]
		v := stepConfigView{Name: st.Name, Kind: st.Kind(), Verify: st.Until != nil, Always: st.Always}
		if st.MCP != nil {
			v.Target = "tool " + st.MCP.Tool + " at " + results.MCPServer(st.MCP.URL)
		} else {
			method := cmp.Or(st.Request.Method, http.MethodGet)
			if u, err := url.Parse(st.Request.URL); err == nil && u.Host != "" {
				v.Target = method + " " + u.Host + cmp.Or(u.Path, "/")
			} else {
				v.Target = method + " (URL not shown)"
			}
		}
		v.Target = p.ScrubURL(v.Target)
		out = append(out, v)
	}
	return out
}

func newRow(now time.Time, p *checks.Probe, latest *results.Result, runs []results.RecentRun, drift *results.Drift) row {
	r := row{
		Name:  p.Name,
		Href:  "/probes/" + url.PathEscape(p.Name),
		State: noData,
		Strip: newStrip(runs, stripRuns),
		Spark: newSparkline(runs),
		Since: since(now, runs),
	}
	if p.Interval > 0 {
		r.Interval = p.Interval.String()
	}
	if p.Consumer != nil {
		r.Consumer = p.Consumer.Ref()
	}
	r.MCP = p.MCPTarget()
	for k, v := range p.Labels {
		r.Labels = append(r.Labels, k+"="+v)
	}
	slices.Sort(r.Labels)
	if latest != nil {
		if p.Consumer == nil {
			// A probe no longer configured: the consumer that judged it
			// last, and the tool it called.
			r.Consumer, r.MCP = latest.Consumer, latest.MCP
		}
		r.State = stateOf(latest.Outcome)
		r.Code, r.Message = present.CodeAndMessage(latest)
		at := momentOf(now, latest.StartedAt)
		r.LastRun, r.Latency = &at, present.FormatLatency(latest.Duration)
	}
	if drift != nil {
		r.Drift = newDriftView(now, *drift, overviewDiffLines, latest)
	}
	return r
}

// overview is the page at /.
type overview struct {
	page
	Total   int
	Counts  []stateCount
	Failing bool // only probes whose latest run did not pass are listed
	Rows    []row
}

type stateCount struct {
	State state
	N     int
}

func (sp *statusPages) overview(ctx context.Context, now time.Time, failingOnly bool) (*overview, error) {
	probes := sp.probes()
	latest, err := sp.store.Latest(ctx)
	if err != nil {
		return nil, err
	}
	byProbe := make(map[string]*results.Result, len(latest))
	for i := range latest {
		byProbe[latest[i].Probe] = &latest[i]
	}
	ov := &overview{Total: len(probes), Failing: failingOnly}
	counts := map[string]int{}
	var shown []*checks.Probe
	var names []string
	for _, p := range probes {
		st := noData
		if r := byProbe[p.Name]; r != nil {
			st = stateOf(r.Outcome)
		}
		counts[st.Class]++
		if failingOnly && (st.Class == "pass" || st.Class == "none") {
			continue
		}
		shown, names = append(shown, p), append(names, p.Name)
	}
	for _, st := range []state{stateOf(results.Pass), stateOf(results.ContractError), stateOf(results.Unavailable), noData} {
		ov.Counts = append(ov.Counts, stateCount{State: st, N: counts[st.Class]})
	}
	runs, err := sp.store.RecentRuns(ctx, names, stripRuns)
	if err != nil {
		return nil, err
	}
	alerts, err := readAlerts(ctx, sp.store, names)
	if err != nil {
		return nil, err
	}
	drifts, err := sp.store.LastDrifts(ctx, names)
	if err != nil {
		return nil, err
	}
	for _, p := range shown {
		var drift *results.Drift
		if d, ok := drifts[p.Name]; ok {
			drift = &d
		}
		r := newRow(now, p, byProbe[p.Name], runs[p.Name], drift)
		r.Alert = newAlertView(now, alerts[p.Name])
		ov.Rows = append(ov.Rows, r)
	}
	slices.SortStableFunc(ov.Rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(severity(a.State), severity(b.State)), strings.Compare(a.Name, b.Name))
	})
	return ov, nil
}

// probeView is the page of one probe.
type probeView struct {
	page
	Row        row
	Configured bool
	Runs       []runView
	Failure    *failureView
	Drifts     []*driftView
	Request    *requestView // nil for a probe no longer configured
	// Steps are a steps probe's configured steps, shown instead of a
	// request; HasSteps says the probe's runs name their deciding step.
	Steps    []stepConfigView
	HasSteps bool
	Select   string // the consumer's rules, as written; "" when unknown
	Validate string
}

// runView is one run in a probe's table.
type runView struct {
	ID string
	// Href is the run's own page.
	Href     string
	When     moment
	State    state
	Code     string
	Message  string
	Latency  string
	Attempts int
	Status   string
	Selected string // "selected/validated", or present.NothingSelected
	Shape    string
	// Step is a steps run's deciding step, "-" when every step passed; ""
	// for a single probe's run.
	Step string
}

func newRunView(now time.Time, r *results.Result) runView {
	v := runView{ID: r.OperationID, Href: "/runs/" + url.PathEscape(r.OperationID), When: momentOf(now, r.StartedAt), State: stateOf(r.Outcome),
		Latency: present.FormatLatency(r.Duration), Attempts: r.AttemptCount(), Status: present.StatusText(r.HTTPStatus),
		Selected: present.NothingSelected, Code: "-"}
	if r.SelectedCount > 0 {
		v.Selected = fmt.Sprintf("%d/%d", r.SelectedCount, r.ValidatedCount)
	}
	if r.Error != nil {
		v.Code, v.Message = string(r.Error.Code), results.Shorten(r.Error.Message, present.MaxMessageRunes)
	}
	if r.Shape != nil {
		v.Shape = r.Shape.Fingerprint
	}
	if r.EffectiveKind() == results.ProbeSteps {
		v.Step = cmp.Or(r.Step, "-")
	}
	return v
}

// failureView is the last run that did not pass, with each attempt and the
// response sample it kept (scrubbed of secrets when it was recorded).
type failureView struct {
	Run runView
	// Exchanges is set when the attempts are an MCP session's exchanges,
	// which the table then shows with their try and method.
	Exchanges bool
	Message   string // whole, not cut to one line
	Attempts  []attemptView
	Sample    string
	Shape     string // canonical shape text
}

type attemptView struct {
	Number int
	// Try and Method say which try an MCP exchange belongs to and what it
	// was ("tools/call"); Method is "" for an HTTP attempt. Poll is the
	// poll of a verification the attempt asked, 0 for a call that does
	// not poll.
	Try     int
	Poll    int
	Method  string
	When    moment
	Latency string
	Status  string
	Code    string
	Message string
	Wait    string
	Step    string // the step of a steps probe the attempt belongs to
}

func newFailureView(now time.Time, r *results.Result) *failureView {
	f := &failureView{Run: newRunView(now, r), Sample: r.ResponseSample}
	if r.Error != nil {
		f.Message = r.Error.Message
	}
	if r.Shape != nil {
		f.Shape = r.Shape.Canonical
	}
	for _, a := range r.Attempts {
		f.Attempts = append(f.Attempts, newAttemptView(now, a))
		f.Exchanges = f.Exchanges || a.Method != ""
	}
	return f
}

func newAttemptView(now time.Time, a results.Attempt) attemptView {
	code := a.Verdict()
	if code == "ok" {
		code = "-"
	}
	av := attemptView{Number: a.Number, Try: a.TryNumber(), Poll: a.Poll, Method: a.Method,
		When: momentOf(now, a.StartedAt), Latency: present.FormatLatency(a.Duration),
		Status: present.StatusText(a.HTTPStatus), Code: code, Message: a.Message, Step: a.Step}
	if a.Wait > 0 {
		av.Wait = present.FormatLatency(a.Wait)
	}
	return av
}

// runPageView is the page of one run, at /runs/{operation_id}: its
// verdict, and each step with its attempts (a steps probe) or its
// attempts (a single probe).
type runPageView struct {
	page
	Probe, ProbeHref string
	Kind             results.ProbeKind
	Run              runView
	Message          string // whole, not cut to one line
	// DecidingStep is the step that decided the run; "" when every step
	// passed, and for a single probe.
	DecidingStep string
	Steps        []runStepView
	Attempts     []attemptView // a single probe's
	Exchanges    bool          // the attempts are an MCP session's exchanges
}

// runStepView is one step of a steps run with the attempts it made.
type runStepView struct {
	Name      string
	State     state
	Code      string
	Message   string
	Latency   string
	Polls     int
	Always    bool
	Skipped   bool
	Deciding  bool
	Attempts  []attemptView
	Exchanges bool
}

func newRunPageView(now time.Time, r *results.Result) *runPageView {
	v := &runPageView{Probe: r.Probe, ProbeHref: "/probes/" + url.PathEscape(r.Probe), Kind: r.EffectiveKind(),
		Run: newRunView(now, r), DecidingStep: r.Step}
	if r.Error != nil {
		v.Message = r.Error.Message
	}
	if r.EffectiveKind() != results.ProbeSteps {
		for _, a := range r.Attempts {
			v.Attempts = append(v.Attempts, newAttemptView(now, a))
			v.Exchanges = v.Exchanges || a.Method != ""
		}
		return v
	}
	for _, st := range r.Steps {
		sv := runStepView{Name: st.Name, State: stateOf(st.Outcome), Code: "-", Latency: present.FormatLatency(st.Duration),
			Polls: st.Polls, Always: st.Always, Skipped: st.Skipped, Deciding: st.Name == r.Step}
		if st.Error != nil {
			sv.Code, sv.Message = string(st.Error.Code), st.Error.Message
		}
		for _, a := range r.Attempts {
			if a.Step == st.Name {
				sv.Attempts = append(sv.Attempts, newAttemptView(now, a))
				sv.Exchanges = sv.Exchanges || a.Method != ""
			}
		}
		v.Steps = append(v.Steps, sv)
	}
	return v
}

// errNoProbe is a probe neither configured nor in the store.
var errNoProbe = errors.New("no such probe")

func (sp *statusPages) probe(ctx context.Context, now time.Time, name string) (*probeView, error) {
	var cfg *checks.Probe
	for _, p := range sp.probes() {
		if p.Name == name {
			cfg = p
		}
	}
	recent, err := sp.store.History(ctx, results.HistoryQuery{Probes: []string{name}, Limit: probePageRuns})
	if err != nil {
		return nil, err
	}
	if cfg == nil && len(recent) == 0 {
		return nil, errNoProbe
	}
	pv := &probeView{Configured: cfg != nil}
	if cfg != nil {
		pv.Request = newRequestView(cfg)
		pv.Steps = newStepConfigViews(cfg)
		pv.HasSteps = len(cfg.Steps) > 0
		if cfg.Consumer != nil {
			pv.Select, pv.Validate = cfg.Consumer.Select, cfg.Consumer.Validate
		}
	}
	if cfg == nil {
		// A probe removed from the config, still in the store.
		cfg = &checks.Probe{Name: name}
	}
	// The strip and sparkline are the newest runs, oldest first: the page
	// has them already, no second read.
	runs := make([]results.RecentRun, 0, min(len(recent), stripRuns))
	for i := min(len(recent), stripRuns) - 1; i >= 0; i-- {
		r := &recent[i]
		runs = append(runs, results.RecentRun{StartedAt: r.StartedAt, Outcome: r.Outcome, Duration: r.Duration, Attempts: r.AttemptCount()})
	}
	drifts, err := sp.store.Drifts(ctx, name, time.Time{}, probePageDrifts)
	if err != nil {
		return nil, err
	}
	var latest *results.Result
	if len(recent) > 0 {
		latest = &recent[0]
	}
	var drift *results.Drift
	if len(drifts) > 0 {
		drift = &drifts[0]
	}
	pv.Row = newRow(now, cfg, latest, runs, drift)
	alerts, err := readAlerts(ctx, sp.store, []string{name})
	if err != nil {
		return nil, err
	}
	pv.Row.Alert = newAlertView(now, alerts[name])
	for i := range recent {
		pv.Runs = append(pv.Runs, newRunView(now, &recent[i]))
		pv.HasSteps = pv.HasSteps || recent[i].EffectiveKind() == results.ProbeSteps
	}
	for _, d := range drifts {
		pv.Drifts = append(pv.Drifts, newDriftView(now, d, 0, latest))
	}
	failures, err := sp.store.History(ctx, results.HistoryQuery{Probes: []string{name},
		Outcomes: []results.Outcome{results.ContractError, results.Unavailable}, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(failures) > 0 {
		pv.Failure = newFailureView(now, &failures[0])
	}
	return pv, nil
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
	return pg, err
}

func (sp *statusPages) handleOverview() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := sp.now()
		pg, err := sp.newPage(r, now, "toolpulse status")
		if err != nil {
			sp.renderError(w, r, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		filter := r.URL.Query().Get("show")
		if filter != "" && filter != "failing" {
			sp.renderError(w, r, http.StatusBadRequest, "bad_request", fmt.Sprintf("show: want failing or nothing, got %q", filter))
			return
		}
		ov, err := sp.overview(r.Context(), now, filter == "failing")
		if err != nil {
			sp.logger.Error("status page", "err", err)
			sp.renderError(w, r, http.StatusInternalServerError, "store_error", "reading the results failed")
			return
		}
		ov.page = pg
		sp.render(w, http.StatusOK, "overview", ov)
	})
}

func (sp *statusPages) handleProbe() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := sp.now()
		name := r.PathValue("name")
		pg, err := sp.newPage(r, now, name+" · toolpulse")
		if err != nil {
			sp.renderError(w, r, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		pv, err := sp.probe(r.Context(), now, name)
		switch {
		case errors.Is(err, errNoProbe):
			sp.renderError(w, r, http.StatusNotFound, "not_found", "no probe named "+strconv.Quote(name))
			return
		case err != nil:
			sp.logger.Error("status page", "probe", name, "err", err)
			sp.renderError(w, r, http.StatusInternalServerError, "store_error", "reading the results failed")
			return
		}
		pv.page = pg
		sp.render(w, http.StatusOK, "probe", pv)
	})
}

func (sp *statusPages) handleRun() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := sp.now()
		id := r.PathValue("operation_id")
		pg, err := sp.newPage(r, now, "run "+id+" · toolpulse")
		if err != nil {
			sp.renderError(w, r, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		res, err := sp.store.Result(r.Context(), id)
		switch {
		case errors.Is(err, sqlite.ErrNotFound):
			sp.renderError(w, r, http.StatusNotFound, "not_found", "no run with operation id "+strconv.Quote(id))
			return
		case err != nil:
			sp.logger.Error("status page", "operation_id", id, "err", err)
			sp.renderError(w, r, http.StatusInternalServerError, "store_error", "reading the results failed")
			return
		}
		v := newRunPageView(now, &res)
		v.page = pg
		sp.render(w, http.StatusOK, "run", v)
	})
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
