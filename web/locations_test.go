package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
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
