package web

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

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
	// Maintenance is when the maintenance window the probe is in ends;
	// nil when it is in none.
	Maintenance *localClock
	// MCP is an MCP probe's tool and server, as every surface names them
	// (results.MCPServer); nil for an HTTP probe.
	MCP *results.MCPTarget
	// Locations are each location's last run, side by side, for a probe
	// that runs from more than one (locations.go); nil otherwise.
	Locations []locationCell
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
	if p.Consumer() != nil {
		r.Consumer = p.Consumer().Ref()
	}
	r.MCP = p.MCPTarget()
	for k, v := range p.Labels {
		r.Labels = append(r.Labels, k+"="+v)
	}
	slices.Sort(r.Labels)
	if latest != nil {
		if p.Consumer() == nil {
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
	Fleet   *fleetView // nil without a fleet store
	// Windows are the running config's maintenance windows, each with its
	// next start.
	Windows []maintenanceView
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
	windows := sp.deps.windows()
	on := results.WindowsOn(windows, now)
	ov := &overview{Total: len(probes), Failing: failingOnly}
	ov.Windows, _ = maintenanceViews(windows, now)
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
		r.Maintenance = maintenanceOf(windows, on, p)
		if r.Locations, err = sp.locationCells(ctx, now, p); err != nil {
			return nil, err
		}
		ov.Rows = append(ov.Rows, r)
	}
	slices.SortStableFunc(ov.Rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(severity(a.State), severity(b.State)), strings.Compare(a.Name, b.Name))
	})
	return ov, nil
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
		ov.Fleet = sp.fleetSection(r.Context())
		sp.render(w, http.StatusOK, "overview", ov)
	})
}
