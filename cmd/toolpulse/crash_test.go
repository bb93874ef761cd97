package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

var crashSeed = flag.Uint64("crash-seed", 0, "TestCrashSafety: replay the kill moments of this seed (0: seed from the clock)")

const (
	// crashProbes run at once: one that fails for the alert checks, the
	// rest against a healthy provider, for load.
	crashProbes = 20
	// crashFailingKills is how many kills happen while the failing probe
	// fails, at least; crashRecoverKills how many follow its recovery, the
	// first in the cycle where it recovers.
	crashFailingKills = 15
	crashRecoverKills = 12
	// crashMaxFailingKills bounds the failing phase, which goes on until
	// the firing alert is in the outbox.
	crashMaxFailingKills = 30
	// crashMinUptime and crashMaxUptime bound how long each process lives
	// before its SIGKILL.
	crashMinUptime = 50 * time.Millisecond
	crashMaxUptime = 600 * time.Millisecond
)

// TestCrashSafety kills the real daemon with SIGKILL at random moments
// while twenty probes run at once, and checks after every kill and at the
// end that the database is sound, that every run the daemon logged as done
// is stored (the "probe run" line is written after the run's transaction
// commits), that no run is stored twice or half, and that the one failure
// episode of the failing probe reaches Slack as exactly one firing and one
// resolved message, kills around the recovery included.
//
// The kill moments come from a seed that the test logs; -crash-seed
// replays them (the daemon's own timing still varies).
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the daemon two dozen times; skipped with -short")
	}
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test -run TestCrashSafety ./cmd/toolpulse -args -crash-seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	e2e.Binary(t) // built before the clock starts

	failing := provider.New()
	failing.SetDrifted(true) // the list-only consumer fails: contract_error
	failURL := e2e.Serve(t, slowly(failing.Handler()))
	loadURL := e2e.Serve(t, slowly(provider.New().Handler()))
	slack, slackURL := e2e.Slack(t)

	dir := t.TempDir()
	config, db := e2e.Config(t, dir, crashConfig(failURL, loadURL, slackURL)), filepath.Join(dir, "results.db")

	began := time.Now()
	h := newCrashHistory()
	kills := 0
	// cycle starts a daemon, calls during (if any) at a random moment of
	// its life, kills it and checks what it left.
	cycle := func(during func()) {
		t.Helper()
		uptime := crashMinUptime + time.Duration(rng.Int64N(int64(crashMaxUptime-crashMinUptime)+1))
		at := time.Duration(rng.Int64N(int64(uptime)))
		d := e2e.Start(t, config)
		start := time.Now()
		if during != nil {
			time.Sleep(at)
			during()
			time.Sleep(uptime - at)
		} else {
			time.Sleep(uptime)
		}
		_ = d.Stop(syscall.SIGKILL)
		kills++
		h.add(t, kills, start, d.Log.String())
		when := fmt.Sprintf("after kill %d (%v of uptime)", kills, uptime.Round(time.Millisecond))
		if during != nil {
			when += fmt.Sprintf(", the provider recovered %v after the start", at.Round(time.Millisecond))
		}
		checkCrashStore(t, db, h, when)
		if t.Failed() {
			t.FailNow() // the first broken state is the one worth reading
		}
	}

	// The failing episode: kills until the firing alert is in the outbox.
	for kills < crashFailingKills || countRows(t, db, "SELECT count(*) FROM alerts WHERE probe = 'search' AND kind = 'firing'") == 0 {
		if kills >= crashMaxFailingKills {
			t.Fatalf("no firing alert recorded for search after %d kills", kills)
		}
		cycle(nil)
	}
	// The recovery happens at a random moment of a process's life, and
	// kills go on around it.
	cycle(func() { failing.SetDrifted(false) })
	for range crashRecoverKills - 1 {
		cycle(nil)
	}

	// The last process runs undisturbed until the outbox is drained and
	// every probe has run a few more times, then stops cleanly.
	before := countRows(t, db, "SELECT count(*) FROM results")
	d := e2e.Start(t, config)
	start := time.Now()
	d.WaitFor("the firing and resolved messages, an empty outbox and more runs", func() bool {
		return slack.CountPrefix(":red_circle: search ") >= 1 &&
			slack.CountPrefix(":large_green_circle: search resolved") >= 1 &&
			countRows(t, db, "SELECT count(*) FROM alerts WHERE state = 'pending'") == 0 &&
			countRows(t, db, "SELECT count(*) FROM results") >= before+3*crashProbes
	})
	time.Sleep(time.Second) // room for a late repeat to show
	if err := d.Stop(syscall.SIGTERM); err != nil {
		d.T.Errorf("SIGTERM: %v, want exit 0", err)
	}
	h.add(t, kills+1, start, d.Log.String())
	checkCrashStore(t, db, h, "at the end")
	for _, state := range []string{"pending", "failed"} {
		if n := countRows(t, db, "SELECT count(*) FROM alerts WHERE state = ?", state); n != 0 {
			d.T.Errorf("%d alerts %s at the end, want 0 (Slack took every post)", n, state)
		}
	}
	checkCrashSlack(t, db, slack, h)

	t.Logf("%d kills in %v; %d runs logged as recorded, %d stored; %d Slack posts",
		kills, time.Since(began).Round(time.Millisecond), len(h.runs),
		countRows(t, db, "SELECT count(*) FROM results"), len(slack.Messages()))
}

