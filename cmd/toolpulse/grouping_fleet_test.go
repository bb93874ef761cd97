package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// groupedFleetConfig is fleetConfig with grouping and n probes of one
// provider.
func groupedFleetConfig(n int) string {
	var b strings.Builder
	b.WriteString(`version: 1
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
  group_by: [provider]
  group_wait: 4s
  group_interval: 1m
consumers:
  - {name: c, select: response.items}
probes:
`)
	for i := range n {
		fmt.Fprintf(&b, "  - {name: search_%02d, request: {url: \"${TP_PROVIDER}\"}, consumer: c, interval: 1s, labels: {provider: search}}\n", i)
	}
	return b.String()
}

// TestGroupedMessagesFleetOnPostgres: two daemons on one real Postgres,
// ten probes of one provider failing. The leader records their alerts and
// stops during group_wait; the standby takes over and sends the group's
// one message listing the ten, group_wait after the first failure, once
// across the fleet.
func TestGroupedMessagesFleetOnPostgres(t *testing.T) {
	db := pgtest.Database(t)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(provider.Close)
	slack, slackURL := e2e.Slack(t)
	path := filepath.Join(t.TempDir(), "checks.yaml")
	if err := os.WriteFile(path, []byte(groupedFleetConfig(10)), 0o644); err != nil {
		t.Fatal(err)
	}
	const wait = 4 * time.Second

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
	firingRows := func() int {
		var n int
		fmt.Sscan(pgtest.Exec(t, db, `SELECT count(*) FROM alerts WHERE kind = 'firing' AND group_key = 'default/slack{provider="search"}'`), &n)
		return n
	}
	eventually(t, "the ten firing alerts recorded", func() bool { return firingRows() == 10 })
	var first time.Time
	if err := first.UnmarshalText([]byte(strings.TrimSpace(pgtest.Exec(t, db,
		`SELECT to_char(min(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') FROM alerts`)))); err != nil {
		t.Fatal(err)
	}
	if len(slack.Messages()) != 0 {
		t.Fatalf("Slack got a post before group_wait: %v", slack.Messages())
	}
	leader.stop() // during group_wait: the standby takes the pending group over

	header := "10 probes of provider=search failing"
	eventually(t, "the grouped message", func() bool { return slack.Count(header) > 0 })
	if !standby.s.daemon.Role().Leading {
		t.Error("the message went out, but the standby does not lead")
	}
	time.Sleep(2 * time.Second) // the outbox's next looks
	if msgs := slack.Messages(); len(msgs) != 1 || slack.Count(header) != 1 {
		t.Fatalf("Slack got %d posts, want exactly one %q across the fleet: %v", len(msgs), header, msgs)
	}
	if at := slack.Messages()[0].At; at.Before(first.Add(wait)) {
		t.Errorf("the message came %s after the first failure, before group_wait (%s)", at.Sub(first), wait)
	}
	if n := pgtest.Exec(t, db, `SELECT count(*) FROM alerts WHERE group_key IS NOT NULL AND state <> 'delivered'`); strings.TrimSpace(n) != "0" {
		t.Errorf("%s grouped alerts not delivered, want every one delivered with the message", n)
	}
}
