package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// maintenanceFixture is the status fixture's store served with two
// maintenance windows at its instant, Monday 2026-11-30 12:00 UTC: one on
// (search's team, from 12:30 in Berlin, 11:30 UTC, for an hour) and one
// off (weather, Sundays at 02:00 UTC).
func maintenanceFixture(t *testing.T) *statusFixture {
	t.Helper()
	f := newStatusFixture(t)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	windows := []results.MaintenanceWindow{
		{Name: "maintenance[0]", Matchers: results.Matchers{Labels: map[string]string{"team": "search"}},
			Days: []time.Weekday{time.Monday}, Hour: 12, Minute: 30, Duration: time.Hour, Location: berlin},
		{Name: "maintenance[1]", Matchers: results.Matchers{Probes: []string{"weather"}},
			Days: []time.Weekday{time.Sunday}, Hour: 2, Duration: 2 * time.Hour, Location: time.UTC},
	}
	probes := []*checks.Probe{
		{Name: "weather", Interval: time.Minute},
		{Name: "search", Interval: 30 * time.Second, Labels: map[string]string{"team": "search", "tier": "1"}},
	}
	srv := httptest.NewServer(NewServer(Deps{
		Logger: slog.New(slog.DiscardHandler), Healthy: func(context.Context) error { return nil }, Metrics: http.NotFoundHandler(),
		Store: f.store, Probes: func() []*checks.Probe { return probes }, Now: func() time.Time { return f.now },
		Maintenance: func() []results.MaintenanceWindow { return windows },
	}))
	t.Cleanup(srv.Close)
	f.srv = srv
	return f
}

// probeRow is the overview's table row of probe.
func probeRow(t *testing.T, body, probe string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `<tr class="probe" data-probe="`+probe+`"`)
	if !ok {
		t.Fatalf("no row for %s", probe)
	}
	row, _, _ := strings.Cut(rest, "</tr>")
	return row
}

// TestStatusMaintenance: every page lists the windows on now; the
// overview lists each window with its next start; the row and the page of
// a probe in maintenance say until when, in the window's zone.
func TestStatusMaintenance(t *testing.T) {
	f := maintenanceFixture(t)
	_, body := f.get(t, "/")
	onNow := `<li data-window="maintenance[0]">maintenance[0]: <code>team=search</code>, Mon 12:30 Europe/Berlin for 1h: on until <time datetime="2026-11-30T12:30:00.000Z">Mon 13:30 CET</time></li>`
	for _, want := range []string{
		`<section class="silences maintenance" aria-label="Maintenance windows on now">`,
		onNow,
		`<li data-window="maintenance[0]">maintenance[0]: <code>team=search</code>, Mon 12:30 Europe/Berlin for 1h: <strong>on</strong> until <time datetime="2026-11-30T12:30:00.000Z">Mon 13:30 CET</time>; next from <time datetime="2026-12-07T11:30:00.000Z">Mon 12:30 CET</time></li>`,
		`<li data-window="maintenance[1]">maintenance[1]: <code>probe=weather</code>, Sun 02:00 UTC for 2h: next from <time datetime="2026-12-06T02:00:00.000Z">Sun 02:00 UTC</time></li>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	if strings.Count(body, `data-window="maintenance[1]"`) != 1 {
		t.Errorf("the overview lists maintenance[1], which is off, among the windows on now")
	}
	inMaintenance := `<div class="caption maintenance">in maintenance until <time datetime="2026-11-30T12:30:00.000Z">Mon 13:30 CET</time></div>`
	if row := probeRow(t, body, "search"); !strings.Contains(row, inMaintenance) {
		t.Errorf("search's row lacks %q:\n%s", inMaintenance, row)
	}
	if row := probeRow(t, body, "weather"); strings.Contains(row, "in maintenance") {
		t.Errorf("weather's row says it is in maintenance:\n%s", row)
	}
	_, page := f.get(t, "/probes/search")
	if !strings.Contains(page, inMaintenance) || !strings.Contains(page, onNow) {
		t.Errorf("search's page lacks %q or the window on now", inMaintenance)
	}
	if _, page := f.get(t, "/probes/weather"); strings.Contains(page, "in maintenance until") {
		t.Errorf("weather's page says it is in maintenance")
	}
}

// TestStatusWithoutMaintenance: without windows, no page mentions them.
func TestStatusWithoutMaintenance(t *testing.T) {
	f := newStatusFixture(t)
	for _, path := range []string{"/", "/probes/search"} {
		if _, body := f.get(t, path); strings.Contains(body, "maintenance") {
			t.Errorf("%s mentions maintenance without a window", path)
		}
	}
}

func TestAPIMaintenance(t *testing.T) {
	f := maintenanceFixture(t)
	resp, body := f.get(t, "/api/v1/maintenance")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/maintenance = %d\n%s", resp.StatusCode, body)
	}
	var got, want any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"maintenance":[
		{"name":"maintenance[0]","matchers":{"labels":{"team":"search"}},"every":["Mon"],"start":"12:30","duration":"1h0m0s","timezone":"Europe/Berlin",
		 "active":true,"until":"2026-11-30T12:30:00.000Z","next_start":"2026-12-07T11:30:00.000Z","next_end":"2026-12-07T12:30:00.000Z"},
		{"name":"maintenance[1]","matchers":{"probes":["weather"]},"every":["Sun"],"start":"02:00","duration":"2h0m0s","timezone":"UTC",
		 "active":false,"until":null,"next_start":"2026-12-06T02:00:00.000Z","next_end":"2026-12-06T04:00:00.000Z"}]}`
	if err := json.Unmarshal([]byte(wantJSON), &want); err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	wantOut, _ := json.Marshal(want)
	if string(gotJSON) != string(wantOut) {
		t.Errorf("GET /api/v1/maintenance:\n%s\nwant\n%s", gotJSON, wantOut)
	}
	if resp, _ := f.get(t, "/api/v1/maintenance?all=true"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("?all=true: %d, want 400: the route takes no parameters", resp.StatusCode)
	}
}
