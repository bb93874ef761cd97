package pgtest

import "testing"

// TestDatabase: a test gets an empty database of its own, which exists
// while it runs and is named in the DSN it is given.
func TestDatabase(t *testing.T) {
	var name string
	t.Run("own", func(t *testing.T) {
		dsn := Database(t)
		name = Exec(t, dsn, "SELECT current_database()")
		if got := Exec(t, dsn, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"); got != "0" {
			t.Errorf("a new database has %s tables, want 0", got)
		}
		Exec(t, dsn, "CREATE TABLE t (x int)")
	})
	if name == "" {
		return // skipped: no server
	}
	if got := Exec(t, Server(t), "SELECT count(*) FROM pg_database WHERE datname = '"+name+"'"); got != "0" {
		t.Errorf("database %s outlived its test", name)
	}
}
