package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// TestPruneDeletesOnlyOlder prunes at t0 a database holding rows on both
// sides of it and checks, table by table, what is left.
func TestPruneDeletesOnlyOlder(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	cutoff := t0
	h := func(hours float64) time.Time { return cutoff.Add(time.Duration(hours * float64(time.Hour))) }
	const (
		fpX = "1111111111111111" // seen only by pruned runs, long ago
		fpZ = "3333333333333333" // seen only by pruned runs, within the last 26 h of buckets
		fpW = "2222222222222222" // seen only by a pruned run, but the baseline of a kept drift
	)
	shaped := func(r results.Result, fp string) results.Result {
		r.Shape = &results.Shape{Fingerprint: fp, Canonical: "shape " + fp}
		return r
	}
	withDrift := func(r results.Result, baseline string, state results.DeliveryState) *results.RunRecord {
		d := &results.Drift{Kind: results.DriftResponse, Probe: r.Probe, OperationID: r.OperationID, DetectedAt: r.StartedAt,
			Baseline: baseline, Current: r.Shape.Fingerprint, Diff: driftDiff}
		a := results.NewAlert(results.AlertDrift, &r, r.StartedAt)
		a.Drift, a.State = d, state
		return &results.RunRecord{Result: r, Drift: d, Alerts: []results.Alert{a}}
	}
	withAlerts := func(r results.Result, states ...results.DeliveryState) *results.RunRecord {
		rec := &results.RunRecord{Result: r}
		for _, st := range states {
			a := results.NewAlert(results.AlertFiring, &r, r.StartedAt)
			a.State = st
			rec.Alerts = append(rec.Alerts, a)
		}
		return rec
	}
	es := func(id string, at time.Time) results.Result {
		return runAt(id, "external_search", at, results.Pass, "", 10, 2)
	}
	fail := func(id string, at time.Time) results.Result {
		return runAt(id, "weather", at, results.ContractError, results.CodeInvalidJSON, 10, 1)
	}

	for _, rec := range []*results.RunRecord{
		{Result: shaped(es("old-x", h(-30)), fpX)},
		{Result: shaped(es("old-w", h(-40)), fpW)},
		{Result: shaped(es("old-z", h(-25)), fpZ)},
		{Result: es("old-1ms", cutoff.Add(-time.Millisecond))},
		withDrift(fail("drift-delivered", h(-2)), fpList, results.DeliveryPending),
		withDrift(fail("drift-pending", h(-3)), fpW, results.DeliveryPending),
		withAlerts(fail("alerts", h(-4)), results.DeliverySkipped, results.DeliveryPending,
			results.DeliveryPending, results.DeliveryPending),
		{Result: es("at-cutoff", cutoff)},
		withDrift(fail("new", h(1)), fpList, results.DeliveryPending),
	} {
		recordRun(t, s, rec)
		switch rec.Result.OperationID {
		case "drift-delivered", "new":
			if err := s.MarkAlertDelivered(ctx, rec.Alerts[0].ID, rec.Result.StartedAt); err != nil {
				t.Fatal(err)
			}
		case "alerts": // skipped, failed, delivered, pending
			if err := s.MarkAlertFailed(ctx, rec.Alerts[1].ID, 3, "gone"); err != nil {
				t.Fatal(err)
			}
			if err := s.MarkAlertDelivered(ctx, rec.Alerts[2].ID, cutoff); err != nil {
				t.Fatal(err)
			}
		}
	}

	deleted, err := s.Prune(ctx, cutoff, 2)
	if err != nil {
		t.Fatal(err)
	}
	if deleted != 7 {
		t.Errorf("Prune deleted %d results, want 7", deleted)
	}
	op := operatorDB(t, path, "mode=ro")
	column := func(query string) []string {
		var out []string
		for _, row := range queryMaps(t, op, query) {
			out = append(out, fmt.Sprint(row["v"]))
		}
		return out
	}
	for _, tt := range []struct {
		what, query string
		want        []string
	}{
		{"results", `SELECT operation_id AS v FROM results ORDER BY id`, []string{"at-cutoff", "new"}},
		{"attempts", `SELECT operation_id || ' ' || number AS v FROM attempts ORDER BY operation_id, number`,
			[]string{"at-cutoff 1", "at-cutoff 2", "new 1"}},
		{"drifts", `SELECT operation_id AS v FROM drifts ORDER BY id`, []string{"drift-pending", "new"}},
		{"alerts", `SELECT operation_id || ' ' || kind || ' ' || state AS v FROM alerts ORDER BY id`, []string{
			"drift-pending shape_drift pending", "alerts firing pending", "new shape_drift delivered"}},
		{"alert links", `SELECT a.operation_id || ' ' || d.operation_id AS v FROM alerts a JOIN drifts d ON d.id = a.drift_id ORDER BY a.id`,
			[]string{"drift-pending drift-pending", "new new"}},
		// The newest bucket is 2026-10-26T14 (run "new"): from 26 hours
		// before it, 2026-10-25T12, on, whether their runs were pruned
		// or not.
		{"shape_counts", `SELECT hour || ' ' || fingerprint AS v FROM shape_counts ORDER BY hour, fingerprint`, []string{
			"2026-10-25T12 " + fpZ, "2026-10-26T09 " + fpMap, "2026-10-26T10 " + fpMap, "2026-10-26T11 " + fpMap,
			"2026-10-26T13 " + fpList, "2026-10-26T14 " + fpMap}},
		{"shapes", `SELECT fingerprint AS v FROM shapes ORDER BY fingerprint`, []string{fpMap, fpW, fpZ, fpList}},
	} {
		if got := column(tt.query); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s after Prune:\n got  %q\n want %q", tt.what, got, tt.want)
		}
	}

	// The pending drift alert is still delivered whole.
	due, err := s.DueAlerts(ctx, h(2), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 2 || due[1].Drift == nil || due[1].Drift.Baseline != fpW || len(due[1].Drift.Diff) != len(driftDiff) {
		t.Errorf("due alerts after Prune: %+v", due)
	}
	// Pruning again finds nothing.
	if n, err := s.Prune(ctx, cutoff, 2); err != nil || n != 0 {
		t.Errorf("second Prune: %d, %v, want 0, nil", n, err)
	}
}

