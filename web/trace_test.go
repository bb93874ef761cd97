package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// TestTraceShown: a traced run's trace id is on its run page and in the
// API's envelopes; an untraced run shows none (SPEC §10.1).
func TestTraceShown(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	for i, id := range []string{traceID, ""} {
		r := results.Result{OperationID: []string{"op-traced", "op-untraced"}[i], Probe: "search", StartedAt: now.Add(time.Duration(i-2) * time.Minute),
			Duration: 40 * time.Millisecond, Outcome: results.Unavailable, Error: results.NewError(results.CodeServerError, "HTTP 503"),
			HTTPStatus: 503, TraceID: id, Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"},
			Attempts: []results.Attempt{{Number: 1, StartedAt: now, HTTPStatus: 503, Code: results.CodeServerError}}}
		if err := store.RecordRun(ctx, &results.RunRecord{Result: r}); err != nil {
			t.Fatal(err)
		}
	}
	probes := []*checks.Probe{{Name: "search", Interval: time.Minute}}
	srv := httptest.NewServer(NewServer(Deps{
		Logger: slog.New(slog.DiscardHandler), Healthy: func(context.Context) error { return nil }, Metrics: http.NotFoundHandler(),
		Store: store, Probes: func() []*checks.Probe { return probes }, Now: func() time.Time { return now },
	}))
	t.Cleanup(srv.Close)
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v\n%s", path, resp.StatusCode, err, body)
		}
		return string(body)
	}
	if page := get("/runs/op-traced"); !strings.Contains(page, `<dt>Trace</dt><dd><code class="trace">`+traceID+`</code>`) {
		t.Errorf("the traced run's page does not show trace %s", traceID)
	}
	if page := get("/runs/op-untraced"); strings.Contains(page, "<dt>Trace</dt>") {
		t.Errorf("the untraced run's page shows a trace")
	}
	var body struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(get("/api/v1/probes/search/results")), &body); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, r := range body.Results {
		got[r["operation_id"].(string)] = r["trace_id"]
	}
	if len(got) != 2 || got["op-traced"] != traceID || got["op-untraced"] != nil {
		t.Errorf("API trace_id by operation: %v; want op-traced %s and op-untraced absent", got, traceID)
	}
}
