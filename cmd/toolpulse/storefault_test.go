package main

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// TestOperatorLockLosesNothing holds the database's write lock from
// another connection, as an operator's `sqlite3` session in BEGIN
// IMMEDIATE would, for longer than the store waits. The daemon must keep
// probing, report itself unhealthy, and, once the lock is released, write
// every run it made meanwhile: none is lost.
func TestOperatorLockLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("holds a lock for several seconds")
	}
	prov := e2e.Serve(t, provider.New().Handler())
	dir, addr := t.TempDir(), e2e.FreeAddr(t)
	cfg := harness.Fast(prov, "", "alpha", "beta")
	cfg.Server.Listen = addr
	config, db := e2e.Config(t, dir, cfg), filepath.Join(dir, "results.db")
	d := e2e.Start(t, config)
	d.WaitFor("runs to be recorded", func() bool { return countRows(t, db, "SELECT count(*) FROM results") >= 4 })
	healthz := func() int {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			d.T.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// The operator's session takes the write lock and keeps it.
	conn, err := sql.Open("sqlite3", "file:"+db)
	if err != nil {
		d.T.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	lock, err := conn.Conn(ctx)
	if err != nil {
		d.T.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		d.T.Fatal(err)
	}
	requests := func() int { return strings.Count(d.Log.String(), `msg="probe run"`) }
	before := requests()
	d.WaitFor("a run to be queued behind the lock", func() bool { return strings.Contains(d.Log.String(), "queued=true") })
	if code := healthz(); code != http.StatusServiceUnavailable {
		d.T.Errorf("/healthz = %d while the store cannot be written, want 503", code)
	}
	time.Sleep(time.Second)
	if requests() <= before+2 {
		d.T.Errorf("probing stopped while the store was locked (%d runs before, %d after)", before, requests())
	}
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		d.T.Fatal(err)
	}
	lock.Close()

	// Every run logged, recorded at once or queued, ends up in the database.
	d.WaitFor("the queue to drain", func() bool { return healthz() == http.StatusOK })
	if err := d.Stop(syscall.SIGTERM); err != nil {
		d.T.Fatalf("SIGTERM: %v", err)
	}
	ids := regexp.MustCompile(`msg="probe run" .*operation_id=(\S+)`).FindAllStringSubmatch(d.Log.String(), -1)
	if len(ids) < 6 {
		d.T.Fatalf("only %d runs logged", len(ids))
	}
	for _, m := range ids {
		if countRows(t, db, "SELECT count(*) FROM results WHERE operation_id = ?", m[1]) != 1 {
			d.T.Errorf("run %s was logged but is not in the database", m[1])
		}
	}
	if !strings.Contains(d.Log.String(), `msg="probe run recorded late"`) {
		d.T.Errorf("no queued run was written late")
	}
	if strings.Contains(d.Log.String(), "they are lost") || strings.Contains(d.Log.String(), "dropped the oldest") {
		d.T.Errorf("runs were lost")
	}
}
