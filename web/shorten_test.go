package web

import (
	"context"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/longmessage"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// TestStatusPageKeepsTheObservation: the overview's last message, the
// probe page's runs and list_tool_health keep the observation; the run
// page shows it whole.
func TestStatusPageKeepsTheObservation(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, r := range longmessage.Results(now.Add(-time.Minute)) {
		if err := store.RecordRun(ctx, &results.RunRecord{Result: r}); err != nil {
			t.Fatal(err)
		}
	}
	probes := []*checks.Probe{{Name: "refund_order_31", Interval: time.Minute}, {Name: "weather_tool", Interval: time.Minute}}
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
		return html.UnescapeString(string(body))
	}
	overview := get("/")
	for _, want := range longmessage.Kept {
		if !strings.Contains(overview, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	if page := get("/probes/refund_order_31"); !strings.Contains(page, `<td class="message">step verify: claim not confirmed`) ||
		!strings.Contains(page, `was false: state: "paid"</td>`) {
		t.Errorf("the probe page's runs lack the observation")
	}
	if run := get("/runs/op-claim"); !strings.Contains(run, longmessage.Claim) {
		t.Errorf("the run page does not show the message whole")
	}

	// An agent asking list_tool_health is told what was observed too.
	health, err := toolHealth{store: store, probes: func() []*checks.Probe { return probes }}.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, th := range health {
		said = append(said, th.Message)
	}
	for _, want := range longmessage.Kept {
		if !strings.Contains(strings.Join(said, "\n"), want) {
			t.Errorf("list_tool_health lacks %q: %q", want, said)
		}
	}
}

// TestAlertDeliveryErrorKeepsItsCause: the status page's last delivery
// error says why at its end (the host that could not be reached), which a
// long URL before it must not push out.
func TestAlertDeliveryErrorKeepsItsCause(t *testing.T) {
	lastError := `Post "https://hooks.slack.com/services/T00000000/B00000000/<redacted>?team=payments-oncall-eu-west": ` +
		`dial tcp: lookup hooks.slack.com on 10.0.0.2:53: no such host`
	v := newAlertView(time.Now(), probeAlert{Firing: true, LastMessage: &alertMessage{Kind: results.AlertFiring, LastError: lastError}})
	if v == nil || !strings.HasSuffix(v.Error, "no such host") || !strings.HasPrefix(v.Error, `Post "https://hooks.slack.com/`) {
		t.Errorf("delivery error shown as %+v, want its start and its cause", v)
	}
}
