package sqlite_test

import (
	"context"
	"fmt"
	"os"
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

// TestSchemaDocListsEveryColumn keeps SCHEMA.md and the migrations in step:
// every table has a section, and each section lists exactly its columns.
func TestSchemaDocListsEveryColumn(t *testing.T) {
	doc := readSchemaDoc(t)
	_, path := newStore(t)
	op := operatorDB(t, path, "mode=ro")
	tables := queryMaps(t, op, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if len(tables) < 4 {
		t.Fatalf("tables: %v", tables)
	}
	for _, row := range tables {
		table := row["name"].(string)
		body, ok := section(doc, "`"+table+"`")
		if !ok {
			t.Errorf("SCHEMA.md has no section \"## `%s`\"", table)
			continue
		}
		var documented []string
		for _, m := range docColumn.FindAllStringSubmatch(body, -1) {
			documented = append(documented, m[1])
		}
		var actual []string
		for _, c := range queryMaps(t, op, "SELECT name FROM pragma_table_info(?) ORDER BY cid", table) {
			actual = append(actual, c["name"].(string))
		}
		if !slices.Equal(documented, actual) {
			t.Errorf("SCHEMA.md, table %s:\n documents %v\n schema has %v", table, documented, actual)
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
		d := &results.Drift{Probe: r.Probe, OperationID: r.OperationID, DetectedAt: r.StartedAt,
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
			{"probe": "external_search", "baseline": fpList, "current": fpMap, "outcome": "contract_error",
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
