package checks

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// hostPID is the fleet.node a config without one gets in this process.
func hostPID(t *testing.T) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

const storageBase = "version: 1\nconsumers:\n  - {name: c, select: response.items}\n"

// TestLoadStoragePostgres: a postgres store takes its DSN through ${VAR},
// keeps no file path, and the DSN and its password are secrets that no
// printing of the config shows.
func TestLoadStoragePostgres(t *testing.T) {
	const dsn = "postgres://toolpulse:pg-pass-7f3a@127.0.0.1:5432/toolpulse?sslmode=disable"
	src := storageBase + "storage:\n  driver: postgres\n  dsn: ${TP_PG_DSN}\n  retention: 48h\nfleet:\n  node: ${TP_NODE:-}\n  lease: 2s\n"
	cfg, err := Parse("checks.yaml", []byte(src), "conf", mapEnv(map[string]string{"TP_PG_DSN": dsn}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Storage, (Storage{Driver: DriverPostgres, DSN: dsn, Retention: 48 * time.Hour}); got != want {
		t.Errorf("Storage = %+v (dsn %q), want %+v", got, got.DSN.Reveal(), want)
	}
	if got, want := cfg.Fleet, (Fleet{Node: hostPID(t), Lease: 2 * time.Second, Location: results.DefaultLocation}); got != want {
		t.Errorf("Fleet = %+v, want %+v: an empty node is the default", got, want)
	}
	secrets := cfg.Secrets()
	for _, s := range []string{dsn, "pg-pass-7f3a"} {
		if !slices.Contains(secrets, s) {
			t.Errorf("Secrets() = %q, want %q among them", secrets, s)
		}
	}
	for _, out := range []string{fmt.Sprintf("%v", cfg.Storage), fmt.Sprintf("%+v", cfg.Storage), fmt.Sprintf("%#v", cfg.Storage)} {
		if strings.Contains(out, "pg-pass-7f3a") {
			t.Errorf("printing the storage shows the password: %s", out)
		}
	}
}

// TestLoadStorageDSNErrorsHideIt: a DSN the loader refuses is never quoted.
func TestLoadStorageDSNErrorsHideIt(t *testing.T) {
	for _, dsn := range []string{"mysql://u:pg-pass-7f3a@h/db", "pg-pass-7f3a", "postgres://u:pg-pass-7f3a@h:bad/db"} {
		src := storageBase + "storage:\n  driver: postgres\n  dsn: " + strconv.Quote(dsn) + "\n"
		_, err := Parse("checks.yaml", []byte(src), "conf", noEnv)
		if err == nil {
			t.Errorf("dsn %q: loaded", dsn)
			continue
		}
		if strings.Contains(err.Error(), "pg-pass-7f3a") {
			t.Errorf("dsn %q: the error shows it: %v", dsn, err)
		}
	}
}

// TestLoadStorageSQLiteEmptyDSN: an empty dsn, as ${VAR:-} gives it, goes
// with the sqlite driver, so that one config serves both.
func TestLoadStorageSQLiteEmptyDSN(t *testing.T) {
	src := storageBase + "storage:\n  driver: ${TP_DRIVER:-sqlite}\n  dsn: ${TP_PG_DSN:-}\n"
	cfg, err := Parse("checks.yaml", []byte(src), "conf", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Storage.Driver != DriverSQLite || cfg.Storage.DSN != "" || cfg.Storage.Path == "" {
		t.Errorf("Storage = %+v, want sqlite at the default path", cfg.Storage)
	}
}

// TestLoadFleetLeaseBound: MinLease itself is accepted, anything shorter
// refused.
func TestLoadFleetLeaseBound(t *testing.T) {
	for _, tt := range []struct {
		lease string
		ok    bool
	}{{"2s", true}, {"1999ms", false}, {"0", false}, {"1m", true}} {
		_, err := Parse("checks.yaml", []byte(storageBase+"fleet: {lease: "+tt.lease+"}\n"), "conf", noEnv)
		if got := err == nil; got != tt.ok {
			t.Errorf("lease %s: loaded %v, want %v (%v)", tt.lease, got, tt.ok, err)
		}
	}
}

func TestDSNPassword(t *testing.T) {
	tests := []struct{ dsn, want string }{
		{"postgres://toolpulse:s3cret@127.0.0.1/toolpulse", "s3cret"},
		{"postgresql://toolpulse:s%40cret@db/toolpulse", "s@cret"},
		{"postgres://toolpulse@db/toolpulse?sslmode=disable&password=q-pass", "q-pass"},
		{"postgres://toolpulse@db/toolpulse", ""},
		{"host=db user=toolpulse password=kv-pass dbname=toolpulse", "kv-pass"},
		{"host=db password = 'two words \\' and \\\\' dbname=x", `two words ' and \`},
		{"password=last", "last"},
		{"host=db dbname=toolpulse", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := dsnPassword(tt.dsn); got != tt.want {
			t.Errorf("dsnPassword(%q) = %q, want %q", tt.dsn, got, tt.want)
		}
	}
}

// TestSchemaAcceptsPostgres: the schema takes a postgres store with its
// DSN from the environment, and the fleet section, as Load does.
func TestSchemaAcceptsPostgres(t *testing.T) {
	s := compiledSchema(t)
	for name, src := range map[string]string{
		"postgres":                 "version: 1\nstorage:\n  driver: postgres\n  dsn: ${TOOLPULSE_PG_DSN}\nfleet:\n  node: ${TOOLPULSE_NODE:-}\n  lease: 10s\n",
		"key=value":                "version: 1\nstorage: {driver: postgres, dsn: host=127.0.0.1 dbname=toolpulse}\nfleet: {node: web-1}\n",
		"sqlite with an empty dsn": "version: 1\nstorage:\n  path: toolpulse.db\n  dsn: ${TOOLPULSE_PG_DSN:-}\n",
	} {
		path := t.TempDir() + "/checks.yaml"
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path, noEnv); err != nil && !strings.Contains(err.Error(), "TOOLPULSE_PG_DSN is not set") {
			t.Errorf("%s: Load: %v", name, err)
		}
		if err := validate(t, s, path); err != nil {
			t.Errorf("%s: the schema rejects it: %v", name, err)
		}
	}
}
