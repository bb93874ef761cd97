package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/toolpulse/toolpulse/results"
)

// TestUpgradeReadsOldRowsAsHTTP fills a database with every migration
// before the one that added results.kind, opens it with this release, and
// reads the old row back as an HTTP probe's; the schema then refuses a
// kind it does not know and MCP columns on a row that is not MCP.
func TestUpgradeReadsOldRowsAsHTTP(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	ms, err := loadMigrations(embedded)
	if err != nil {
		t.Fatal(err)
	}
	before := fstest.MapFS{}
	found := false
	for _, m := range ms {
		if strings.HasSuffix(m.name, "_results_probe_kind.sql") {
			found = true
			break
		}
		before[m.name] = &fstest.MapFile{Data: []byte(m.sql)}
	}
	if !found {
		t.Fatal("no migration named *_results_probe_kind.sql")
	}
	old := writerDB(t, path, writeParams)
	if err := migrate(ctx, old, before); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome,
		attempts, consumer, consumer_version, rule_hash) VALUES ('op-old', 'p', '2026-10-26T10:00:00.000Z', 10, 'pass', 1, 'c', '1', 'h')`); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Result(ctx, "op-old")
	if err != nil || got.Kind != results.ProbeHTTP || got.MCP != nil {
		t.Errorf("old row after upgrade: kind %q, mcp %+v, %v; want http and no mcp", got.Kind, got.MCP, err)
	}
	latest, err := s.Latest(ctx) // the latest_results view has the new columns too
	if err != nil || len(latest) != 1 || latest[0].Kind != results.ProbeHTTP {
		t.Errorf("Latest after upgrade: %+v, %v; want the old row as http", latest, err)
	}

	for _, tt := range []struct{ name, kind, tool, server string }{
		{"unknown kind", "grpc", "", ""},
		{"http with a tool", "http", "t", "http://h/mcp"},
		{"mcp without a server", "mcp", "t", ""},
	} {
		var tool, server any
		if tt.tool != "" {
			tool = tt.tool
		}
		if tt.server != "" {
			server = tt.server
		}
		_, err := s.writer.Exec(`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome,
			attempts, consumer, consumer_version, rule_hash, kind, mcp_tool, mcp_server)
			VALUES (?, 'p', '2026-10-26T10:01:00.000Z', 10, 'pass', 1, 'c', '1', 'h', ?, ?, ?)`, "op-"+tt.name, tt.kind, tool, server)
		if err == nil || !strings.Contains(err.Error(), "CHECK constraint failed") {
			t.Errorf("%s: got %v, want a CHECK constraint failure", tt.name, err)
		}
	}
}
