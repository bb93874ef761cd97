package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
	"github.com/toolpulse/toolpulse/results/postgres"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// run finds a store's fleet by this interface: Postgres has one, SQLite
// none (its surface shows a fleet of one).
var _ fleetReader = (*postgres.Store)(nil)

func TestSQLiteHasNoFleet(t *testing.T) {
	var s store = (*sqlite.Store)(nil)
	if _, ok := s.(fleetReader); ok {
		t.Error("*sqlite.Store has a Fleet: the status page would show a Fleet section for a single instance")
	}
}

// TestFleetSurfaceOnPostgres: a daemon on Postgres shows the fleet its
// store knows, in the API, on the status page and in /metrics, judging
// every heartbeat by the database's clock: node-e leads location eu under
// epoch 5; node-c, silent for an hour, is marked so and not counted.
func TestFleetSurfaceOnPostgres(t *testing.T) {
	db := pgtest.Database(t)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"items":[{"id":1}]}`)
	}))
	t.Cleanup(provider.Close)
	addr := e2e.FreeAddr(t)
	cfg := strings.Replace(postgresConfig, `  listen: ""`, "  listen: "+addr, 1) +
		"fleet:\n  node: node-b\n  lease: 10s\n"
	cfgPath := filepath.Join(t.TempDir(), "checks.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TP_PG_DSN": db, "TP_PROVIDER": provider.URL + "/items"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out bytes.Buffer
	go func() {
		done <- run(ctx, []string{"-c", cfgPath, "run"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &out, &out)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("run: exit %d\n%s", code, out.String())
		}
	})
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("/healthz", func() bool { status, _ := get("/healthz"); return status == http.StatusOK })

	// The schema is there once the daemon answers. What other instances
	// would have written, at the database's clock; the daemon's own row
	// too, as its heartbeat writes it.
	pgtest.Exec(t, db, `INSERT INTO fleet (location, holder, epoch, expires_at, renewed_at)
		VALUES ('eu', 'node-e', 5, now() + interval '1 minute', now());
	INSERT INTO fleet_nodes (node, location, started_at, heartbeat_at, version) VALUES
		('node-a', 'default', now() - interval '2 hours', now(), 'v1.3.0'),
		('node-c', 'default', now() - interval '2 hours', now() - interval '1 hour', 'v1.2.0'),
		('node-e', 'eu', now() - interval '2 hours', now() - interval '5 seconds', 'v1.3.0')
	ON CONFLICT DO NOTHING;
	INSERT INTO fleet_nodes (node, location, started_at, heartbeat_at, version)
		VALUES ('node-b', 'default', now(), now(), 'dev')
	ON CONFLICT (node) DO UPDATE SET heartbeat_at = now()`)

	if status, body := get("/healthz"); status != http.StatusOK || !strings.Contains(body, `"node":"node-b","location":"default"`) {
		t.Errorf("GET /healthz = %d %s, want 200 naming node-b", status, body)
	}
	status, body := get("/api/v1/fleet")
	for _, want := range []string{
		`"node":"node-b","location":"default"`,
		`{"node":"node-a","location":"default","version":"v1.3.0",`,
		`"alive":true},{"node":"node-b"`,
		`{"node":"node-c","location":"default","version":"v1.2.0",`,
		`"alive":false},{"node":"node-e"`,
		`{"location":"eu","holder":"node-e","epoch":5,"expires":"`,
		`"held":true}`,
	} {
		if status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /api/v1/fleet = %d %s\nlacks %s", status, body, want)
		}
	}

	_, page := get("/?refresh=0")
	rows := regexp.MustCompile(`<tr class="node" data-node="([^"]+)" data-role="([^"]+)"( data-silent)?>`).FindAllStringSubmatch(page, -1)
	var got []string
	for _, m := range rows {
		got = append(got, m[1]+" "+m[2]+m[3])
	}
	if g := strings.Join(got, ", "); !strings.Contains(g, "node-c standby data-silent") || !strings.Contains(g, "node-e leader") ||
		strings.Contains(g, "node-a standby data-silent") {
		t.Errorf("the status page's fleet rows are %q, want node-c silent and node-e leading", g)
	}
	if !strings.Contains(page, `<td><strong>leader</strong></td>
<td>5</td>`) {
		t.Error("the status page does not show node-e's epoch, 5")
	}

	// The count may have been cached before the rows were there.
	waitFor("toolpulse_fleet_nodes 3 (node-a, node-b, node-e)", func() bool {
		_, metrics := get("/metrics")
		return strings.Contains(metrics, "\ntoolpulse_fleet_nodes 3\n")
	})
}
