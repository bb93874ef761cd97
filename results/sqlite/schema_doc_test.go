package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

func readSchemaDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns the text under the level-2 heading title, up to the next
// level-2 heading.
func section(doc, title string) (string, bool) {
	_, after, ok := strings.Cut(doc, "\n## "+title+"\n")
	if !ok {
		return "", false
	}
	body, _, _ := strings.Cut(after, "\n## ")
	return body, true
}

var docColumn = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|")

// everyColumnOf is how SCHEMA.md says that a view has exactly the columns
// of a table instead of listing them again.
var everyColumnOf = regexp.MustCompile("has every column of `([a-z_]+)`")

// TestSchemaDocListsEveryColumn keeps SCHEMA.md and the migrations in step:
// every table and view has a section, and each section lists exactly its
// columns, or says it has every column of a table, and has.
func TestSchemaDocListsEveryColumn(t *testing.T) {
	doc := readSchemaDoc(t)
	_, path := newStore(t)
	op := operatorDB(t, path, "mode=ro")
	objects := queryMaps(t, op, `SELECT type, name FROM sqlite_master
		WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	var views []string
	for _, row := range objects {
		if row["type"] == "view" {
			views = append(views, row["name"].(string))
		}
	}
	if len(objects) < 4 || !slices.Equal(views, []string{"latest_results", "probe_summary_24h"}) {
		t.Fatalf("tables and views: %v", objects)
	}
	columns := func(name string) []string {
		var out []string
		for _, c := range queryMaps(t, op, "SELECT name FROM pragma_table_info(?) ORDER BY cid", name) {
			out = append(out, c["name"].(string))
		}
		return out
	}
	for _, row := range objects {
		kind, name := row["type"].(string), row["name"].(string)
		body, ok := section(doc, "`"+name+"`")
		if !ok {
			t.Errorf("SCHEMA.md has no section \"## `%s`\"", name)
			continue
		}
		var documented []string
		for _, m := range docColumn.FindAllStringSubmatch(body, -1) {
			documented = append(documented, m[1])
		}
		if m := everyColumnOf.FindStringSubmatch(body); m != nil && documented == nil {
			documented = columns(m[1])
		}
		if actual := columns(name); len(actual) == 0 || !slices.Equal(documented, actual) {
			t.Errorf("SCHEMA.md, %s %s:\n documents %v\n schema has %v", kind, name, documented, actual)
		}
	}
}

var sqlBlock = regexp.MustCompile("(?s)```sql\n(.*?)```")

// TestSchemaDocExampleQueries runs every query of SCHEMA.md's "Example
// queries" against a database holding a day of history.
func TestSchemaDocExampleQueries(t *testing.T) {
	doc := readSchemaDoc(t)
	body, ok := section(doc, "Example queries")
	if !ok {
		t.Fatal(`SCHEMA.md has no "## Example queries" section`)
	}
	var queries []string
	for _, m := range sqlBlock.FindAllStringSubmatch(body, -1) {
		queries = append(queries, m[1])
	}

	ctx := context.Background()
	s, path := newStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	at := func(r results.Result, ago time.Duration) results.Result {
		r.StartedAt = now.Add(-ago)
		for i := range r.Attempts {
			r.Attempts[i].StartedAt = r.StartedAt.Add(time.Duration(i) * time.Second)
		}
		return r
	}
	firstTry := passAfterRetry("es-first-try")
	firstTry.Attempts = firstTry.Attempts[1:]
	firstTry.Attempts[0].Number = 1
	old := contractError("es-old")
	old.Error = &results.Error{Code: results.CodeRuleError, Message: "score is string"}
	weatherOld := unavailable("w-old")
	weatherOld.Outcome = results.ContractError
	weatherOld.Error = &results.Error{Code: results.CodeInvalidJSON, Message: "not JSON"}
	weatherOld.HTTPStatus = 200

	// drifted gives r a drift from the list shape to its own, with a
	// shape_drift alert; alert adds an alert of kind in state.
	drifted := func(r results.Result) *results.RunRecord {
		d := &results.Drift{Kind: results.DriftResponse, Probe: r.Probe, OperationID: r.OperationID, DetectedAt: r.StartedAt,
			Baseline: fpList, Current: r.Shape.Fingerprint, Diff: driftDiff}
		a := results.NewAlert(results.AlertDrift, &r, r.StartedAt)
		return &results.RunRecord{Result: r, Drift: d, Alerts: []results.Alert{a}}
	}
	alert := func(rec *results.RunRecord, kind results.AlertKind, state results.DeliveryState) *results.RunRecord {
		a := results.NewAlert(kind, &rec.Result, rec.Result.StartedAt.Add(time.Millisecond))
		a.State = state
		rec.Alerts = append(rec.Alerts, a)
		return rec
	}
	run := func(r results.Result) *results.RunRecord { return &results.RunRecord{Result: r} }

	var toDeliver *results.RunRecord
	for _, rec := range []*results.RunRecord{
		drifted(at(old, 26*time.Hour)),
		run(at(weatherOld, 30*time.Hour)),
		run(at(firstTry, 3*time.Hour)),
		alert(drifted(at(contractError("es-2h"), 2*time.Hour)), results.AlertFiring, results.DeliveryPending),
		alert(run(at(contractError("es-1h"), time.Hour)), results.AlertReminder, results.DeliveryPending),
		alert(run(at(passAfterRetry("es-retried"), 30*time.Minute)), results.AlertResolved, results.DeliveryPending),
		alert(run(at(unavailable("w-10m"), 10*time.Minute)), results.AlertFiring, results.DeliverySkipped),
	} {
		if err := s.RecordRun(ctx, rec); err != nil {
			t.Fatal(err)
		}
		switch rec.Result.OperationID {
		case "es-1h":
			if err := s.MarkAlertFailed(ctx, rec.Alerts[0].ID, 5, "slack: channel_not_found"); err != nil {
				t.Fatal(err)
			}
		case "es-retried":
			toDeliver = rec
		}
	}
	if err := s.MarkAlertDelivered(ctx, toDeliver.Alerts[0].ID, now); err != nil {
		t.Fatal(err)
	}

	// Per query, the rows expected, in order, on the columns named.
	want := [][]map[string]any{
		{
			{"probe": "external_search", "outcome": "pass", "code": nil, "attempts": int64(2)},
			{"probe": "weather", "outcome": "unavailable", "code": "timeout", "attempts": int64(3)},
		},
		{
			{"probe": "weather", "runs": int64(1), "pass_rate": 0.0, "unavailable_rate": 1.0,
				"passed_after_retries": int64(0), "avg_duration_ms": 15600.0, "max_duration_ms": int64(15600)},
			{"probe": "external_search", "runs": int64(4), "pass_rate": 0.5, "contract_error_rate": 0.5,
				"unavailable_rate": 0.0, "passed_after_retries": int64(1), "avg_duration_ms": 131.0,
				"max_duration_ms": int64(221)},
		},
		{
			{"probe": "external_search", "code": "unsupported_results_container", "runs": int64(2)},
		},
		{
			{"probe": "external_search", "attempts": int64(2), "tries": "server_error -> ok"},
		},
		{
			{"outcome": "contract_error", "code": "unsupported_results_container", "http_status": int64(200),
				"response_sample": `{"results":{"items":[]}}`},
		},
		{
			{"probe": "external_search", "kind": "response", "baseline": fpList, "current": fpMap, "outcome": "contract_error",
				"diff": "next_cursor: removed (null)\nresults: list<object(3 keys)> -> object(1 keys)"},
		},
		{
			{"probe": "external_search", "kind": "shape_drift", "state": "pending", "delivery_tries": int64(0), "last_error": nil},
			{"probe": "external_search", "kind": "shape_drift", "state": "pending", "delivery_tries": int64(0), "last_error": nil},
			{"probe": "external_search", "kind": "firing", "state": "pending", "delivery_tries": int64(0), "last_error": nil},
			{"probe": "external_search", "kind": "reminder", "state": "failed", "delivery_tries": int64(5),
				"last_error": "slack: channel_not_found"},
		},
	}
	if len(queries) != len(want) {
		t.Fatalf("SCHEMA.md has %d example queries, this test expects %d", len(queries), len(want))
	}
	op := operatorDB(t, path, "mode=ro")
	for i, q := range queries {
		t.Run(fmt.Sprint(i+1), func(t *testing.T) {
			rows := queryMaps(t, op, q)
			got := make([]map[string]any, len(rows))
			for j, row := range rows {
				got[j] = map[string]any{}
				for col := range want[i][min(j, len(want[i])-1)] {
					got[j][col] = row[col]
				}
			}
			if !reflect.DeepEqual(got, want[i]) {
				t.Errorf("%s\n got  %v\n want %v", q, got, want[i])
			}
		})
	}
}

// TestExampleQueriesRunInTheShell runs every example query of SCHEMA.md,
// and reads both views, with the sqlite3 shell operators use, which may be
// older than the SQLite built into toolpulse. CI installs the shell.
func TestExampleQueriesRunInTheShell(t *testing.T) {
	shell, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("sqlite3 shell not installed")
	}
	body, ok := section(readSchemaDoc(t), "Example queries")
	if !ok {
		t.Fatal(`SCHEMA.md has no "## Example queries" section`)
	}
	s, path := newStore(t)
	record(t, s, passAfterRetry("op-1"), contractError("op-2"), unavailable("op-3"))
	queries := []string{"SELECT * FROM latest_results;", "SELECT * FROM probe_summary_24h;"}
	for _, m := range sqlBlock.FindAllStringSubmatch(body, -1) {
		queries = append(queries, m[1])
	}
	for _, q := range queries {
		out, err := exec.Command(shell, "-readonly", "-bail", path, q).CombinedOutput()
		if err != nil || strings.Contains(string(out), "Error") {
			t.Errorf("sqlite3 shell: %v\n%s\n%s", err, q, out)
		}
	}
}
