package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

func TestPruneLoop(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	store, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// Each run of p listed a tool definition of its own, as a server that
	// puts a build id in its tool's description does.
	record := func(id string, age time.Duration) {
		t.Helper()
		r := results.Result{OperationID: id, Probe: "p", StartedAt: time.Now().Add(-age), Outcome: results.Pass,
			Attempts:   []results.Attempt{{Number: 1, StartedAt: time.Now().Add(-age), HTTPStatus: 200}},
			HTTPStatus: 200, Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"},
			Kind: results.ProbeMCP, MCP: &results.MCPTarget{Tool: "search", Server: "http://127.0.0.1:1/mcp"},
			Tool: &results.ToolDefinition{Fingerprint: runDefinition(id), Canonical: `{"description":"build ` + id + `"}`}}
		if err := store.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	record("old", 48*time.Hour)
	record("old-2", 47*time.Hour)
	record("new", time.Minute)

	// The definitions only pruned runs listed go with them; the kept
	// run's, p's latest, stays.
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	definitions := func() []string {
		t.Helper()
		var left []string
		rows, err := db.Query(`SELECT fingerprint FROM tool_definitions ORDER BY fingerprint`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var fp string
			if err := rows.Scan(&fp); err != nil {
				t.Fatal(err)
			}
			left = append(left, fp)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return left
	}
	wantDefinitions := []string{runDefinition("new")}

	loopCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pruneLoop(loopCtx, store, 24*time.Hour, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := store.Result(ctx, "old")
		left := definitions()
		if errors.Is(err, sqlite.ErrNotFound) && slices.Equal(left, wantDefinitions) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention did not prune: result old: %v; tool definitions left %q, want %q", err, left, wantDefinitions)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if _, err := store.Result(ctx, "new"); err != nil {
		t.Errorf("the result within retention is gone: %v", err)
	}
}

// runDefinition is the made-up fingerprint of the definition run id listed.
func runDefinition(id string) string {
	return fmt.Sprintf("%016x", crc32.ChecksumIEEE([]byte(id)))
}
