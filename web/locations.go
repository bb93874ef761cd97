package web

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

// locationParams reads ?location=, given once or more, as a filter of
// results by the location they ran from (SPEC §13); none: every location.
// A name that cannot be a location is 400 bad_request.
func locationParams(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	locs := r.URL.Query()["location"]
	for _, l := range locs {
		if !checks.ValidLocation(l) {
			writeAPIError(w, http.StatusBadRequest, "bad_request",
				"location: "+strconv.Quote(l)+" is not a location name (lower-case letters, digits and -)")
			return nil, false
		}
	}
	return locs, true
}

// locationCell is one location's last run of a probe, as the overview
// shows it beside the others.
type locationCell struct {
	Name    string
	State   state
	Code    string
	LastRun *moment // nil: no run from it yet
}

// locationCells are p's locations with each one's last run, in the order
// the probe lists them; nil for a probe of one location, whose row says it
// all. One indexed read per location (results' probe, location,
// started_at index).
func (sp *statusPages) locationCells(ctx context.Context, now time.Time, p *checks.Probe) ([]locationCell, error) {
	if len(p.Locations) < 2 {
		return nil, nil
	}
	cells := make([]locationCell, 0, len(p.Locations))
	for _, loc := range p.Locations {
		c := locationCell{Name: loc, State: noData}
		last, err := sp.store.History(ctx, results.HistoryQuery{Probes: []string{p.Name}, Locations: []string{loc}, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(last) == 1 {
			c.State = stateOf(last[0].Outcome)
			c.Code, _ = present.CodeAndMessage(&last[0])
			at := momentOf(now, last[0].StartedAt)
			c.LastRun = &at
		}
		cells = append(cells, c)
	}
	return cells, nil
}
