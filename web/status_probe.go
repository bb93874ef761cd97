package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

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
		pv.HasSteps = cfg.MultiStep()
		if pv.HasSteps {
			pv.Steps = newStepConfigViews(cfg)
		}
		if cfg.Consumer() != nil {
			pv.Select, pv.Validate = cfg.Consumer().Select, cfg.Consumer().Validate
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
	windows := sp.deps.windows()
	pv.Row.Maintenance = maintenanceOf(windows, results.WindowsOn(windows, now), cfg)
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
