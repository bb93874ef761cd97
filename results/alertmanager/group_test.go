package alertmanager

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

func groupOf(alerts ...results.Alert) results.AlertGroup {
	return results.AlertGroup{Key: `routes[0]/alertmanager{team="search"}`, Labels: map[string]string{"team": "search"}, Alerts: alerts}
}

// probeAlert is a firing alert of probe.
func probeAlert(probe string, kind results.AlertKind) results.Alert {
	a := firing()
	if kind == results.AlertResolved {
		a = resolved()
	}
	a.Probe = probe
	return a
}

// TestSendGroupPostsOnce: a group's alerts go to Alertmanager in one
// request, and become the active alerts only once it succeeded; a later
// group that resolves one of them and updates another ends their old
// label sets in its own single request.
func TestSendGroupPostsOnce(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	srv, got := fakeAM(t, func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	now := t0
	n, err := New(Config{URL: srv.URL, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := groupOf(probeAlert("search_a", results.AlertFiring), probeAlert("search_b", results.AlertFiring), probeAlert("search_c", results.AlertFiring))
	if retry, _, err := n.SendGroup(ctx, first); err == nil || !retry {
		t.Fatalf("SendGroup to a 503 = %v, %v; want a retryable failure", retry, err)
	}
	<-got
	if len(n.active) != 0 {
		t.Fatalf("active after a failed post: %v, want none", n.active)
	}
	refuse.Store(false)
	if _, _, err := n.SendGroup(ctx, first); err != nil {
		t.Fatal(err)
	}
	ps := decode(t, <-got)
	if len(ps) != 3 {
		t.Fatalf("one request with %d alerts, want the group's 3", len(ps))
	}
	for i, probe := range []string{"search_a", "search_b", "search_c"} {
		if ps[i].Labels["probe"] != probe || !ps[i].EndsAt.After(now) {
			t.Errorf("alert %d: probe %s ending %v, want %s active", i, ps[i].Labels["probe"], ps[i].EndsAt, probe)
		}
	}
	if len(n.active) != 3 {
		t.Errorf("active: %d probes, want 3", len(n.active))
	}

	now = t0.Add(5 * time.Minute)
	update := probeAlert("search_b", results.AlertUpdate)
	update.Outcome, update.Code = results.Unavailable, results.CodeTimeout
	if _, _, err := n.SendGroup(ctx, groupOf(probeAlert("search_a", results.AlertResolved), update)); err != nil {
		t.Fatal(err)
	}
	ps = decode(t, <-got)
	var ended, active []string
	for _, p := range ps {
		if p.EndsAt.Equal(now) {
			ended = append(ended, p.Labels["probe"]+" "+p.Labels["outcome"])
		} else {
			active = append(active, p.Labels["probe"]+" "+p.Labels["outcome"])
		}
	}
	if len(ps) != 3 || len(ended) != 2 || len(active) != 1 || active[0] != "search_b unavailable" {
		t.Errorf("second request: ended %v, active %v; want search_a and search_b's contract_error ended, search_b unavailable active", ended, active)
	}
	if _, ok := n.active["search_a"]; ok || len(n.active) != 2 {
		t.Errorf("active after the resolve: %v, want search_b and search_c", n.active)
	}
	select {
	case extra := <-got:
		t.Errorf("an extra request: %s", extra)
	default:
	}
}
