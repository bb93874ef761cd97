package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
	"github.com/toolpulse/toolpulse/results"
)

const fleetConfig = `version: 1
storage:
  driver: postgres
  dsn: ${TP_PG_DSN}
fleet:
  node: ${TP_NODE}
  lease: 2s
server:
  listen: ""
notify:
  slack: {webhook_url: "${TP_SLACK}"}
consumers:
  - {name: c, select: response.items}
probes:
  - name: p
    request: {url: "${TP_PROVIDER}"}
    consumer: c
    interval: 1s
`

// TestFleetFailoverOnPostgres: two daemons on one real Postgres, a probe
// that always fails and one Slack. One leads, runs the probe and
// announces the failure; the other stands by. The leader stops; the
// standby takes over within the lease and one interval, runs the probe
// on, and does not announce the failure again: Slack hears of it once.
func TestFleetFailoverOnPostgres(t *testing.T) {
	db := pgtest.Database(t)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(provider.Close)
	slack, slackURL := e2e.Slack(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "checks.yaml")
	if err := os.WriteFile(path, []byte(fleetConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	const lease, interval = 2 * time.Second, time.Second

	tt := testkit.New(t)
	start := func(name string) *fleetInstance {
		env := map[string]string{"TP_PG_DSN": db, "TP_NODE": name, "TP_SLACK": slackURL, "TP_PROVIDER": provider.URL}
		cfg, err := checks.Load(path, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		n := &fleetInstance{t: t, logs: &testkit.Log{}, done: make(chan error, 1)}
		tt.Attach(name, n.logs)
		logger := slog.New(slog.NewJSONHandler(n.logs, nil))
		if n.s, err = newStack(context.Background(), cfg, logger, stackOptions{grace: time.Second}); err != nil {
			t.Fatal(err)
		}
		var ctx context.Context
		ctx, n.cancel = context.WithCancel(context.Background())
		go func() { n.done <- n.s.run(ctx, 0) }()
		t.Cleanup(n.stop)
		return n
	}
	a, b := start("a"), start("b")
	var leader, standby *fleetInstance
	eventually(t, "one leader", func() bool {
		la, lb := a.s.daemon.Role().Leading, b.s.daemon.Role().Leading
		switch {
		case la && !lb:
			leader, standby = a, b
		case lb && !la:
			leader, standby = b, a
		}
		return leader != nil
	})
	firing := func() int {
		n := 0
		for _, m := range slack.Messages() {
			if m.Accepted && m.Probe == "p" && m.Kind == results.AlertFiring {
				n++
			}
		}
		return n
	}
	eventually(t, "the failure announced", func() bool { return firing() == 1 })
	if standby.s.daemon.Role().Leading {
		t.Fatal("both instances lead")
	}
	runsBy := func(n *fleetInstance) int {
		return strings.Count(n.logs.String(), `"msg":"probe run"`)
	}
	if n := runsBy(standby); n != 0 {
		t.Errorf("the standby ran the probe %d times", n)
	}

	stopped := time.Now()
	leader.stop()
	eventually(t, "the standby's first run", func() bool { return runsBy(standby) > 0 })
	if took := time.Since(stopped); took > lease+interval {
		t.Errorf("the standby's first run came %v after the leader stopped, want within the lease and one interval (%v)", took, lease+interval)
	}
	if !standby.s.daemon.Role().Leading {
		t.Error("the standby runs probes but does not say it leads")
	}
	eventually(t, "three runs by the new leader", func() bool { return runsBy(standby) >= 3 })
	time.Sleep(500 * time.Millisecond) // the outbox's next look
	if n := firing(); n != 1 {
		t.Errorf("Slack heard of the failure %d times, want once across the fleet:\n%v", n, slack.Messages())
	}
	if n := pgtest.Exec(t, db, "SELECT count(*) - count(DISTINCT operation_id) FROM results"); n != "0" {
		t.Errorf("%s runs stored twice", n)
	}
}

// fleetInstance is one daemon of a fleet test, run in-process.
type fleetInstance struct {
	t      *testing.T
	s      *stack
	logs   *testkit.Log
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// stop ends the daemon and waits for it, once.
func (n *fleetInstance) stop() {
	n.once.Do(func() {
		n.cancel()
		select {
		case err := <-n.done:
			if err != nil {
				n.t.Errorf("daemon: %v", err)
			}
		case <-time.After(time.Minute):
			n.t.Error("the daemon did not stop")
		}
	})
}
