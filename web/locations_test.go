package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// TestAPIResultsByLocation: ?location= filters a probe's results by where
// they ran from, given once or more; every envelope names its location
// (default for a single instance's runs); a name that cannot be a
// location is 400.
func TestAPIResultsByLocation(t *testing.T) {
	ctx := context.Background()
	store := emptyStore(t)
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for i, loc := range []string{"eu-west", "us-east", "eu-west", ""} {
		r := results.Result{OperationID: "op-" + string(rune('a'+i)), Probe: "search", Kind: results.ProbeHTTP,
			StartedAt: start.Add(time.Duration(i) * time.Minute), Duration: time.Millisecond, Outcome: results.Pass,
			Location: loc}
		if err := store.RecordRun(ctx, &results.RunRecord{Result: r}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(NewServer(Deps{
		Logger:  slog.New(slog.DiscardHandler),
		Healthy: func(context.Context) error { return nil },
		Metrics: http.NotFoundHandler(),
		Store:   store,
		Probes:  func() []*checks.Probe { return []*checks.Probe{{Name: "search"}} },
	}))
	defer srv.Close()
	get := func(query string) (int, []string) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/api/v1/probes/search/results" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out struct {
			Results []results.Envelope `json:"results"`
		}
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
		}
		var got []string
		for _, e := range out.Results {
			got = append(got, e.OperationID+"@"+e.Location)
		}
		return resp.StatusCode, got
	}
	for _, tt := range []struct {
		query  string
		status int
		want   []string
	}{
		{"", 200, []string{"op-d@default", "op-c@eu-west", "op-b@us-east", "op-a@eu-west"}},
		{"?location=eu-west", 200, []string{"op-c@eu-west", "op-a@eu-west"}},
		{"?location=us-east&location=default", 200, []string{"op-d@default", "op-b@us-east"}},
		{"?location=ap-south", 200, nil},
		{"?location=EU", 400, nil},
	} {
		status, got := get(tt.query)
		if status != tt.status || !slices.Equal(got, tt.want) {
			t.Errorf("GET results%s = %d %v, want %d %v", tt.query, status, got, tt.status, tt.want)
		}
	}
}

// TestHealthzIdle: an instance whose location no probe runs from says so.
func TestHealthzIdle(t *testing.T) {
	f := newFleetFixture(t, true)
	f.mu.Lock()
	f.role = Role{Node: "c", Location: "ap-south", Leading: true, Epoch: 3, Idle: true}
	f.mu.Unlock()
	status, body := f.get(t, "/healthz")
	if want := `{"status":"ok","role":"leader","node":"c","location":"ap-south","epoch":3,"idle":true}`; status != 200 || body != want+"\n" {
		t.Errorf("GET /healthz = %d %s, want 200 %s", status, body, want)
	}
}

// TestStatusPageLocations: a probe of several locations shows each
// location's last outcome and code side by side, a location without a run
// as no data; a probe of one location shows none.
func TestStatusPageLocations(t *testing.T) {
	ctx := context.Background()
	store := emptyStore(t)
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for i, r := range []results.Result{
		{Probe: "search", Location: "eu-west", Outcome: results.Unavailable, Error: &results.Error{Code: results.CodeTimeout, Message: "no answer"}},
		{Probe: "search", Location: "us-east", Outcome: results.Pass},
		{Probe: "search", Location: "eu-west", Outcome: results.Pass},
		{Probe: "search", Location: "eu-west", Outcome: results.Unavailable, Error: &results.Error{Code: results.CodeTimeout, Message: "no answer"}},
		{Probe: "billing", Location: "eu-west", Outcome: results.Pass},
	} {
		r.OperationID, r.Kind, r.Duration = fmt.Sprintf("op-%d", i), results.ProbeHTTP, time.Millisecond
		r.StartedAt = start.Add(time.Duration(i) * time.Minute)
		if err := store.RecordRun(ctx, &results.RunRecord{Result: r}); err != nil {
			t.Fatal(err)
		}
	}
	probes := []*checks.Probe{
		{Name: "search", Locations: []string{"eu-west", "us-east", "ap-south"}},
		{Name: "billing", Locations: []string{"eu-west"}},
	}
	srv := httptest.NewServer(NewServer(Deps{
		Logger:  slog.New(slog.DiscardHandler),
		Healthy: func(context.Context) error { return nil },
		Metrics: http.NotFoundHandler(),
		Store:   store,
		Probes:  func() []*checks.Probe { return probes },
		Now:     func() time.Time { return start.Add(time.Hour) },
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	page := string(body)
	for _, want := range []string{
		`<li data-location="eu-west" data-state="unavailable">`,
		`<li data-location="us-east" data-state="pass">`,
		`<li data-location="ap-south" data-state="none">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the status page has no %s", want)
		}
	}
	if i := strings.Index(page, `data-location="eu-west" data-state="unavailable"`); i < 0 || !strings.Contains(page[i:i+400], "<code>timeout</code>") {
		t.Errorf("eu-west's cell does not show its code")
	}
	if n := strings.Count(page, `<ul class="locations">`); n != 1 {
		t.Errorf("%d lists of locations, want one: billing runs from one location", n)
	}
}