func TestPruneRefusesZeroCutoff(t *testing.T) {
	s, _ := newStore(t)
	record(t, s, passAfterRetry("op-1"))
	if n, err := s.Prune(context.Background(), time.Time{}, 0); err == nil || n != 0 {
		t.Errorf("Prune(zero time): got %d, %v, want an error", n, err)
	}
}

// TestPruneHonoursContext: a prune stopped by its context keeps what it
// already deleted and says why it stopped.
func TestPruneHonoursContext(t *testing.T) {
	s, path := newStore(t)
	for i := range 20 {
		record(t, s, runAt(fmt.Sprint("op-", i), "p", t0.Add(time.Duration(i)*time.Second), results.Pass, "", 1, 1))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n, err := s.Prune(ctx, t0.Add(time.Hour), 5)
	if !errors.Is(err, context.Canceled) || n != 0 {
		t.Errorf("Prune with a cancelled context: got %d, %v, want 0, context.Canceled", n, err)
	}
	if got := count(t, operatorDB(t, path, "mode=ro"), `SELECT count(*) FROM results`); got != 20 {
		t.Errorf("results after a cancelled prune: %d, want 20", got)
	}
}

func TestPing(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, t.TempDir()+"/toolpulse.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping of an open store: %v", err)
	}
	// Ping writes nothing: the store is still usable and unchanged.
	if err := s.Record(ctx, passAfterRetry("op-1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Ping of a closed store: got %v, want an error saying it is closed", err)
	}
}

// TestPruneToolDefinitions records MCP runs whose tool definition changes
// with every session, as a server that embeds a build id in its
// description does, and prunes them: what is left is the definitions kept
// results name, and each probe's latest, whatever the batch size.
func TestPruneToolDefinitions(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	cutoff := t0
	def := func(n int) results.ToolDefinition {
		return results.ToolDefinition{Fingerprint: fmt.Sprintf("%016x", n),
			Canonical: fmt.Sprintf(`{"description":"Search the docs (build %d).","inputSchema":{"type":"object"}}`, n)}
	}
	listed := func(id, probe string, at time.Time, d results.ToolDefinition) results.Result {
		r := runAt(id, probe, at, results.Pass, "", 10, 1)
		r.Kind = results.ProbeMCP
		r.MCP = &results.MCPTarget{Tool: "search", Server: "http://127.0.0.1:3902/mcp"}
		r.Tool = &d
		return r
	}
	// docs lists a new definition with every run, 40 of them before the
	// cutoff; the first also under other's name. Then one kept run lists
	// definition 3 again, recorded without its text (as when the store
	// could not tell the previous definition: last_seen_at stays as it
	// was), and the latest run a new one.
	record := func(r results.Result) { recordRun(t, s, &results.RunRecord{Result: r}) }
	record(listed("other-shared", "other", cutoff.Add(-21*time.Hour), def(3)))
	for i := range 40 {
		record(listed(fmt.Sprintf("docs-%d", i), "docs", cutoff.Add(-30*time.Hour+time.Duration(i)*time.Minute), def(i)))
	}
	for i := range 10 {
		record(listed(fmt.Sprintf("other-%d", i), "other", cutoff.Add(-20*time.Hour+time.Duration(i)*time.Minute), def(100+i)))
	}
	record(listed("docs-kept", "docs", cutoff.Add(time.Hour), results.ToolDefinition{Fingerprint: def(3).Fingerprint}))
	record(listed("docs-latest", "docs", cutoff.Add(2*time.Hour), def(40)))

	if _, err := s.Prune(ctx, cutoff, 7); err != nil {
		t.Fatal(err)
	}
	op := operatorDB(t, path, "mode=ro")
	var got []string
	for _, row := range queryMaps(t, op, `SELECT probe || ' ' || fingerprint AS v FROM tool_definitions ORDER BY probe, fingerprint`) {
		got = append(got, fmt.Sprint(row["v"]))
	}
	want := []string{
		"docs " + def(3).Fingerprint,    // named by the kept run docs-kept
		"docs " + def(40).Fingerprint,   // docs' latest, named by docs-latest
		"other " + def(109).Fingerprint, // other's latest, though no run of other is kept
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tool_definitions after Prune:\n got  %q\n want %q", got, want)
	}
	for probe, want := range map[string]results.ToolDefinition{"docs": def(40), "other": def(109)} {
		if got, found, err := s.ToolDefinition(ctx, probe); err != nil || !found || got != want {
			t.Errorf("ToolDefinition(%s) after Prune: got %+v %v %v, want %+v", probe, got, found, err, want)
		}
	}
	if got, err := s.Result(ctx, "docs-kept"); err != nil || got.Tool == nil || *got.Tool != def(3) {
		t.Errorf("kept run's definition after Prune: got %+v, %v; want %+v", got.Tool, err, def(3))
	}
}
