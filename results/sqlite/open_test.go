package sqlite_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results/sqlite"
)

func TestWALModeIsOn(t *testing.T) {
	s, path := newStore(t)
	if err := s.Record(context.Background(), passAfterRetry("op-1")); err != nil {
		t.Fatal(err)
	}
	// journal_mode=wal is a property of the file: any new connection sees it.
	var mode string
	if err := operatorDB(t, path, "mode=ro").QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode: got %q, want wal", mode)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Errorf("no write-ahead log next to the database after a Record: %v", err)
	}
}

func TestOpenPathWithSpecialCharacters(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, root, path string) {
		t.Helper()
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatalf("Open(%q): %v", path, err)
		}
		if err := s.Record(ctx, passAfterRetry("op-1")); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// The file is where we asked, and nothing else was created: a '?'
		// or '#' taken as URI syntax would have truncated the name.
		var files []string
		err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(path)
		if want := []string{abs}; !slices.Equal(files, want) {
			t.Errorf("files under %s: got %q, want %q", root, files, want)
		}
		s = openStore(t, path)
		if _, err := s.Result(ctx, "op-1"); err != nil {
			t.Errorf("Result after reopening: %v", err)
		}
	}

	t.Run("absolute", func(t *testing.T) {
		root := t.TempDir()
		check(t, root, filepath.Join(root, "my checks #1 ?x=y&z %20", "new dir", "tool pulse.db"))
	})
	t.Run("relative", func(t *testing.T) {
		root := t.TempDir()
		t.Chdir(root)
		root, _ = os.Getwd() // the resolved name, if TempDir is a symlink
		check(t, root, filepath.Join("data dir#", "tool?pulse.db"))
	})
}

func TestMigrationsAppliedOnceAndIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, contractError("op-1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := queryMaps(t, operatorDB(t, path, "mode=ro"), "SELECT version, applied_at FROM schema_migrations ORDER BY version")
	if len(before) == 0 || before[0]["version"] != int64(1) {
		t.Fatalf("schema_migrations after first open: %v, want version 1 first", before)
	}
	for i, row := range before {
		if row["version"] != int64(i+1) {
			t.Errorf("schema_migrations row %d: version %v, want %d", i, row["version"], i+1)
		}
	}

	for range 3 {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	after := queryMaps(t, operatorDB(t, path, "mode=ro"), "SELECT version, applied_at FROM schema_migrations ORDER BY version")
	if !reflect.DeepEqual(after, before) {
		t.Errorf("schema_migrations changed on reopen:\n got  %v\n want %v", after, before)
	}
	s = openStore(t, path)
	if _, err := s.Result(ctx, "op-1"); err != nil {
		t.Errorf("result recorded before reopening: %v", err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, contractError("op-1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A newer toolpulse migrated this file further.
	future := operatorDB(t, path, "_journal_mode=WAL")
	if _, err := future.Exec(`INSERT INTO schema_migrations VALUES (9999, '2030-01-01T00:00:00.000Z')`); err != nil {
		t.Fatal(err)
	}
	future.Close()
	sum := fileSum(t, path)

	s, err = sqlite.Open(ctx, path)
	if err == nil {
		s.Close()
		t.Fatal("Open of a database at schema version 9999: got nil error")
	}
	if !errors.Is(err, sqlite.ErrSchemaTooNew) {
		t.Errorf("got %v, want ErrSchemaTooNew", err)
	}
	for _, want := range []string{"newer", "9999", path} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := fileSum(t, path); !bytes.Equal(got, sum) {
		t.Errorf("refused database file changed")
	}
	op := operatorDB(t, path, "mode=ro")
	if n := count(t, op, "SELECT count(*) FROM results"); n != 1 {
		t.Errorf("results rows after refusal: got %d, want 1", n)
	}
	if n := count(t, op, "SELECT max(version) FROM schema_migrations"); n != 9999 {
		t.Errorf("schema version after refusal: got %d, want 9999", n)
	}
}

func fileSum(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

func TestOpenRefusesForeignDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	other := operatorDB(t, path, "")
	if _, err := other.Exec(`CREATE TABLE results (x); INSERT INTO results VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	other.Close()

	s, err := sqlite.Open(context.Background(), path)
	if err == nil {
		s.Close()
		t.Fatal("Open of another program's database: got nil error")
	}
	if !strings.Contains(err.Error(), "not a toolpulse database") {
		t.Errorf("got %v, want it to say not a toolpulse database", err)
	}
	op := operatorDB(t, path, "mode=ro")
	if n := count(t, op, "SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'"); n != 0 {
		t.Errorf("schema_migrations was created in a foreign database")
	}
	if n := count(t, op, "SELECT x FROM results"); n != 42 {
		t.Errorf("foreign data changed: got %d, want 42", n)
	}
}

func TestOpenEmptyPath(t *testing.T) {
	_, err := sqlite.Open(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "empty database path") {
		t.Errorf("Open(\"\"): got %v, want an empty database path error", err)
	}
}
