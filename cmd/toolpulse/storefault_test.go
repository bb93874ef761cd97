package main

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
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
	p := provider.New()
	prov := httptest.NewServer(p.Handler())
	defer prov.Close()
	dir := t.TempDir()
	config, db, addr := filepath.Join(dir, "checks.yaml"), filepath.Join(dir, "results.db"), freeLoopbackAddr(t)
	yaml := strings.Replace(daemonConfig(prov.URL, "", "alpha", "beta"), `server: {listen: ""}`, `server: {listen: "`+addr+`"}`, 1)
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, config)
	waitFor(t, "runs to be recorded", d, func() bool { return countRows(t, db, "SELECT count(*) FROM results") >= 4 })
	healthz := func() int {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			d.t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// The operator's session takes the write lock and keeps it.
	conn, err := sql.Open("sqlite3", "file:"+db)
	if err != nil {
		d.t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	lock, err := conn.Conn(ctx)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		d.t.Fatal(err)
	}
	requests := func() int { return strings.Count(d.logs.String(), `msg="probe run"`) }
	before := requests()
	waitFor(t, "a run to be queued behind the lock", d, func() bool { return strings.Contains(d.logs.String(), "queued=true") })
	if code := healthz(); code != http.StatusServiceUnavailable {
		d.t.Errorf("/healthz = %d while the store cannot be written, want 503", code)
	}
	time.Sleep(time.Second)
	if requests() <= before+2 {
		d.t.Errorf("probing stopped while the store was locked (%d runs before, %d after)", before, requests())
	}
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		d.t.Fatal(err)
	}
	lock.Close()

	// Every run logged, recorded at once or queued, ends up in the database.
	waitFor(t, "the queue to drain", d, func() bool { return healthz() == http.StatusOK })
	if err := d.stop(syscall.SIGTERM); err != nil {
		d.t.Fatalf("SIGTERM: %v", err)
	}
	ids := regexp.MustCompile(`msg="probe run" .*operation_id=(\S+)`).FindAllStringSubmatch(d.logs.String(), -1)
	if len(ids) < 6 {
		d.t.Fatalf("only %d runs logged", len(ids))
	}
	for _, m := range ids {
		if countRows(t, db, "SELECT count(*) FROM results WHERE operation_id = ?", m[1]) != 1 {
			d.t.Errorf("run %s was logged but is not in the database", m[1])
		}
	}
	if !strings.Contains(d.logs.String(), `msg="probe run recorded late"`) {
		d.t.Errorf("no queued run was written late")
	}
	if strings.Contains(d.logs.String(), "they are lost") || strings.Contains(d.logs.String(), "dropped the oldest") {
		d.t.Errorf("runs were lost")
	}
}
