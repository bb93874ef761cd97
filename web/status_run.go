package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

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
	// TraceID is the W3C trace the run's requests carried (SPEC §10.1),
	// to look the run up in the provider's traces; "" when untraced.
	TraceID string
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
		Run: newRunView(now, r), DecidingStep: r.Step, TraceID: r.TraceID}
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
		case errors.Is(err, results.ErrNotFound):
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
