package present

import (
	"fmt"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// MaintenanceRow is the JSON form of a maintenance window at an instant:
// its settings as checks.yaml writes them, whether it is on, until when,
// and its next stretch.
type MaintenanceRow struct {
	Name     string           `json:"name"`
	Matchers results.Matchers `json:"matchers"`
	Every    []string         `json:"every"` // empty: every day
	Start    string           `json:"start"` // HH:MM in Timezone
	Duration string           `json:"duration"`
	Timezone string           `json:"timezone"`
	Active   bool             `json:"active"`
	// Until is the end of the stretch on at the instant; nil when off.
	Until     *string `json:"until"`
	NextStart string  `json:"next_start"`
	NextEnd   string  `json:"next_end"`
}

// ToMaintenanceRow is w in its JSON form at now.
func ToMaintenanceRow(w results.MaintenanceWindow, now time.Time) MaintenanceRow {
	row := MaintenanceRow{Name: w.Name, Matchers: w.Matchers, Every: []string{},
		Start: fmt.Sprintf("%02d:%02d", w.Hour, w.Minute), Duration: w.Duration.String(), Timezone: time.UTC.String()}
	for _, d := range w.Days {
		row.Every = append(row.Every, d.String()[:3])
	}
	if w.Location != nil {
		row.Timezone = w.Location.String()
	}
	if until, on := w.ActiveAt(now); on {
		at := results.FormatTime(until)
		row.Active, row.Until = true, &at
	}
	start, end := w.NextAfter(now)
	row.NextStart, row.NextEnd = results.FormatTime(start), results.FormatTime(end)
	return row
}