// crashConfig is the config of TestCrashSafety: the probe search against
// the failing provider, the others against the healthy one, often enough
// and with few enough slots that runs overlap and wait for each other.
func crashConfig(failingURL, loadURL, slackURL string) harness.Config {
	cfg := harness.Fast(failingURL, slackURL, "search")
	cfg.Storage.Retention = harness.Retain(0)
	cfg.MaxConcurrency = 3
	cfg.Defaults = harness.Defaults{Interval: 150 * time.Millisecond, Jitter: 100 * time.Millisecond, Timeout: 2 * time.Second,
		Retries: harness.Retries{MaxAttempts: 1, Budget: 4 * time.Second}}
	for i := 1; i < crashProbes; i++ {
		cfg.Probes = append(cfg.Probes, harness.SearchProbe(fmt.Sprintf("load_%02d", i), loadURL+"/search"))
	}
	return cfg
}

// slowly delays every answer by 5 to 25 ms, so that runs hold their
// concurrency slot long enough to overlap.
func slowly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(5+rand.IntN(21)) * time.Millisecond)
		h.ServeHTTP(w, r)
	})
}

// crashHistory is what the daemons said in their logs, over every process.
type crashHistory struct {
	procs      []crashProc
	runs       map[string]loggedRun   // by operation id: "probe run" lines
	unrecorded map[string]bool        // operation ids of "recording the run failed"
	enqueued   map[int64]loggedAlert  // by alert id: "alert enqueued" lines
	delivered  map[int64]map[int]bool // alert id -> processes that logged "alert delivered"
}

// crashProc is one daemon process, numbered from 1.
type crashProc struct {
	n     int
	start time.Time
}

type loggedRun struct {
	probe, outcome string
	proc           int
}

type loggedAlert struct {
	probe, kind, operationID string
}

func newCrashHistory() *crashHistory {
	return &crashHistory{
		runs:       map[string]loggedRun{},
		unrecorded: map[string]bool{},
		enqueued:   map[int64]loggedAlert{},
		delivered:  map[int64]map[int]bool{},
	}
}

// add reads the logs of process n, which started at start and has exited.
// A line the kill cut short is ignored; every other line must be a log
// record, and none may be an error: nothing in this test should make the
// daemon fail.
func (h *crashHistory) add(t *testing.T, n int, start time.Time, logs string) {
	t.Helper()
	h.procs = append(h.procs, crashProc{n: n, start: start})
	for _, line := range completeLines(logs) {
		kv := parseLogLine(line)
		if kv["msg"] == "" || kv["level"] == "" {
			t.Errorf("process %d wrote a line that is not a log record: %s", n, line)
			continue
		}
		if kv["level"] == "ERROR" {
			t.Errorf("process %d logged an error: %s", n, line)
		}
		switch kv["msg"] {
		case "probe run":
			op := kv["operation_id"]
			if prev, ok := h.runs[op]; ok {
				t.Errorf("operation %s logged by process %d and again by process %d: a run was replayed", op, prev.proc, n)
			}
			h.runs[op] = loggedRun{probe: kv["probe"], outcome: kv["outcome"], proc: n}
		case "recording the run failed":
			h.unrecorded[kv["operation_id"]] = true
		case "alert enqueued":
			id, err := strconv.ParseInt(kv["alert_id"], 10, 64)
			if err != nil {
				t.Errorf("process %d: alert enqueued without an alert id: %s", n, line)
				continue
			}
			if prev, ok := h.enqueued[id]; ok {
				t.Errorf("alert %d enqueued twice: %+v, then by process %d: %s", id, prev, n, line)
			}
			h.enqueued[id] = loggedAlert{probe: kv["probe"], kind: kv["kind"], operationID: kv["operation_id"]}
		case "alert delivered":
			id, err := strconv.ParseInt(kv["alert_id"], 10, 64)
			if err != nil {
				t.Errorf("process %d: alert delivered without an alert id: %s", n, line)
				continue
			}
			if h.delivered[id] == nil {
				h.delivered[id] = map[int]bool{}
			}
			h.delivered[id][n] = true
		}
	}
}

