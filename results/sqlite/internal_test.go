package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestEmbeddedMigrations(t *testing.T) {
	ms, err := loadMigrations(embedded)
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].name != "0001_init.sql" {
		t.Errorf("first migration: got %s, want 0001_init.sql", ms[0].name)
	}
}

func TestLoadMigrationsRejects(t *testing.T) {
	sql := &fstest.MapFile{Data: []byte("CREATE TABLE t (x);")}
	tests := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"none", fstest.MapFS{}, "no migrations"},
		{"starts at 2", fstest.MapFS{"0002_b.sql": sql}, "version 2, want 1"},
		{"gap", fstest.MapFS{"0001_a.sql": sql, "0003_c.sql": sql}, "version 3, want 2"},
		{"repeat", fstest.MapFS{"0001_a.sql": sql, "0001_b.sql": sql}, "version 1, want 2"},
		{"bad name", fstest.MapFS{"0001_a.sql": sql, "2_b.sql": sql}, "name must look like"},
		{"not sql", fstest.MapFS{"0001_a.sql": sql, "README.md": sql}, "name must look like"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadMigrations(tt.fsys)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func writerDB(t *testing.T, path, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", dsn(path, params))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func versions(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SELECT version || ' ' || applied_at FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func tableExists(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestMigrateIncrementally upgrades a database one release at a time and
// checks that each migration runs once, in its own transaction.
func TestMigrateIncrementally(t *testing.T) {
	ctx := context.Background()
	db := writerDB(t, filepath.Join(t.TempDir(), "m.db"), writeParams)
	v1 := fstest.MapFS{"0001_a.sql": {Data: []byte("CREATE TABLE a (x); INSERT INTO a VALUES (1);")}}
	v2 := fstest.MapFS{
		"0001_a.sql": v1["0001_a.sql"],
		"0002_b.sql": {Data: []byte("CREATE TABLE b (y); INSERT INTO a VALUES (2);")},
	}
	broken := fstest.MapFS{
		"0001_a.sql": v1["0001_a.sql"],
		"0002_b.sql": {Data: []byte("CREATE TABLE b (y); INSERT INTO no_such_table VALUES (2);")},
	}

	if err := migrate(ctx, db, v1); err != nil {
		t.Fatal(err)
	}
	afterV1 := versions(t, db)
	if len(afterV1) != 1 {
		t.Fatalf("versions after v1: %q", afterV1)
	}

	// A failing migration leaves nothing behind, not even its first statement.
	err := migrate(ctx, db, broken)
	if err == nil || !strings.Contains(err.Error(), "0002_b.sql") {
		t.Fatalf("broken migration: got %v, want an error naming 0002_b.sql", err)
	}
	if tableExists(t, db, "b") {
		t.Error("table b exists after its migration failed")
	}
	if got := versions(t, db); !equal(got, afterV1) {
		t.Errorf("versions after a failed migration: got %q, want %q", got, afterV1)
	}

	for range 2 {
		if err := migrate(ctx, db, v2); err != nil {
			t.Fatal(err)
		}
	}
	got := versions(t, db)
	if len(got) != 2 || got[0] != afterV1[0] || !strings.HasPrefix(got[1], "2 ") {
		t.Errorf("versions after v2 twice: got %q, want %q plus version 2", got, afterV1)
	}
	var rows int
	if err := db.QueryRow("SELECT count(*) FROM a").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Errorf("rows in a: got %d, want 2 (each migration ran exactly once)", rows)
	}

	// And back to a binary that only knows v1.
	if err := migrate(ctx, db, v1); err == nil || !strings.Contains(err.Error(), "schema version 2, this toolpulse knows up to 1") {
		t.Errorf("older binary: got %v, want a schema-too-new error", err)
	}
}

func equal(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// TestCheckPragmas shows why Open reads its settings back: go-sqlite3
// ignores a misspelt DSN parameter without a word.
func TestCheckPragmas(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, params, want string
	}{
		{"as Open connects", writeParams, ""},
		{"misspelt journal mode", "_journal_mod=WAL&_foreign_keys=on", `journal_mode is "delete", want wal`},
		{"other journal mode", "_journal_mode=TRUNCATE&_foreign_keys=on", `journal_mode is "truncate", want wal`},
		{"no foreign keys", "_journal_mode=WAL", "foreign_keys is 0, want 1"},
		{"misspelt foreign keys", "_journal_mode=WAL&_foreign_key=on", "foreign_keys is 0, want 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := writerDB(t, filepath.Join(t.TempDir(), "p.db"), tt.params)
			err := checkPragmas(ctx, db)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestReaderPoolCannotWrite(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.reader.Exec(`INSERT INTO shapes (fingerprint, canonical, first_seen, last_seen) VALUES ('f', 'c', 'a', 'b')`)
	if err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("write through the reader pool: got %v, want a readonly error", err)
	}
}

func TestDSNEscapesPath(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/var/lib/toolpulse/toolpulse.db", "file:/var/lib/toolpulse/toolpulse.db?x=1"},
		{"/tmp/my checks/a#b?c%d.db", "file:/tmp/my%20checks/a%23b%3Fc%25d.db?x=1"},
	}
	for _, tt := range tests {
		if got := dsn(tt.path, "x=1"); got != tt.want {
			t.Errorf("dsn(%q): got %q, want %q", tt.path, got, tt.want)
		}
	}
}

// TestQueriesUseIndexes checks that the queries the CLI, API and alerting
// make most often are index searches, not table scans or sorts.
func TestQueriesUseIndexes(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const since = "'2026-10-26T00:00:00.000Z'"
	queries := map[string]string{
		"latest of a probe":        `SELECT * FROM results WHERE probe = 'p' ORDER BY started_at DESC LIMIT 20`,
		"since T":                  `SELECT * FROM results WHERE started_at >= ` + since + ` ORDER BY started_at`,
		"probe since T":            `SELECT * FROM results WHERE probe = 'p' AND started_at >= ` + since,
		"non-pass of a probe":      `SELECT * FROM results WHERE probe = 'p' AND outcome IN ('contract_error', 'unavailable') AND started_at >= ` + since,
		"non-pass of a probe (<>)": `SELECT * FROM results WHERE probe = 'p' AND outcome <> 'pass' AND started_at >= ` + since + ` ORDER BY started_at DESC`,
		"one outcome of a probe":   `SELECT * FROM results WHERE probe = 'p' AND outcome = 'contract_error' ORDER BY started_at DESC LIMIT 1`,
		"attempts of a result":     `SELECT * FROM attempts WHERE operation_id = 'x' ORDER BY number`,
		"runs with a shape":        `SELECT * FROM results WHERE shape_fingerprint = 'f'`,
	}
	for name, q := range queries {
		rows, err := s.reader.Query("EXPLAIN QUERY PLAN " + q)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "; ")
		if !strings.Contains(text, "USING") || strings.Contains(text, "SCAN") || strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want an index search without a scan or sort", name, text)
		}
	}
}
