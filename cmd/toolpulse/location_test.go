package main

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestStatsByLocation: --location sums up the runs from those locations
// alone, last outcome included; without it, every location's runs count.
func TestStatsByLocation(t *testing.T) {
	h := newCLIRun(t)
	if code, out, _ := h.run("check", "--probe", "search"); code != exitOK {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	store, err := sqlite.Open(context.Background(), filepath.Join(h.dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []struct {
		loc     string
		outcome results.Outcome
	}{{"eu-west", results.ContractError}, {"us-east", results.Pass}, {"us-east", results.Pass}} {
		r := results.Result{OperationID: fmt.Sprint("op-", i), Probe: "search", StartedAt: time.Now().UTC().Add(-time.Duration(3-i) * time.Second),
			Outcome: r.outcome, Location: r.loc, Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"}}
		if r.Outcome == results.ContractError {
			r.Error = &results.Error{Code: results.CodeInvalidJSON, Message: "not JSON"}
		}
		if err := store.Record(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()

	stats := func(args ...string) (runs int, last string) {
		t.Helper()
		code, out, errOut := h.run(append([]string{"stats", "--format", "json"}, args...)...)
		var row struct {
			Probe       string `json:"probe"`
			Runs        int    `json:"runs"`
			LastOutcome string `json:"last_outcome"`
		}
		if err := json.Unmarshal([]byte(out), &row); code != exitOK || err != nil || row.Probe != "search" {
			t.Fatalf("stats %v: exit %d, %v\n%s%s", args, code, err, out, errOut)
		}
		return row.Runs, row.LastOutcome
	}
	if runs, last := stats("--location", "eu-west"); runs != 1 || last != "contract_error" {
		t.Errorf("stats --location eu-west: %d runs, last %s; want 1, contract_error", runs, last)
	}
	if runs, last := stats("--location", "us-east", "--location", "eu-west"); runs != 3 || last != "pass" {
		t.Errorf("stats of us-east and eu-west: %d runs, last %s; want 3, pass", runs, last)
	}
	all, _ := stats()
	if def, _ := stats("--location", "default"); def < 1 || all != def+3 {
		t.Errorf("stats: %d runs, %d of them from default; want those and 3 more", all, def)
	}
	if code, _, errOut := h.run("stats", "--location", "EU"); code != exitUsage || !strings.Contains(errOut, "--location") {
		t.Errorf("stats --location EU: exit %d %q, want a usage error", code, errOut)
	}
}