// procAt returns the number of the process that was alive at at: the last
// one started before it.
func (h *crashHistory) procAt(at time.Time) int {
	n := 0
	for _, p := range h.procs {
		if !p.start.After(at) {
			n = p.n
		}
	}
	return n
}

// completeLines returns the lines of s that end in a newline.
func completeLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	var out []string
	for _, l := range lines {
		if strings.HasSuffix(l, "\n") {
			out = append(out, strings.TrimSuffix(l, "\n"))
		}
	}
	return out
}

// parseLogLine reads one line of slog's text format (key=value, values
// quoted when needed). It stops at the first thing that is not key=value.
func parseLogLine(line string) map[string]string {
	kv := map[string]string{}
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimLeft(line, " ") {
		eq := strings.IndexByte(line, '=')
		if eq <= 0 || strings.ContainsAny(line[:eq], ` "`) {
			return kv
		}
		key := line[:eq]
		line = line[eq+1:]
		if strings.HasPrefix(line, `"`) {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return kv
			}
			kv[key], _ = strconv.Unquote(q)
			line = line[len(q):]
			continue
		}
		end := strings.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		kv[key] = line[:end]
		line = line[end:]
	}
	return kv
}

// openCrashDB opens db read-only, as an operator would, or returns nil when
// no process got as far as creating it.
func openCrashDB(t *testing.T, db string) *sql.DB {
	t.Helper()
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	conn, err := sql.Open("sqlite3", "file:"+db+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// queryStrings runs q and returns each row's columns joined by " | ".
func queryStrings(t *testing.T, conn *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = v.String
			if !v.Valid {
				parts[i] = "NULL"
			}
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// checkCrashStore checks the database a killed (or stopped) daemon left
// against everything the daemons logged so far.
func checkCrashStore(t *testing.T, db string, h *crashHistory, when string) {
	t.Helper()
	conn := openCrashDB(t, db)
	if conn == nil {
		if len(h.runs) > 0 {
			t.Errorf("%s: no database, but %d runs were logged", when, len(h.runs))
		}
		return
	}
	defer conn.Close()
	if tables := queryStrings(t, conn, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'results'"); len(tables) == 0 {
		// Killed before the first migration committed.
		if len(h.runs) > 0 {
			t.Errorf("%s: no results table, but %d runs were logged", when, len(h.runs))
		}
		if got := queryStrings(t, conn, "PRAGMA integrity_check"); len(got) != 1 || got[0] != "ok" {
			t.Errorf("%s: PRAGMA integrity_check:\n%s", when, strings.Join(got, "\n"))
		}
		return
	}

	for _, check := range []struct{ name, query string }{
		{"PRAGMA integrity_check is not ok", "PRAGMA integrity_check"},
		{"PRAGMA foreign_key_check", "PRAGMA foreign_key_check"},
		{"duplicate operation ids", "SELECT operation_id, count(*) FROM results GROUP BY operation_id HAVING count(*) > 1"},
		// A replayed run would keep its start under a new operation id.
		{"runs stored twice under different operation ids (probe, started_at, count)",
			"SELECT probe, started_at, count(*) FROM results GROUP BY probe, started_at HAVING count(*) > 1"},
		// A result and its attempts are one transaction.
		{"results whose attempts are not all stored (operation_id, attempts, stored)", `
			SELECT r.operation_id, r.attempts, count(a.number) FROM results r
			LEFT JOIN attempts a ON a.operation_id = r.operation_id
			GROUP BY r.id HAVING count(a.number) <> r.attempts`},
		// So are its drift and alerts (retention is off: nothing is pruned).
		{"alerts without their run (id, kind, operation_id)",
			"SELECT id, kind, operation_id FROM alerts WHERE operation_id NOT IN (SELECT operation_id FROM results)"},
		{"drifts without their run (id, operation_id)",
			"SELECT id, operation_id FROM drifts WHERE operation_id NOT IN (SELECT operation_id FROM results)"},
	} {
		got := queryStrings(t, conn, check.query)
		if check.query == "PRAGMA integrity_check" && len(got) == 1 && got[0] == "ok" {
			continue
		}
		if len(got) > 0 {
			t.Errorf("%s: %s:\n%s", when, check.name, strings.Join(got, "\n"))
		}
	}

	// Every run logged as done is stored, as logged.
	stored := map[string]string{}
	for _, row := range queryStrings(t, conn, "SELECT operation_id, probe, outcome FROM results") {
		op, rest, _ := strings.Cut(row, " | ")
		stored[op] = rest
	}
	var missing []string
	for op, r := range h.runs {
		if h.unrecorded[op] {
			continue // its failure is already an error
		}
		got, ok := stored[op]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("%s (%s %s, process %d)", op, r.probe, r.outcome, r.proc))
		case got != r.probe+" | "+r.outcome:
			t.Errorf("%s: operation %s logged as %s %s, stored as %s", when, op, r.probe, r.outcome, got)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%s: %d of %d runs logged as recorded are not in results:\n%s",
			when, len(missing), len(h.runs), strings.Join(missing, "\n"))
	}

	// Every alert logged as enqueued is in the outbox; every one logged as
	// delivered is marked so.
	for id, a := range h.enqueued {
		got := queryStrings(t, conn, "SELECT probe, kind, operation_id FROM alerts WHERE id = ?", id)
		if want := a.probe + " | " + a.kind + " | " + a.operationID; len(got) != 1 || got[0] != want {
			t.Errorf("%s: alert %d logged as enqueued (%s), stored as %q", when, id, want, got)
		}
	}
	for id := range h.delivered {
		if got := queryStrings(t, conn, "SELECT state FROM alerts WHERE id = ?", id); len(got) != 1 || got[0] != "delivered" {
			t.Errorf("%s: alert %d logged as delivered, stored state %q", when, id, got)
		}
	}

	// One failure episode of search: at most one firing and one resolved
	// alert, never a reminder, at most one drift alert (on the recovery),
	// and its alert state says firing exactly while the episode is open.
	kinds := map[string]int{}
	for _, row := range queryStrings(t, conn, "SELECT kind, count(*) FROM alerts WHERE probe = 'search' GROUP BY kind") {
		k, n, _ := strings.Cut(row, " | ")
		kinds[k], _ = strconv.Atoi(n)
	}
	for kind, most := range map[string]int{"firing": 1, "resolved": 1, "reminder": 0, "shape_drift": 1} {
		if kinds[kind] > most {
			t.Errorf("%s: %d %s alerts for search in the outbox, want at most %d", when, kinds[kind], kind, most)
		}
	}
	if kinds["resolved"] > kinds["firing"] {
		t.Errorf("%s: search resolved without having fired: %v", when, kinds)
	}
	open := kinds["firing"] == 1 && kinds["resolved"] == 0
	firing := queryStrings(t, conn, "SELECT firing FROM alert_state WHERE probe = 'search'")
	if got := len(firing) == 1 && firing[0] == "1"; got != open {
		t.Errorf("%s: alert_state.firing of search is %v, but its outbox holds %v", when, firing, kinds)
	}
}

// checkCrashSlack checks what reached Slack over every process: each post
// is an alert of the outbox, search's episode was announced once and
// resolved once, and an alert was sent again only when the process that
// sent it was killed before it recorded the delivery (the outbox delivers
// at least once; a repeat after a recorded delivery is a bug).
func checkCrashSlack(t *testing.T, db string, slack *harness.Slack, h *crashHistory) {
	t.Helper()
	conn := openCrashDB(t, db)
	if conn == nil {
		t.Fatal("no database at the end")
	}
	defer conn.Close()

	type sentAlert struct {
		kind, probe string
		at          []time.Time
	}
	byID := map[int64]*sentAlert{}
	for _, p := range slack.Messages() {
		kind := string(p.Kind)
		row := queryStrings(t, conn, "SELECT id FROM alerts WHERE kind = ? AND probe = ? AND operation_id = ?", kind, p.Probe, p.OperationID)
		if len(row) != 1 {
			t.Errorf("Slack got %q (operation %s), which matches %d alerts in the outbox, want 1", p.Text, p.OperationID, len(row))
			continue
		}
		id, _ := strconv.ParseInt(row[0], 10, 64)
		if byID[id] == nil {
			byID[id] = &sentAlert{kind: kind, probe: p.Probe}
		}
		byID[id].at = append(byID[id].at, p.At)
	}

	episodes := map[string]int{}
	for id, a := range byID {
		if a.probe == "search" {
			episodes[a.kind]++
		}
		for _, at := range a.at[:len(a.at)-1] {
			n := h.procAt(at)
			if h.delivered[id][n] {
				t.Errorf("alert %d (%s %s) sent %d times: process %d recorded its delivery, and it was sent again",
					id, a.kind, a.probe, len(a.at), n)
				continue
			}
			t.Logf("alert %d (%s %s) sent again: process %d was killed after Slack took it, before it recorded the delivery",
				id, a.kind, a.probe, n)
		}
	}
	if episodes["firing"] != 1 || episodes["resolved"] != 1 || episodes["reminder"] != 0 {
		t.Errorf("search's one failure episode reached Slack as %v, want one firing and one resolved alert", episodes)
	}
	for _, row := range queryStrings(t, conn, "SELECT id, kind, probe FROM alerts WHERE state = 'delivered'") {
		ids, _, _ := strings.Cut(row, " | ")
		id, _ := strconv.ParseInt(ids, 10, 64)
		if byID[id] == nil {
			t.Errorf("alert %s is marked delivered, but Slack never got it", row)
		}
	}
}
