// Package pgtest gives a test a database of its own on the Postgres server
// that TOOLPULSE_PG_DSN names (.ci/run starts a throwaway one and exports
// it). Without it the test is skipped, unless TOOLPULSE_PG_TEST=required
// or CI=true, where it fails: CI must not pass by skipping. Databases are
// made and dropped with psql, so that the Postgres driver keeps one owner
// (the store package).
package pgtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"testing"
)

// EnvDSN is the variable that names the server: a DSN any database of
// which the role may create databases from, such as
// postgres://toolpulse@127.0.0.1:5433/postgres?sslmode=disable.
const EnvDSN = "TOOLPULSE_PG_DSN"

// Server returns the DSN of the server's maintenance database, or skips
// (fails under CI) when there is none.
func Server(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn != "" {
		if _, err := exec.LookPath("psql"); err != nil {
			tb.Fatalf("%s is set but psql is not on PATH: %v", EnvDSN, err)
		}
		return dsn
	}
	if os.Getenv("TOOLPULSE_PG_TEST") == "required" || os.Getenv("CI") == "true" {
		tb.Fatalf("no Postgres: %s is not set (.ci/run starts one and sets it)", EnvDSN)
	}
	tb.Skipf("no Postgres: set %s to a server's DSN to run this test (TOOLPULSE_PG_TEST=required fails instead)", EnvDSN)
	return ""
}

// Database creates an empty database for the test, dropped when it ends
// (with the connections still open to it), and returns its DSN.
func Database(tb testing.TB) string {
	tb.Helper()
	server := Server(tb)
	u, err := url.Parse(server)
	if err != nil {
		tb.Fatalf("%s: %v", EnvDSN, err)
	}
	name := "toolpulse_test_" + randomHex(8)
	Exec(tb, server, `CREATE DATABASE "`+name+`"`)
	tb.Cleanup(func() { Exec(tb, server, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`) })
	u.Path = "/" + name
	return u.String()
}

// Exec runs SQL on the database dsn names with psql, failing the test
// with psql's own words when it fails.
func Exec(tb testing.TB, dsn, sql string) string {
	tb.Helper()
	cmd := exec.Command("psql", "--no-psqlrc", "--quiet", "--tuples-only", "--no-align", "-v", "ON_ERROR_STOP=1",
		"--dbname", dsn, "--command", sql)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("psql %q: %v: %s", sql, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(bytes.TrimSpace(out.Bytes()))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
