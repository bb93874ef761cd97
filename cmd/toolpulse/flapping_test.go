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
	"github.com/toolpulse/toolpulse/results"
)

// TestFlappingProvider runs the real stack against a provider that breaks
// and recovers by turns (SPEC §13): firing, resolved, firing, then one
// flapping message instead of the next resolved; nothing while it keeps
// flapping; then, once it has passed for stable_for, one resolved message.
func TestFlappingProvider(t *testing.T) {
	p := provider.New()
	prov := e2e.Serve(t, p.Handler())
	slack, slackURL := e2e.Slack(t)
	config := harness.Fast(prov, slackURL, "search")
	config.Notify.Flapping = &harness.Flapping{Changes: 3, Window: time.Minute, StableFor: 2 * time.Second}
	s := runStack(t, "", config)
	store := sqliteOf(t, s)
	// latest reports whether the probe's last n runs had outcome o.
	latest := func(n int, o results.Outcome) bool {
		runs, err := store.RecordedRuns(context.Background(), "search")
		if err != nil || len(runs) < n {
			return false
		}
		for _, r := range runs[len(runs)-n:] {
			if r.Outcome != o {
				return false
			}
		}
		return true
	}
	const (
		firing   = ":red_circle: search contract_error"
		resolved = ":large_green_circle: search resolved"
		flapping = ":repeat: search flapping"
	)
	eventually(t, "a baseline of 7 runs", func() bool { return latest(7, results.Pass) })
	p.SetDrifted(true)
	eventually(t, "the first firing alert", func() bool { return slack.CountPrefix(firing) == 1 })
	p.SetDrifted(false)
	eventually(t, "the first resolved alert", func() bool { return slack.CountPrefix(resolved) == 1 })
	p.SetDrifted(true)
	eventually(t, "the second firing alert", func() bool { return slack.CountPrefix(firing) == 2 })
	p.SetDrifted(false)
	eventually(t, "the flapping alert", func() bool { return slack.CountPrefix(flapping) == 1 })
	quietFrom := len(slack.Messages())

	rec := httptest.NewRecorder()
	s.metricsHandler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `toolpulse_probe_flapping{probe="search"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %s while flapping", want)
	}
	// It keeps flapping: quiet.
	p.SetDrifted(true)
	eventually(t, "two failing runs", func() bool { return latest(2, results.ContractError) })
	p.SetDrifted(false)
	eventually(t, "two passing runs", func() bool { return latest(2, results.Pass) })
	var during []string
	for _, m := range slack.Messages()[quietFrom:] {
		if !strings.Contains(m.Text, "response shape changed") { // drift is an event, not the failure's story
			during = append(during, m.Text)
		}
	}
	if len(during) != 0 {
		t.Errorf("messages while flapping: %q, want none", during)
	}

	eventually(t, "the settling resolved alert", func() bool { return slack.CountPrefix(resolved) == 2 })
	time.Sleep(500 * time.Millisecond) // room for a duplicate to show up
	for prefix, want := range map[string]int{firing: 2, resolved: 2, flapping: 1} {
		if got := slack.CountPrefix(prefix); got != want {
			t.Errorf("%d messages starting %q, want %d", got, prefix, want)
		}
	}
}
