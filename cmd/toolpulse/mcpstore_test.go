package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// recordMCPRun stores a run of probe "search" as an MCP probe records it:
// two tries, one row per exchange, the first try failed on its tools/call,
// and a definition drift of its tool's description.
func recordMCPRun(t *testing.T, h *cliRun) {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(h.dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	at := time.Now().UTC()
	r := results.Result{OperationID: "op-mcp", Probe: "search", StartedAt: at, Outcome: results.Pass, HTTPStatus: 200,
		Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"},
		Tool:     &results.ToolDefinition{Fingerprint: "7d793037a0760186", Canonical: `{"description":"Search it all."}`}}
	for try := 1; try <= 2; try++ {
		for _, m := range []string{"initialize", "notifications/initialized", "tools/list", "tools/call", "DELETE session"} {
			a := results.Attempt{Number: len(r.Attempts) + 1, Try: try, Method: m, StartedAt: at, Duration: time.Millisecond, HTTPStatus: 200}
			if try == 1 && m == "tools/call" {
				a.HTTPStatus, a.Code, a.Message = 503, results.CodeServerError, "tools/call answered HTTP 503"
			}
			r.Attempts = append(r.Attempts, a)
		}
	}
	d := &results.Drift{Kind: results.DriftDefinition, Probe: "search", OperationID: "op-mcp", DetectedAt: at,
		Baseline: "5d41402abc4b2a76", Current: "7d793037a0760186", Diff: []string{"description: changed"},
		Before: "Search the docs.", After: "Search it all."}
	if err := store.RecordRun(context.Background(), &results.RunRecord{Result: r, DefinitionDrift: d}); err != nil {
		t.Fatal(err)
	}
}

// recordFailedMCPRun stores an MCP run of "search" that failed in its one
// try, on its tools/call.
func recordFailedMCPRun(t *testing.T, h *cliRun) {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(h.dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	at := time.Now().UTC()
	r := results.Result{OperationID: "op-mcp-failed", Probe: "search", StartedAt: at, Outcome: results.ContractError,
		Error:    &results.Error{Code: results.CodeToolError, Message: "the index is rebuilding"},
		Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"}, HTTPStatus: 200}
	for _, m := range []string{"initialize", "notifications/initialized", "tools/list", "tools/call", "DELETE session"} {
		a := results.Attempt{Number: len(r.Attempts) + 1, Try: 1, Method: m, StartedAt: at, Duration: time.Millisecond, HTTPStatus: 200}
		if m == "tools/call" {
			a.Code, a.Message = results.CodeToolError, "the index is rebuilding"
		}
		r.Attempts = append(r.Attempts, a)
	}
	if err := store.Record(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryShowsMCPExchanges: `history --attempts` lists an MCP run's
// exchanges with their try and method, and counts its tries.
func TestHistoryShowsMCPExchanges(t *testing.T) {
	h := newCLIRun(t)
	if code, out, _ := h.run("check", "--probe", "search"); code != exitOK {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	recordMCPRun(t, h)

	code, out, errOut := h.run("history", "--format", "json", "--attempts", "--probe", "search", "--limit", "1")
	var row struct {
		Attempts        int     `json:"attempts"`
		ToolFingerprint *string `json:"tool_fingerprint"`
		AttemptList     []struct {
			Number int     `json:"number"`
			Try    int     `json:"try"`
			Method *string `json:"method"`
			Code   *string `json:"code"`
		} `json:"attempt_list"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &row) != nil {
		t.Fatalf("history: exit %d, %q, %q", code, out, errOut)
	}
	if row.Attempts != 2 || len(row.AttemptList) != 10 || row.ToolFingerprint == nil || *row.ToolFingerprint != "7d793037a0760186" {
		t.Fatalf("history row: %d tries, %d rows, tool %v; want 2 tries in 10 rows and the tool's fingerprint", row.Attempts, len(row.AttemptList), row.ToolFingerprint)
	}
	call := row.AttemptList[3]
	if call.Number != 4 || call.Try != 1 || call.Method == nil || *call.Method != "tools/call" || call.Code == nil || *call.Code != "server_error" {
		t.Errorf("row 4 = %+v, want try 1's tools/call with its server_error", call)
	}
	if last := row.AttemptList[9]; last.Try != 2 || last.Method == nil || *last.Method != "DELETE session" {
		t.Errorf("row 10 = %+v, want try 2's DELETE session", last)
	}

	_, out, _ = h.run("history", "--attempts", "--probe", "search", "--limit", "1")
	for _, want := range []string{"try 1 tools/call", "server_error", "try 2 DELETE session"} {
		if !strings.Contains(out, want) {
			t.Errorf("history table lacks %q:\n%s", want, out)
		}
	}
	// An HTTP probe's attempts read as before.
	_, out, _ = h.run("history", "--attempts", "--probe", "search", "--limit", "2")
	if !strings.Contains(out, "attempt 1") {
		t.Errorf("history table of the HTTP run lacks its attempt:\n%s", out)
	}
}

// TestAPIAndPageShowDefinitionDrift: the drift API says each drift's kind,
// with the description change of a definition drift, and the probe page
// shows the definition drift and the exchanges of the last failure.
func TestAPIAndPageShowDefinitionDrift(t *testing.T) {
	h := newCLIRun(t)
	h.run("check", "--probe", "search")
	recordMCPRun(t, h)
	recordFailedMCPRun(t, h)
	srv, _ := storedServer(t, h)
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
		}
		return string(body)
	}
	var drifts struct {
		Drifts []struct {
			Kind              results.DriftKind `json:"kind"`
			DescriptionBefore *string           `json:"description_before"`
			DescriptionAfter  *string           `json:"description_after"`
		} `json:"drifts"`
	}
	if err := json.Unmarshal([]byte(get("/api/v1/drifts?probe=search")), &drifts); err != nil {
		t.Fatal(err)
	}
	if len(drifts.Drifts) != 1 {
		t.Fatalf("drifts: %+v, want the definition drift", drifts.Drifts)
	}
	d := drifts.Drifts[0]
	if d.Kind != results.DriftDefinition || d.DescriptionBefore == nil || *d.DescriptionBefore != "Search the docs." ||
		d.DescriptionAfter == nil || *d.DescriptionAfter != "Search it all." {
		t.Errorf("drift = %+v, want kind definition with the old and new description", d)
	}

	page := get("/probes/search")
	for _, want := range []string{"tool definition <code>5d41402abc4b2a76</code>", "description: changed", "Search it all.",
		// The last failure is the MCP run's first try, shown by exchange.
		`<th scope="col">Method</th>`, "<td><code>tools/call</code></td>", "<td><code>DELETE session</code></td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("probe page lacks %q", want)
		}
	}
}
