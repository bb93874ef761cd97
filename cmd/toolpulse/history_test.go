package main

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseInstant(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"", time.Time{}, false},
		{"24h", now.Add(-24 * time.Hour), false},
		{"90m", now.Add(-90 * time.Minute), false},
		{"2026-10-26T13:07:00Z", time.Date(2026, 10, 26, 13, 7, 0, 0, time.UTC), false},
		{"2026-10-26", time.Date(2026, 10, 26, 0, 0, 0, 0, time.UTC), false},
		{"-1h", time.Time{}, true},
		{"yesterday", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := parseInstant(tt.in, now)
		if (err != nil) != tt.wantErr || !got.Equal(tt.want) {
			t.Errorf("parseInstant(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

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
