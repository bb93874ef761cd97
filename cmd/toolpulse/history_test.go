package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// TestHistoryAndStats records two rounds of the seed-000 drill with
// `check`, then reads them back the ways an operator would.
func TestHistoryAndStats(t *testing.T) {
	h := newCLIRun(t)
	if code, out, _ := h.run("check"); code != exitOK {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	h.provider.SetDrifted(true)
	if code, out, _ := h.run("check"); code != exitContractError {
		t.Fatalf("check after drift: exit %d\n%s", code, out)
	}

	code, out, errOut := h.run("history", "--format", "json", "--outcome", "contract_error")
	if code != exitOK {
		t.Fatalf("history: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("history --outcome contract_error: %d rows, want 1\n%s", len(lines), out)
	}
	var row map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
		t.Fatal(err)
	}
	if row["probe"] != "search_strict" || row["code"] != "unsupported_results_container" || row["response_sample"] == nil {
		t.Errorf("history row = %v, want search_strict's contract error with its sample", row)
	}

	code, out, _ = h.run("history", "--format", "csv", "--probe", "search", "--limit", "1")
	records, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != exitOK || err != nil || len(records) != 2 || records[0][0] != "operation_id" || records[1][1] != "search" {
		t.Errorf("history csv: exit %d, err %v, records %v", code, err, records)
	}

	code, out, _ = h.run("history", "--attempts", "--probe", "search_strict")
	if code != exitOK || !strings.Contains(out, "contract_error") || !strings.Contains(out, "attempt 1") {
		t.Errorf("history table with attempts: exit %d\n%s", code, out)
	}

	code, out, _ = h.run("stats", "--format", "json")
	if code != exitOK {
		t.Fatalf("stats: exit %d", code)
	}
	stats := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var s map[string]any
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatal(err)
		}
		stats[s["probe"].(string)] = s
	}
	strict := stats["search_strict"]
	if strict["runs"] != 2.0 || strict["pass"] != 1.0 || strict["contract_error"] != 1.0 || strict["last_outcome"] != "contract_error" {
		t.Errorf("stats for search_strict = %v, want 2 runs: 1 pass, 1 contract_error, last contract_error", strict)
	}
	if code, _, _ := h.run("history", "--since", "yesterday"); code != exitUsage {
		t.Errorf("history --since yesterday: exit %d, want %d", code, exitUsage)
	}
}

// TestReadCommandsRefuseWhatIsNotThere: a misspelt --probe and a missing
// database are the user's mistake, said as such, never an empty answer or
// exit 70 ("toolpulse failed").
func TestReadCommandsRefuseWhatIsNotThere(t *testing.T) {
	h := newCLIRun(t)
	db := filepath.Join(h.dir, "results.db")
	for _, cmd := range []string{"history", "stats"} {
		code, out, errOut := h.run(cmd)
		want := "toolpulse: no database at " + db + ": nothing has been recorded there yet"
		if code != exitNoInput || !strings.HasPrefix(errOut, want) || out != "" {
			t.Errorf("%s without a database: exit %d, stderr %q; want %d and %q", cmd, code, errOut, exitNoInput, want)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("reading created the database (stat err %v)", err)
	}
	if code, _, errOut := h.run("--db", filepath.Join(h.dir, "elsewhere.db"), "stats"); code != exitNoInput || !strings.Contains(errOut, "elsewhere.db") {
		t.Errorf("stats --db missing: exit %d, stderr %q; want %d naming the file", code, errOut, exitNoInput)
	}

	if code, _, errOut := h.run("check", "--probe", "search"); code != exitOK {
		t.Fatalf("check: exit %d\n%s", code, errOut)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"history, close to a probe", []string{"history", "--probe", "serach"}, `toolpulse: unknown probe "serach" (did you mean "search"?)` + "\n"},
		{"history, nothing close", []string{"history", "--probe", "weather"}, `toolpulse: unknown probe "weather"` + "\n"},
		{"history, one of several", []string{"history", "--probe", "search", "--probe", "trackr"}, `toolpulse: unknown probe "trackr" (did you mean "tracker"?)` + "\n"},
		{"check, close to a probe", []string{"check", "--probe", "search_stict"}, `toolpulse: unknown probe "search_stict" (did you mean "search_strict"?)` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := h.run(tt.args...)
			if code != exitUsage || errOut != tt.want || out != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want %d and %q", code, errOut, out, exitUsage, tt.want)
			}
		})
	}
	// A probe removed from the config keeps its history.
	h.env["PROVIDER"] = "http://127.0.0.1:1"
	cfg := strings.Replace(testConfig, "  - name: search\n", "  - name: search_v2\n", 1)
	if err := os.WriteFile(filepath.Join(h.dir, "checks.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := h.run("history", "--probe", "search"); code != exitOK || !strings.Contains(out, "search") {
		t.Errorf("history of a recorded probe no longer configured: exit %d\n%s%s", code, out, errOut)
	}
}

// TestHistoryShowsDrift: a run the daemon recorded as drifted keeps its
// baseline and diff lines in history's json and csv, as in the results
// columns.
func TestHistoryShowsDrift(t *testing.T) {
	h := newCLIRun(t)
	if code, out, _ := h.run("check", "--probe", "search"); code != exitOK {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	store, err := sqlite.Open(context.Background(), filepath.Join(h.dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	r := results.Result{OperationID: "op-drifted", Probe: "search", StartedAt: time.Now().UTC(), Outcome: results.Pass,
		Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"},
		Shape: &results.Shape{Fingerprint: "3a105e99edea2dbb", Canonical: "object{results:object{items:list<empty>}}",
			Baseline: "99ba02a8b482ce41", Drift: []string{"results: list<object(3 keys)> -> object(1 keys)", "next_cursor: removed (null)"}}}
	if err := store.Record(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	store.Close()

	code, out, errOut := h.run("history", "--format", "json", "--probe", "search", "--limit", "1")
	var row map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &row) != nil {
		t.Fatalf("history: exit %d, %q, %q", code, out, errOut)
	}
	if row["shape_baseline"] != "99ba02a8b482ce41" || row["shape_drift"] != "results: list<object(3 keys)> -> object(1 keys)\nnext_cursor: removed (null)" {
		t.Errorf("history json row: %v", row)
	}
	_, out, _ = h.run("history", "--format", "csv", "--probe", "search", "--limit", "1")
	records, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	drift := slices.Index(records[0], "shape_drift")
	if err != nil || len(records) != 2 || drift < 0 || !strings.HasPrefix(records[1][drift], "results: list") {
		t.Errorf("history csv: %v, %v", records, err)
	}
}
