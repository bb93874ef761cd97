package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// TestHistoryByLocation: --location keeps the runs from those locations;
// the table shows a LOCATION column only when the runs listed come from
// more than one, and JSON and CSV always name the location.
func TestHistoryByLocation(t *testing.T) {
	h := newCLIRun(t)
	if code, out, _ := h.run("check", "--probe", "search"); code != exitOK {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	store, err := sqlite.Open(context.Background(), filepath.Join(h.dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	for i, loc := range []string{"eu-west", "us-east"} {
		r := results.Result{OperationID: "op-" + loc, Probe: "search", StartedAt: time.Now().UTC().Add(time.Duration(i) * time.Second),
			Outcome: results.Pass, Location: loc, Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"}}
		if err := store.Record(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()

	code, out, _ := h.run("history", "--probe", "search")
	if code != exitOK || !strings.Contains(out, "LOCATION") || !strings.Contains(out, "eu-west") || !strings.Contains(out, "default") {
		t.Errorf("history of three locations: exit %d, want a LOCATION column\n%s", code, out)
	}
	code, out, _ = h.run("history", "--probe", "search", "--location", "eu-west")
	if code != exitOK || strings.Contains(out, "LOCATION") || strings.Count(strings.TrimSpace(out), "\n") != 1 {
		t.Errorf("history --location eu-west: exit %d, want one run and no LOCATION column\n%s", code, out)
	}
	code, out, _ = h.run("history", "--format", "json", "--location", "us-east", "--location", "default")
	locations := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		locations[row["location"].(string)]++
	}
	if code != exitOK || len(locations) != 2 || locations["us-east"] != 1 || locations["default"] < 1 {
		t.Errorf("history --format json of us-east and default: exit %d, locations %v", code, locations)
	}
	if code, _, errOut := h.run("history", "--location", "EU"); code != exitUsage || !strings.Contains(errOut, "--location") {
		t.Errorf("history --location EU: exit %d %q, want a usage error", code, errOut)
	}
}
