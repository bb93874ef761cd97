package web

import (
	"net/http"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

// localClock is an instant as the pages show it: RFC 3339 for the
// datetime attribute, and the wall clock of a window's zone for people.
type localClock struct {
	At    string // results.FormatTime
	Local string // "Sun 04:00 CET"
}

func clockOf(t time.Time, loc *time.Location) localClock {
	if loc == nil {
		loc = time.UTC
	}
	return localClock{At: results.FormatTime(t), Local: t.In(loc).Format("Mon 15:04 MST")}
}

// maintenanceView is a maintenance window of the running config as the
// pages show it.
type maintenanceView struct {
	Name     string
	Matches  string
	Schedule string // "Sun 02:00 Europe/Berlin for 2h"
	// Until is the end of the stretch on now; nil when the window is off.
	Until *localClock
	// Next is the start of its next stretch.
	Next localClock
}

// maintenanceViews returns every window, and those on at now.
func maintenanceViews(windows []results.MaintenanceWindow, now time.Time) (all, active []maintenanceView) {
	for _, w := range windows {
		v := maintenanceView{Name: w.Name, Matches: w.Matchers.String(), Schedule: w.String()}
		if until, on := w.ActiveAt(now); on {
			c := clockOf(until, w.Location)
			v.Until = &c
		}
		next, _ := w.NextAfter(now)
		v.Next = clockOf(next, w.Location)
		all = append(all, v)
		if v.Until != nil {
			active = append(active, v)
		}
	}
	return all, active
}

// maintenanceOf returns until when a window on covers p, for its row; nil
// when none does. Of several, the one that ends last says. on is
// results.WindowsOn of windows.
func maintenanceOf(windows []results.MaintenanceWindow, on []time.Time, p *checks.Probe) *localClock {
	var last time.Time
	var loc *time.Location
	for i, w := range windows {
		if on[i].After(last) && w.Matches(p.Name, p.Labels) {
			last, loc = on[i], w.Location
		}
	}
	if last.IsZero() {
		return nil
	}
	c := clockOf(last, loc)
	return &c
}

// handleMaintenance lists the running config's maintenance windows, each
// with whether it is on now, until when, and when it next starts.
func handleMaintenance(windows func() []results.MaintenanceWindow, now func() time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !onlyParams(w, r) {
			return
		}
		at := now()
		list := windows()
		out := make([]present.MaintenanceRow, len(list))
		for i, mw := range list {
			out[i] = present.ToMaintenanceRow(mw, at)
		}
		writeJSON(w, map[string]any{"maintenance": out})
	})
}
