package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// pgRun is the Postgres database of one `run --store postgres`: created
// fresh on the server --dsn names, dropped at the end.
type pgRun struct {
	server string // the DSN given, of any database on the server
	dsn    string // the fresh database's
	name   string
	// postmaster is the server's main process, whose children (backends,
	// WAL writer, checkpointer...) serve the database.
	postmaster int
}

// newPGRun creates a database of its own for the run on the server, and
// finds the server's processes in /proc: Postgres must run on this machine
// for its CPU to be measured.
func newPGRun(ctx context.Context, server string, prog *progress) (*pgRun, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("--dsn: %w", err)
	}
	p := &pgRun{server: server, name: "toolpulse_bench_" + randomName()}
	prog.printf("creating the database %s on %s", p.name, u.Redacted())
	if _, err := psql(ctx, server, `CREATE DATABASE "`+p.name+`";`); err != nil {
		return nil, err
	}
	u.Path = "/" + p.name
	p.dsn = u.String()
	out, err := psql(ctx, p.dsn, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer';")
	if err == nil {
		var pid int
		if pid, err = strconv.Atoi(out); err == nil {
			p.postmaster, err = parentPID(pid)
		}
	}
	if err != nil {
		p.drop()
		return nil, fmt.Errorf("find the Postgres server's processes (it must run on this machine): %w", err)
	}
	return p, nil
}

func randomName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// drop drops the run's database, closing what is still connected to it.
func (p *pgRun) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = psql(ctx, p.server, `DROP DATABASE IF EXISTS "`+p.name+`" WITH (FORCE);`)
}

// cpu is the CPU the server used so far: the postmaster's and that of
// each of its children, living (utime + stime) or reaped (the
// postmaster's cutime + cstime). It is the whole server's; the bench's
// server serves only the run's database.
func (p *pgRun) cpu() (time.Duration, error) {
	self, err := procFields(p.postmaster)
	if err != nil {
		return 0, fmt.Errorf("the postmaster's /proc: %w", err)
	}
	ticks := self.utime + self.stime + self.cutime + self.cstime
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		f, err := procFields(pid)
		if err != nil || f.ppid != p.postmaster {
			continue // gone since the listing, or not the server's
		}
		ticks += f.utime + f.stime
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// size is the database's size on disk.
func (p *pgRun) size(ctx context.Context) (int64, error) {
	out, err := psql(ctx, p.dsn, "SELECT pg_database_size(current_database());")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(out, 10, 64)
}

// windowStats counts the runs of [from, to) in the database, as
// windowStats does in SQLite.
func (p *pgRun) windowStats(ctx context.Context, from, to time.Time) (runCounts, error) {
	var c runCounts
	lo, hi := quoteSQL(from.UTC().Format(time.RFC3339Nano)), quoteSQL(to.UTC().Format(time.RFC3339Nano))
	out, err := psql(ctx, p.dsn, fmt.Sprintf(`
SELECT count(*), count(*) FILTER (WHERE outcome = 'pass'), count(*) FILTER (WHERE outcome = 'contract_error'),
       count(*) FILTER (WHERE outcome = 'unavailable')
FROM results WHERE started_at >= %s AND started_at < %s;
SELECT count(*) FROM results WHERE started_at >= %s;
`, lo, hi, lo))
	if err != nil {
		return c, fmt.Errorf("count the runs: %w", err)
	}
	out = strings.ReplaceAll(out, "|", " ")
	if _, err := fmt.Sscan(out, &c.runs, &c.pass, &c.contractError, &c.unavailable, &c.runsSinceStart); err != nil {
		return c, fmt.Errorf("count the runs: %q: %w", out, err)
	}
	return c, nil
}

// withPostgresStorage rewrites the storage: line of a config written by
// harness.Config.YAML for the Postgres database at dsn, every result kept.
func withPostgresStorage(yaml, dsn string) (string, error) {
	lines := strings.Split(yaml, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "storage:") {
			lines[i] = fmt.Sprintf("storage: {driver: postgres, dsn: %s, retention: 0s}", strconv.Quote(dsn))
			return strings.Join(lines, "\n"), nil
		}
	}
	return "", fmt.Errorf("the config has no storage: line to rewrite")
}

// procEntry is what the bench reads of /proc/PID/stat for Postgres.
type procEntry struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

func procFields(pid int) (procEntry, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procEntry{}, fmt.Errorf("no command name in %q", b)
	}
	// After the name: state is field 3, ppid 4, utime 14 ... cstime 17.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procEntry{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	var e procEntry
	if e.ppid, err = strconv.Atoi(f[1]); err != nil {
		return e, err
	}
	for j, dst := range []*int64{&e.utime, &e.stime, &e.cutime, &e.cstime} {
		if *dst, err = strconv.ParseInt(f[11+j], 10, 64); err != nil {
			return e, err
		}
	}
	return e, nil
}

func parentPID(pid int) (int, error) {
	e, err := procFields(pid)
	return e.ppid, err
}
