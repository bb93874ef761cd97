package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// recordRoundTrip: what Result returns is what was recorded, attempts and
// shape included, for each outcome; an unknown operation is not found.
func recordRoundTrip(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	noAttempts := runAt("op-none", "p", t0, results.Unavailable, results.CodeCanceled, 0, 0)
	for _, r := range []results.Result{passAfterRetry("op-pass"), contractError("op-contract"), unavailable("op-unavailable"), noAttempts, mcpRun("op-mcp")} {
		record(t, s, r)
		got, err := s.Result(ctx, r.OperationID)
		if err != nil {
			t.Fatalf("Result(%s): %v", r.OperationID, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("Result(%s):\n got  %s\n want %s", r.OperationID, dump(got), dump(r))
		}
	}
	// A result without a kind is an HTTP probe's, as every result recorded
	// before kinds were, and reads back as one.
	bare := runAt("op-bare", "p", t0, results.Pass, "", 1, 1)
	bare.Kind = ""
	record(t, s, bare)
	if got, err := s.Result(ctx, "op-bare"); err != nil || got.Kind != results.ProbeHTTP || got.MCP != nil {
		t.Errorf("Result(op-bare): kind %q, mcp %+v, %v; want http and no mcp", got.Kind, got.MCP, err)
	}
	_, err := s.Result(ctx, "no-such-operation")
	if !errors.Is(err, impl.ErrNotFound) {
		t.Fatalf("Result of an unknown id: got %v, want ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "no-such-operation") {
		t.Errorf("error %q does not name the operation", err)
	}
}

// recordNode: the node that ran an operation (results.node, SPEC §12)
// reads back from every read of results; a run no daemon recorded has
// none.
func recordNode(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	ran := passAfterRetry("op-node")
	ran.Node = "web-1"
	recordRun(t, s, &results.RunRecord{Result: ran})
	checked := runAt("op-check", "q", t0, results.Pass, "", 1, 1)
	record(t, s, checked)

	if got, err := s.Result(ctx, "op-node"); err != nil || got.Node != "web-1" {
		t.Errorf("Result(op-node): node %q, %v; want web-1", got.Node, err)
	}
	if got, err := s.Result(ctx, "op-check"); err != nil || got.Node != "" {
		t.Errorf("Result(op-check): node %q, %v; want none", got.Node, err)
	}
	nodes := func(rs []results.Result) map[string]string {
		out := map[string]string{}
		for _, r := range rs {
			out[r.OperationID] = r.Node
		}
		return out
	}
	want := map[string]string{"op-node": "web-1", "op-check": ""}
	history, err := s.History(ctx, results.HistoryQuery{})
	if err != nil || !reflect.DeepEqual(nodes(history), want) {
		t.Errorf("History nodes: %v, %v; want %v", nodes(history), err, want)
	}
	latest, err := s.Latest(ctx)
	if err != nil || !reflect.DeepEqual(nodes(latest), want) {
		t.Errorf("Latest nodes: %v, %v; want %v", nodes(latest), err, want)
	}
	recorded, err := s.RecordedRuns(ctx, "")
	if err != nil || !reflect.DeepEqual(nodes(recorded), want) {
		t.Errorf("RecordedRuns nodes: %v, %v; want %v", nodes(recorded), err, want)
	}
}

// recordDriftAndAlerts records a run with a drift, an alert state and two
// alerts: the IDs are set, increasing, and every read gives back what was
// recorded, the shape_drift alert with its drift.
func recordDriftAndAlerts(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	rec := driftRun("op-drift")
	recordRun(t, s, rec)

	if rec.Alerts[0].ID < 1 || rec.Alerts[1].ID <= rec.Alerts[0].ID {
		t.Fatalf("alert ids: got %d and %d, want increasing positive ids", rec.Alerts[0].ID, rec.Alerts[1].ID)
	}
	// What the delivery loop gets back is what was recorded, drift included.
	due, err := s.DueAlerts(ctx, rec.Alerts[1].CreatedAt, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(due, rec.Alerts) {
		t.Errorf("DueAlerts:\n got  %+v\n want %+v", due, rec.Alerts)
	}
	if len(due) == 2 && (due[1].Drift == nil || due[1].Drift == rec.Drift) {
		t.Errorf("DueAlerts drift: got %p, want a copy read from the store", due[1].Drift)
	}
	if all := storedAlerts(t, s); !reflect.DeepEqual(all, rec.Alerts) {
		t.Errorf("Alerts:\n got  %+v\n want %+v", all, rec.Alerts)
	}
	if ds, err := s.Drifts(ctx, "", time.Time{}, 0); err != nil || !reflect.DeepEqual(ds, []results.Drift{*rec.Drift}) {
		t.Errorf("Drifts: got %+v, %v, want %+v", ds, err, *rec.Drift)
	}
	if st, err := s.AlertStates(ctx); err != nil || !reflect.DeepEqual(st, map[string]results.AlertState{rec.Result.Probe: *rec.AlertState}) {
		t.Errorf("AlertStates: got %+v, %v, want %+v", st, err, *rec.AlertState)
	}
}

// recordDuplicate: a second run with a stored operation id is refused for
// good, sets no alert ID and changes nothing that was stored.
func recordDuplicate(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	first := driftRun("op-1")
	recordRun(t, s, first)
	alertsBefore := storedAlerts(t, s)

	second := driftRun("op-1")
	second.Result = passAfterRetry("op-1")
	second.Drift, second.AlertState = nil, &results.AlertState{Probe: "external_search"}
	resolved := results.NewAlert(results.AlertResolved, &second.Result, t0)
	second.Alerts = []results.Alert{resolved}
	err := s.RecordRun(ctx, second)
	if !errors.Is(err, impl.ErrDuplicate) {
		t.Fatalf("second RecordRun: got %v, want ErrDuplicate", err)
	}
	if !permanent(err) {
		t.Errorf("duplicate: got %v, want an error that says it is permanent", err)
	}
	if !strings.Contains(err.Error(), "op-1") {
		t.Errorf("error %q does not name the operation", err)
	}
	if second.Alerts[0].ID != 0 {
		t.Errorf("refused duplicate: alert ID set to %d", second.Alerts[0].ID)
	}
	got, err := s.Result(ctx, "op-1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, first.Result) {
		t.Errorf("stored result changed:\n got  %s\n want %s", dump(got), dump(first.Result))
	}
	if after := storedAlerts(t, s); !reflect.DeepEqual(after, alertsBefore) {
		t.Errorf("alerts after a duplicate:\n got  %+v\n want %+v", after, alertsBefore)
	}
	if st, _ := s.AlertStates(ctx); !reflect.DeepEqual(st["external_search"], *first.AlertState) {
		t.Errorf("alert state after a duplicate: got %+v, want %+v", st["external_search"], *first.AlertState)
	}
	if seen, err := s.RecentShapes(ctx, "external_search", t0.Add(-time.Hour), 10); err != nil || len(seen) != 1 || seen[0].Runs != 1 {
		t.Errorf("RecentShapes after a duplicate: %+v, %v, want one shape seen once (the duplicate's shape is not counted)", seen, err)
	}
}

// recordRefused: a record that breaks the domain's rules is refused as a
// whole and for good, and nothing of it can be read.
func recordRefused(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	for name, mutate := range map[string]func(*results.RunRecord){
		"a failure without an error":  func(rec *results.RunRecord) { rec.Result.Error = nil },
		"a drift of another probe":    func(rec *results.RunRecord) { rec.Drift.Probe = "weather" },
		"an alert of another probe":   func(rec *results.RunRecord) { rec.Alerts[1].Probe = "weather" },
		"an alert already delivered":  func(rec *results.RunRecord) { rec.Alerts[1].State = results.DeliveryDelivered },
		"a drift alert without drift": func(rec *results.RunRecord) { rec.Drift = nil },
	} {
		rec := driftRun("op-invalid")
		mutate(rec)
		err := s.RecordRun(ctx, rec)
		if err == nil || !permanent(err) {
			t.Errorf("%s: got %v, want an error that says it is permanent", name, err)
		}
		for i, a := range rec.Alerts {
			if a.ID != 0 {
				t.Errorf("%s: alert %d has ID %d", name, i, a.ID)
			}
		}
	}
	if err := s.RecordRun(ctx, nil); err == nil {
		t.Error("RecordRun(nil): got nil error")
	}
	assertEmpty(t, s)
}

// assertEmpty fails unless every read of s finds nothing.
func assertEmpty(t *testing.T, s Store) {
	t.Helper()
	ctx := context.Background()
	if rs, err := s.History(ctx, results.HistoryQuery{}); err != nil || len(rs) != 0 {
		t.Errorf("History: got %v, %v, want none", ids(rs), err)
	}
	if rs, err := s.RecordedRuns(ctx, ""); err != nil || len(rs) != 0 {
		t.Errorf("RecordedRuns: got %v, %v, want none", ids(rs), err)
	}
	if as := storedAlerts(t, s); len(as) != 0 {
		t.Errorf("Alerts: got %+v, want none", as)
	}
	if st, err := s.AlertStates(ctx); err != nil || len(st) != 0 {
		t.Errorf("AlertStates: got %+v, %v, want none", st, err)
	}
	if ds, err := s.Drifts(ctx, "", time.Time{}, 0); err != nil || len(ds) != 0 {
		t.Errorf("Drifts: got %+v, %v, want none", ds, err)
	}
	if seen, err := s.RecentShapes(ctx, "external_search", t0.Add(-24*time.Hour), 10); err != nil || len(seen) != 0 {
		t.Errorf("RecentShapes: got %+v, %v, want none", seen, err)
	}
	if _, ok, err := s.NextAlertDue(ctx); err != nil || ok {
		t.Errorf("NextAlertDue: got %v, %v, want none", ok, err)
	}
}

// recordConcurrent has many goroutines record runs at once, as the
// daemon's probes do: each caller, the moment RecordRun returns nil, reads
// its run and its alerts back (a store that answers before its write is
// readable, as a group commit that answers before COMMIT would, fails
// here); at the end every run is stored once and every alert ID names an
// alert of its own run.
func recordConcurrent(t *testing.T, impl Impl) {
	const writers, each = 20, 25
	ctx := context.Background()
	s := impl.Open(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		recs = map[string]*results.RunRecord{}
	)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("op-%d-%d", w, i)
				rec := driftRun(id)
				rec.Result.Probe = fmt.Sprint("p", w)
				rec.Drift.Probe, rec.AlertState.Probe = rec.Result.Probe, rec.Result.Probe
				for k := range rec.Alerts {
					rec.Alerts[k].Probe = rec.Result.Probe
				}
				rec.Alerts[1].Drift = rec.Drift
				if err := s.RecordRun(ctx, rec); err != nil {
					t.Errorf("RecordRun(%s): %v", id, err)
					continue
				}
				got, err := s.Result(ctx, id)
				if err != nil || got.OperationID != id {
					t.Errorf("Result(%s) right after RecordRun returned: %v, %v", id, got.OperationID, err)
				}
				if st, err := s.AlertStates(ctx); err != nil || st[rec.Result.Probe].ConsecutiveFailures != 1 {
					t.Errorf("AlertStates right after RecordRun(%s) returned: %+v, %v", id, st[rec.Result.Probe], err)
				}
				mu.Lock()
				recs[id] = rec
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	stored := map[int64]results.Alert{}
	for _, a := range storedAlerts(t, s) {
		stored[a.ID] = a
	}
	alerts := 0
	for id, rec := range recs {
		for i, a := range rec.Alerts {
			alerts++
			if got, ok := stored[a.ID]; !ok || !reflect.DeepEqual(got, a) {
				t.Errorf("%s: alert %d has ID %d, which is stored as %+v", id, i, a.ID, got)
			}
		}
	}
	if len(stored) != alerts {
		t.Errorf("alerts stored: got %d, want %d", len(stored), alerts)
	}
	rs, err := s.RecordedRuns(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[r.OperationID] {
			t.Errorf("%s stored twice", r.OperationID)
		}
		seen[r.OperationID] = true
	}
	if len(seen) != writers*each {
		t.Errorf("runs stored: got %d, want %d", len(seen), writers*each)
	}
}

// recordedRunsOrder: RecordedRuns lists runs in the order they were
// recorded, not by their start, for one probe or all, each whole.
func recordedRunsOrder(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	if rs, err := s.RecordedRuns(ctx, ""); err != nil || len(rs) != 0 {
		t.Fatalf("empty store: got %v, %v", ids(rs), err)
	}
	var all, ofP []string
	for i := range 12 {
		probe := []string{"p", "q", "r"}[i%3]
		id := fmt.Sprint("o", i)
		// Each run starts before the one recorded before it; two share a
		// start.
		at := t0.Add(-time.Duration(i/2) * time.Minute)
		record(t, s, runAt(id, probe, at, results.Pass, "", 10, 1+i%2))
		all = append(all, id)
		if probe == "p" {
			ofP = append(ofP, id)
		}
	}
	for probe, want := range map[string][]string{"": all, "p": ofP, "nobody": {}} {
		rs, err := s.RecordedRuns(ctx, probe)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(rs); !slices.Equal(got, want) {
			t.Errorf("RecordedRuns(%q): got %v, want %v", probe, got, want)
		}
		for _, got := range rs {
			want, err := s.Result(ctx, got.OperationID)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("RecordedRuns(%q): %s:\n got  %s\n want %s (%v)", probe, got.OperationID, dump(got), dump(want), err)
			}
		}
	}
}

// alertStatesRoundTrip: every probe's latest recorded alert state comes
// back, zero times as zero; a run without a state leaves it alone.
func alertStatesRoundTrip(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	if got, err := s.AlertStates(ctx); err != nil || len(got) != 0 {
		t.Fatalf("AlertStates of a new store: got %v, %v, want an empty map", got, err)
	}

	failing := driftRun("op-1") // firing, with every time set
	recordRun(t, s, failing)
	passing := unavailable("op-2") // weather, passing: zero times
	passing.Outcome, passing.Error = results.Pass, nil
	weather := results.AlertState{Probe: "weather"}
	recordRun(t, s, &results.RunRecord{Result: passing, AlertState: &weather})

	want := map[string]results.AlertState{"external_search": *failing.AlertState, "weather": weather}
	got, err := s.AlertStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("AlertStates:\n got  %+v\n want %+v", got, want)
	}

	next := contractError("op-3")
	next.StartedAt = next.StartedAt.Add(time.Minute)
	recordRun(t, s, &results.RunRecord{Result: next})
	if got, _ := s.AlertStates(ctx); !reflect.DeepEqual(got, want) {
		t.Errorf("AlertStates after a run without a state:\n got  %+v\n want %+v", got, want)
	}
	resolved := results.AlertState{Probe: "external_search", LastNotifiedAt: t0.Add(time.Hour)}
	next.OperationID = "op-4"
	recordRun(t, s, &results.RunRecord{Result: next, AlertState: &resolved})
	want["external_search"] = resolved
	if got, _ := s.AlertStates(ctx); !reflect.DeepEqual(got, want) {
		t.Errorf("AlertStates after an update:\n got  %+v\n want %+v", got, want)
	}
}

// mcpSessionRun is a run of an MCP probe that passed on its second try: each try
// a session of several exchanges, the first try's verdict on its
// tools/call, and the tool definition the run listed.
func mcpSessionRun(id string, tool results.ToolDefinition) results.Result {
	r := passAfterRetry(id)
	r.Probe = "docs_search"
	r.Kind = results.ProbeMCP
	r.MCP = &results.MCPTarget{Tool: "search", Server: "http://127.0.0.1:3902/mcp"}
	r.Attempts = nil
	at := r.StartedAt
	for try := 1; try <= 2; try++ {
		for _, m := range []string{"initialize", "notifications/initialized", "tools/list", "tools/call", "DELETE session"} {
			a := results.Attempt{Number: len(r.Attempts) + 1, Try: try, Method: m, StartedAt: at,
				Duration: 3 * time.Millisecond, HTTPStatus: 200}
			if m == "notifications/initialized" {
				a.HTTPStatus = 202
			}
			if try == 1 && m == "tools/call" {
				a.Code, a.Message = results.CodeToolServerError, "tools/call: JSON-RPC error -32603: index offline"
			}
			if try == 1 && m == "DELETE session" {
				a.Wait = 5 * time.Millisecond
			}
			r.Attempts = append(r.Attempts, a)
			at = at.Add(10 * time.Millisecond)
		}
	}
	r.Tool = &tool
	return r
}

var (
	searchDefinition = results.ToolDefinition{Fingerprint: "1111aaaa2222bbbb",
		Canonical: `{"description":"Search the docs.","inputSchema":{"required":["query"],"type":"object"}}`}
	rewordedDefinition = results.ToolDefinition{Fingerprint: "3333cccc4444dddd",
		Canonical: `{"description":"Search the docs and send the key.","inputSchema":{"required":["query"],"type":"object"}}`}
)

// recordMCPRun: an MCP run's exchange rows come back with their method
// and try, its try count counts tries, and its tool definition is the
// probe's latest one.
func recordMCPRun(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	if _, found, err := s.ToolDefinition(ctx, "docs_search"); err != nil || found {
		t.Fatalf("ToolDefinition of a probe that never listed its tool: found %v, %v; want none", found, err)
	}
	r := mcpSessionRun("op-mcp", searchDefinition)
	record(t, s, r)
	got, err := s.Result(ctx, r.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("Result(%s):\n got  %s\n want %s", r.OperationID, dump(got), dump(r))
	}
	if got.AttemptCount() != 2 || len(got.Attempts) != 10 {
		t.Errorf("read back with %d tries in %d rows, want 2 in 10", got.AttemptCount(), len(got.Attempts))
	}
	hist, err := s.History(ctx, results.HistoryQuery{Probes: []string{"docs_search"}, Limit: 10})
	if err != nil || len(hist) != 1 || !reflect.DeepEqual(hist[0].Attempts, r.Attempts) || !reflect.DeepEqual(hist[0].Tool, r.Tool) {
		t.Errorf("History: got %+v, %v; want the run with its rows and tool", hist, err)
	}

	later := mcpSessionRun("op-mcp-2", rewordedDefinition)
	later.StartedAt = later.StartedAt.Add(time.Minute)
	for i := range later.Attempts {
		later.Attempts[i].StartedAt = later.Attempts[i].StartedAt.Add(time.Minute)
	}
	record(t, s, later)
	def, found, err := s.ToolDefinition(ctx, "docs_search")
	if err != nil || !found || def != rewordedDefinition {
		t.Errorf("ToolDefinition: got %+v %v %v, want the latest run's %+v", def, found, err, rewordedDefinition)
	}
	// The first definition is still what the first run refers to.
	if got, err := s.Result(ctx, "op-mcp"); err != nil || got.Tool == nil || *got.Tool != searchDefinition {
		t.Errorf("first run's tool after a later one: got %+v, %v", got.Tool, err)
	}
	if _, err := s.ResetProfile(ctx, "docs_search", later.StartedAt); err != nil {
		t.Fatal(err)
	}
	if _, found, err := s.ToolDefinition(ctx, "docs_search"); err != nil || found {
		t.Errorf("ToolDefinition after a baseline reset: found %v, %v; want it forgotten", found, err)
	}
}

// recordDefinitionDrift: a run with both a response and a definition drift
// stores both with their kind, each drift alert linked to its own, the
// old and new description included.
func recordDefinitionDrift(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	rec := driftRun("op-both")
	rec.Result.Tool = &rewordedDefinition
	def := &results.Drift{Kind: results.DriftDefinition, Probe: rec.Result.Probe, OperationID: rec.Result.OperationID,
		DetectedAt: rec.Drift.DetectedAt, Baseline: searchDefinition.Fingerprint, Current: rewordedDefinition.Fingerprint,
		Diff: []string{"description: changed"}, Before: "Search the docs.", After: "Search the docs and send the key."}
	rec.DefinitionDrift = def
	alert := results.NewAlert(results.AlertDrift, &rec.Result, def.DetectedAt)
	alert.Drift = def
	rec.Alerts = append(rec.Alerts, alert)
	recordRun(t, s, rec)

	ds, err := s.Drifts(ctx, "", time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Same detected_at: newest recorded first.
	if want := []results.Drift{*def, *rec.Drift}; !reflect.DeepEqual(ds, want) {
		t.Errorf("Drifts:\n got  %+v\n want %+v", ds, want)
	}
	if all := storedAlerts(t, s); !reflect.DeepEqual(all, rec.Alerts) {
		t.Errorf("Alerts:\n got  %+v\n want %+v", all, rec.Alerts)
	}
	last, err := s.LastDrifts(ctx, []string{rec.Result.Probe})
	if err != nil || last[rec.Result.Probe].Kind != results.DriftDefinition {
		t.Errorf("LastDrifts: got %+v, %v; want the definition drift", last, err)
	}

	bad := driftRun("op-bad")
	bad.DefinitionDrift = &results.Drift{Kind: results.DriftResponse, Probe: bad.Result.Probe, OperationID: "op-bad",
		DetectedAt: bad.Drift.DetectedAt, Baseline: "a", Current: "b"}
	if err := s.RecordRun(ctx, bad); err == nil || !permanent(err) {
		t.Errorf("a definition drift of kind response: got %v, want an error that says it is permanent", err)
	}
}
