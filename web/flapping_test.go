package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// TestFlappingShown: a flapping probe says so in the API (flapping and
// since when), on the overview and on its page; one that is not says
// flapping false and shows nothing of it.
func TestFlappingShown(t *testing.T) {
	f := newStatusFixture(t)
	at := f.now.Add(-10 * time.Second)
	r := results.Result{OperationID: "op-flap", Probe: "tracker", StartedAt: at, Duration: time.Millisecond, Outcome: results.Pass,
		Attempts: []results.Attempt{{Number: 1, StartedAt: at, Duration: time.Millisecond, HTTPStatus: 200}}, HTTPStatus: 200}
	since := f.now.Add(-3 * time.Minute)
	st := &results.AlertState{Probe: "tracker", Firing: true, Flapping: true, FlappingSince: since,
		VerdictChanges: []time.Time{since.Add(-time.Minute), since}}
	if err := f.store.RecordRun(context.Background(), &results.RunRecord{Result: r, AlertState: st}); err != nil {
		t.Fatal(err)
	}

	resp, body := f.get(t, "/api/v1/probes")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/probes = %d\n%s", resp.StatusCode, body)
	}
	var got struct {
		Probes []struct {
			Name  string     `json:"name"`
			Alert probeAlert `json:"alert"`
		} `json:"probes"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	for _, p := range got.Probes {
		want := p.Name == "tracker"
		if p.Alert.Flapping != want || (p.Alert.FlappingSince != "") != want {
			t.Errorf("%s: flapping %t since %q, want flapping %t", p.Name, p.Alert.Flapping, p.Alert.FlappingSince, want)
		}
		if want && p.Alert.FlappingSince != results.FormatTime(since) {
			t.Errorf("tracker flapping since %q, want %q", p.Alert.FlappingSince, results.FormatTime(since))
		}
	}
	if !strings.Contains(body, `"flapping":false`) {
		t.Errorf("a probe that is not flapping does not say flapping false:\n%s", body)
	}
	for _, path := range []string{"/", "/probes/tracker"} {
		_, page := f.get(t, path)
		if !strings.Contains(page, `<strong class="flapping">flapping</strong> since`) || !strings.Contains(page, "alerts wait until it is stable") {
			t.Errorf("GET %s does not show tracker flapping:\n%s", path, page)
		}
	}
	if _, page := f.get(t, "/probes/search"); strings.Contains(page, `class="flapping"`) {
		t.Errorf("GET /probes/search shows a probe that is not flapping as flapping")
	}

	health, err := toolHealth{store: f.store, probes: func() []*checks.Probe {
		return []*checks.Probe{{Name: "tracker"}, {Name: "search"}}
	}}.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(health) != 2 || !health[0].Flapping || health[1].Flapping {
		t.Errorf("list_tool_health %+v, want tracker flapping and search not", health)
	}
}
