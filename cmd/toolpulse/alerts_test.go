package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// TestAlertLifecycle runs the real stack (SQLite, pipeline, outbox, Slack
// notifier) against a provider that drifts and recovers, with a Slack that
// first rate-limits and then fails once: one drift alert, one firing alert
// after the threshold, reminders no more often than repeat_interval, one
// resolved message, and Slack's Retry-After honoured.
func TestAlertLifecycle(t *testing.T) {
	p := provider.New()
	prov := e2e.Serve(t, p.Handler())
	slack, slackURL := e2e.Slack(t)
	slack.Script(harness.RateLimited("1"), harness.Fail(http.StatusInternalServerError, "internal_error"))

	config := harness.Fast(prov, slackURL, "search")
	config.Notify.FailureThreshold, config.Notify.RepeatInterval = 3, 1500*time.Millisecond
	s := runStack(t, "", config)
	waitUntil := func(what string, cond func() bool) { t.Helper(); eventually(t, what, cond) }

	// A baseline the profile has learned: its first 5 answers establish
	// it. Counted, not slept for, so that a slow machine cannot start the
	// drift during the warm-up.
	waitUntil("a baseline of 7 runs", func() bool {
		runs, err := sqliteOf(t, s).RecordedRuns(context.Background(), "search")
		return err == nil && len(runs) >= 7
	})
	failingFrom := time.Now()
	p.SetDrifted(true)
	waitUntil("the firing alert", func() bool { return slack.Count(":red_circle: search contract_error") == 1 })
	waitUntil("a reminder", func() bool { return slack.Count(":red_circle: search still failing") >= 1 })
	p.SetDrifted(false)
	waitUntil("the resolved message", func() bool { return slack.Count(":large_green_circle: search resolved") == 1 })
	failingFor := time.Since(failingFrom)
	time.Sleep(500 * time.Millisecond) // room for any duplicate to show up

	// The drift alert was the first post, which Slack refused twice (429,
	// then 500): its retries may still be on their way.
	waitUntil("the drift alert", func() bool { return slack.Count(":warning: search response shape changed") >= 1 })
	time.Sleep(500 * time.Millisecond) // room for a duplicate to show up
	if got := slack.Count(":warning: search response shape changed"); got != 1 {
		// One drift to the wrapped layout; the way back is none, since
		// the profile still knows the old layout.
		t.Errorf("%d drift alerts, want 1", got)
	}
	if got := slack.Count(":red_circle: search contract_error"); got != 1 {
		t.Errorf("%d firing alerts, want 1", got)
	}
	if got, most := slack.Count(":red_circle: search still failing"), int(failingFor/(1500*time.Millisecond))+1; got > most {
		t.Errorf("%d reminders in %v, want at most %d (repeat_interval 1.5s)", got, failingFor, most)
	}
	if got := slack.Count(":large_green_circle: search resolved"); got != 1 {
		t.Errorf("%d resolved messages, want 1", got)
	}
	// The same story in the metrics.
	rec := httptest.NewRecorder()
	s.metricsHandler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{
		`toolpulse_runs_total{code="unsupported_results_container",outcome="contract_error",probe="search"}`,
		`toolpulse_drift_events_total{kind="response",probe="search"}`,
		`toolpulse_alerts_sent_total{kind="resolved",receiver="default/slack"} 1`,
		`toolpulse_alerts_failed_total{final="false",kind="shape_drift",receiver="default/slack"}`,
		`toolpulse_last_outcome{outcome="pass",probe="search"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	posts := slack.Messages()
	if len(posts) < 3 {
		t.Fatalf("Slack saw %d posts, want the 429, the 500 and deliveries", len(posts))
	}
	if gap := posts[1].At.Sub(posts[0].At); gap < 900*time.Millisecond {
		t.Errorf("the retry after a 429 with Retry-After: 1 came %v later, want about 1s", gap)
	}
}
