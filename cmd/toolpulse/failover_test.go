package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
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

var failoverSeed = flag.Uint64("failover-seed", 0, "TestFailover: replay the fault moments of this seed (0: seed from the clock)")

const (
	// failoverNodes instances share one database; failoverProbes run at
	// once every failoverInterval, one of them failing, then recovering.
	failoverNodes    = 3
	failoverProbes   = 50
	failoverInterval = time.Second
	// failoverLease is fleet.lease: short, to keep the test short.
	failoverLease = 2 * time.Second
	// failoverBound is how soon after a fault exactly one node must lead
	// (SPEC §12: the lease plus one probe interval), and failoverPoll how
	// often /healthz is asked meanwhile; one poll's worth is allowed on
	// top for the asking.
	failoverBound = failoverLease + failoverInterval
	failoverPoll  = 100 * time.Millisecond
	// failoverKills is how many times the leader gets SIGKILL.
	failoverKills = 10
)

// TestFailover runs three real instances on one real Postgres, fifty
// probes at 1 s (one failing, then recovering) and a loopback Slack, and
// hurts the leader: SIGKILL at random moments ten times (restarting it
// each time), SIGSTOP for longer than the lease then SIGCONT (up to three
// times, until a pause lands inside one of its transactions), its
// database connections cut, and Postgres restarted under load. After
// each fault exactly one node must lead within the lease plus one
// interval (each node's /healthz says leader or standby). At the end the
// store must hold every run a log says was recorded, none twice, no
// write of a deposed epoch, and sound rows; Slack must have each alert
// transition once, a second copy only inside the window the docs
// describe (the sender lost before it marked the delivery), counted and
// reported.
//
// The test starts a Postgres of its own (it restarts it), as the user
// postgres when run as root, like .ci/postgres.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("hurts a three-node fleet for about a minute; skipped with -short")
	}
	cleanup := timeCleanup(t)
	pg := startTestPostgres(t)
	cleanup.mark(t, "the kept logs, the servers and the config")
	seed := *failoverSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test -run TestFailover ./cmd/toolpulse -args -failover-seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	e2e.Binary(t)

	failing := provider.New()
	failing.SetDrifted(true) // the list-only consumer fails: contract_error
	failURL := e2e.Serve(t, slowly(failing.Handler()))
	loadURL := e2e.Serve(t, slowly(provider.New().Handler()))
	slack, slackURL := e2e.Slack(t)
	dsn := pg.database(t, "fleet")
	config := e2e.Config(t, t.TempDir(), failoverConfig(failURL, loadURL, slackURL))
	_ = os.WriteFile(config, []byte(failoverYAML(t, config)), 0o644)

	f := &fleet{t: t, pg: pg, config: config, dsn: dsn, began: time.Now()}
	t.Cleanup(func() { f.keepLogs(seed) })
	cleanup.mark(t, "the instances")
	defer cleanup.start()
	for i := range failoverNodes {
		f.start(i)
	}
	// The first election, and the skip while the daemon elects nobody.
	f.waitOneLeader("the start", time.Now(), 15*time.Second)

	// SIGKILL ten times at random moments, the failing probe recovering
	// half-way: its resolved alert crosses failovers as its firing did.
	for k := 1; k <= failoverKills; k++ {
		time.Sleep(time.Duration(300+rng.IntN(1700)) * time.Millisecond)
		if k == failoverKills/2+1 {
			f.waitFor("the firing alert of search delivered", 20*time.Second, func() bool {
				return slack.CountPrefix(":red_circle: search ") >= 1
			})
			failing.SetDrifted(false)
			f.logf("search recovers")
		}
		leader := f.leader()
		_ = f.nodes[leader].proc.Stop(syscall.SIGKILL)
		f.nodes[leader].dead = true
		f.logf("kill -9 %s (kill %d)", f.nodes[leader].name, k)
		f.waitOneLeader(fmt.Sprintf("kill %d of %s", k, f.nodes[leader].name), time.Now(), failoverBound)
		f.start(leader) // it comes back as a standby
	}

	// SIGSTOP the leader for twice the lease: another takes over; on
	// SIGCONT the old one finds it deposed, and steps down. The hard case
	// is a leader paused inside a transaction (its fenced write holds the
	// lease row FOR SHARE): up to three pauses, until one lands there.
	for round := 1; round <= 3; round++ {
		leader := f.leader()
		f.nodes[leader].proc.Signal(syscall.SIGSTOP)
		f.nodes[leader].stopped = true
		time.Sleep(20 * time.Millisecond)
		open := pg.openTransactions(t, f.nodes[leader].proc.Pid())
		f.logf("SIGSTOP %s (pause %d), paused in %d open transactions", f.nodes[leader].name, round, open)
		f.waitOneLeader("SIGSTOP of "+f.nodes[leader].name, time.Now(), failoverBound)
		time.Sleep(2*failoverLease - failoverBound)
		f.nodes[leader].proc.Signal(syscall.SIGCONT)
		f.nodes[leader].stopped = false
		f.logf("SIGCONT %s", f.nodes[leader].name)
		f.waitOneLeader("SIGCONT of "+f.nodes[leader].name, time.Now(), failoverBound)
		if open > 0 {
			break
		}
	}

	// Cut the leader's database connections: every backend of its
	// connections is terminated at once.
	leader := f.leader()
	cutAt := time.Now()
	cut := pg.terminate(t, f.nodes[leader].proc.Pid())
	if cut == 0 {
		t.Errorf("cutting %s's database connections: it had none to cut", f.nodes[leader].name)
	}
	f.logf("cut %d backends of %s", cut, f.nodes[leader].name)
	f.waitOneLeader("the cut connections of "+f.nodes[leader].name, cutAt, failoverBound)

	// Restart Postgres under load.
	f.logf("restarting Postgres")
	pg.restart(t)
	f.logf("Postgres is back")
	f.waitOneLeader("the restart of Postgres", time.Now(), failoverBound)

	// Quiet: the resolved alert and an empty outbox, then a clean stop.
	f.waitFor("the resolved alert of search and an empty outbox", 30*time.Second, func() bool {
		return slack.CountPrefix(":large_green_circle: search resolved") >= 1 &&
			pg.count(t, dsn, "SELECT count(*) FROM alerts WHERE state <> 'delivered'") == 0
	})
	time.Sleep(time.Second) // room for a late repeat to show
	for _, n := range f.nodes {
		if err := n.proc.Stop(syscall.SIGTERM); err != nil {
			t.Errorf("%s: SIGTERM: %v, want exit 0", n.name, err)
		}
	}
	f.procs = append(f.procs, f.nodes...)

	h := f.history()
	checkFailoverStore(t, pg, dsn, h)
	checkFailoverSlack(t, pg, dsn, slack, h)
	t.Logf("%d processes in %v; %d runs logged as recorded, %d stored; %d Slack posts; %d failovers measured: slowest %v",
		len(f.procs), time.Since(f.began).Round(time.Millisecond), len(h.runs),
		pg.count(t, dsn, "SELECT count(*) FROM results"), len(slack.Messages()), len(f.takeovers), f.slowest())
}

// cleanupSlow is how long a cleanup may take before it says where it went.
var cleanupSlow = 5 * time.Second

// cleanupTimer times a test's cleanup, which should take a second, and
// logs each stage's time when the whole took more than five: defer start
// in the test function, and call mark after registering the cleanups of a
// stage (they run before the mark's).
type cleanupTimer struct {
	began, last time.Time
	stages      []string
}

// timeCleanup returns t's cleanupTimer; the cleanups registered before it
// are not timed, those registered after its last mark are "Postgres".
func timeCleanup(t *testing.T) *cleanupTimer {
	c := &cleanupTimer{}
	t.Cleanup(func() {
		if c.began.IsZero() {
			return
		}
		c.stage("Postgres")
		if took := time.Since(c.began); took > cleanupSlow {
			t.Logf("the cleanup took %v: %s", took.Round(time.Millisecond), strings.Join(c.stages, ", "))
		}
	})
	return c
}

func (c *cleanupTimer) start() { c.began, c.last = time.Now(), time.Now() }

func (c *cleanupTimer) stage(name string) {
	now := time.Now()
	c.stages = append(c.stages, fmt.Sprintf("%s %v", name, now.Sub(c.last).Round(time.Millisecond)))
	c.last = now
}

// mark ends the stage name: the cleanups registered since the mark
// before.
func (c *cleanupTimer) mark(t *testing.T, name string) {
	t.Cleanup(func() {
		if !c.began.IsZero() {
			c.stage(name)
		}
	})
}

// keepLogs writes every process's whole log to a file that outlives the
// test, should it have failed: the failure shows only their tails.
func (f *fleet) keepLogs(seed uint64) {
	if !f.t.Failed() {
		return
	}
	var b strings.Builder
	seen := map[*fleetNode]bool{}
	for _, p := range append(append([]*fleetNode{}, f.procs...), f.nodes...) {
		if seen[p] {
			continue
		}
		seen[p] = true
		fmt.Fprintf(&b, "=== %s, pid %d, started %.3fs\n%s", p.name, p.proc.Pid(), p.started.Sub(f.began).Seconds(), p.proc.Log.String())
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("toolpulse-failover-%d.log", seed))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		f.t.Logf("keeping the logs: %v", err)
		return
	}
	f.t.Logf("every process's log: %s", path)
}

// failoverConfig is the config of TestFailover before failoverYAML makes
// it a fleet's: search against the failing provider, the rest against the
// healthy one, every second.
func failoverConfig(failingURL, loadURL, slackURL string) harness.Config {
	cfg := harness.Fast(failingURL, slackURL, "search")
	cfg.Storage.Path = "FLEET-STORAGE"
	cfg.Storage.Retention = harness.Retain(0)
	cfg.Server.Listen = "${TOOLPULSE_LISTEN}"
	cfg.MaxConcurrency = 16
	cfg.Defaults = harness.Defaults{Interval: failoverInterval, Jitter: 200 * time.Millisecond, Timeout: 2 * time.Second,
		Retries: harness.Retries{MaxAttempts: 1, Budget: 4 * time.Second}}
	for i := 1; i < failoverProbes; i++ {
		cfg.Probes = append(cfg.Probes, harness.SearchProbe(fmt.Sprintf("load_%02d", i), loadURL+"/search"))
	}
	return cfg
}

// failoverYAML is the config at path with its storage on Postgres and a
// fleet section, node name and listen address from the environment.
func failoverYAML(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.Contains(text, "path: FLEET-STORAGE") {
		t.Fatalf("the harness wrote the storage path differently:\n%s", text)
	}
	text = strings.Replace(text, "path: FLEET-STORAGE", `driver: postgres, dsn: "${TOOLPULSE_PG_DSN}"`, 1)
	return text + fmt.Sprintf("fleet: {node: \"${TOOLPULSE_NODE}\", lease: %v}\n", failoverLease)
}

// fleetNode is one instance, as its latest process runs it.
type fleetNode struct {
	name, addr string
	proc       *e2e.Daemon
	started    time.Time
	stopped    bool // SIGSTOPped: it cannot answer
	dead       bool // killed, not yet restarted
}

// fleet is the instances of TestFailover and what happened to them.
type fleet struct {
	t           *testing.T
	pg          *testPostgres
	config, dsn string
	began       time.Time
	nodes       []*fleetNode
	procs       []*fleetNode // every process that has exited, in order
	takeovers   []time.Duration
	events      []string
}

func (f *fleet) logf(format string, args ...any) {
	line := fmt.Sprintf("%7.3fs ", time.Since(f.began).Seconds()) + fmt.Sprintf(format, args...)
	f.events = append(f.events, line)
	f.t.Log(line)
}

// start starts node i, a fresh process of it if it ran before.
func (f *fleet) start(i int) {
	f.t.Helper()
	for len(f.nodes) <= i {
		f.nodes = append(f.nodes, nil)
	}
	name := fmt.Sprintf("node-%d", i+1)
	addr := e2e.FreeAddr(f.t)
	if old := f.nodes[i]; old != nil {
		f.procs = append(f.procs, old)
		addr = old.addr
	}
	d := e2e.StartCommand(f.t, harness.Command{
		Args: []string{"-c", f.config, "run", "--grace", "2s"},
		Env:  []string{"TOOLPULSE_PG_DSN=" + f.dsn, "TOOLPULSE_NODE=" + name, "TOOLPULSE_LISTEN=" + addr},
	})
	f.nodes[i] = &fleetNode{name: name, addr: addr, proc: d, started: time.Now()}
}

// roles asks every node that can answer what it is: "leader", "standby",
// or what went wrong.
func (f *fleet) roles() []string {
	out := make([]string, len(f.nodes))
	for i, n := range f.nodes {
		switch {
		case n.dead:
			out[i] = "dead"
			continue
		case n.stopped:
			out[i] = "stopped"
			continue
		}
		code, body := healthzBodyWithin("http://"+n.addr+"/healthz", 500*time.Millisecond)
		if role := healthzRole(body); code == 200 && role != "" {
			out[i] = role
		} else {
			out[i] = fmt.Sprintf("%d %s", code, strings.TrimSpace(body))
		}
	}
	return out
}

// leader is the node that leads now; the test fails without exactly one.
func (f *fleet) leader() int {
	f.t.Helper()
	roles := f.roles()
	leader := -1
	for i, r := range roles {
		if r == "leader" {
			if leader >= 0 {
				f.t.Fatalf("two leaders: %s\nevents:\n%s", f.describe(roles), strings.Join(f.events, "\n"))
			}
			leader = i
		}
	}
	if leader < 0 {
		f.t.Fatalf("no leader: %s\nevents:\n%s", f.describe(roles), strings.Join(f.events, "\n"))
	}
	return leader
}

func (f *fleet) describe(roles []string) string {
	parts := make([]string, len(roles))
	for i, r := range roles {
		parts[i] = f.nodes[i].name + "=" + r
	}
	return strings.Join(parts, " ")
}

// waitOneLeader waits until exactly one node says it leads and every
// other node that can answer says it stands by, failing the test unless
// that happens within bound of since (and a poll). A node that leads
// alone (epoch 0, as a single instance does) fails it at once.
func (f *fleet) waitOneLeader(after string, since time.Time, bound time.Duration) {
	f.t.Helper()
	for {
		roles := f.roles()
		leaders, standbys := 0, 0
		for _, r := range roles {
			switch r {
			case "leader":
				leaders++
			case "standby":
				standbys++
			}
		}
		answering := 0
		for _, n := range f.nodes {
			if !n.stopped && !n.dead {
				answering++
			}
		}
		alone := 0
		for _, r := range roles {
			if r == "alone" {
				alone++
			}
		}
		if alone > 0 {
			f.t.Fatalf("after %s: %d nodes say in /healthz that they lead alone (no lease, epoch 0), as a single instance does: %s",
				after, alone, f.describe(roles))
		}
		if leaders == 1 && leaders+standbys == answering {
			took := time.Since(since)
			f.takeovers = append(f.takeovers, took)
			f.logf("after %s: %s within %v", after, f.describe(roles), took.Round(time.Millisecond))
			return
		}
		if time.Since(since) > bound+failoverPoll {
			f.t.Fatalf("after %s: not exactly one leader within %v: %s\n%s\nevents:\n%s",
				after, bound, f.describe(roles), f.diagnose(), strings.Join(f.events, "\n"))
		}
		time.Sleep(failoverPoll)
	}
}

// diagnose says, for a failure of waitOneLeader, what the database's
// sessions were doing (a lock wait is a takeover held up by a paused
// writer) and how long the fleet took to settle after all, if it did
// within ten more seconds.
func (f *fleet) diagnose() string {
	var b strings.Builder
	if f.pg != nil {
		out, err := exec.Command("psql", "--no-psqlrc", "--quiet", "--no-align", "--dbname", f.pg.dsn, "--command",
			`SELECT pid, client_port, state, wait_event_type, wait_event, now() - xact_start AS in_xact, left(query, 120) AS query
			 FROM pg_stat_activity WHERE datname = current_database() OR backend_type = 'client backend' ORDER BY pid`).CombinedOutput()
		fmt.Fprintf(&b, "the database's sessions (%v):\n%s\n", err, out)
	}
	start := time.Now()
	for time.Since(start) < 10*time.Second {
		roles := f.roles()
		leaders, others := 0, 0
		for _, r := range roles {
			switch r {
			case "leader":
				leaders++
			case "standby", "dead", "stopped":
			default:
				others++
			}
		}
		if leaders == 1 && others == 0 {
			fmt.Fprintf(&b, "it settled %v later: %s", time.Since(start).Round(time.Millisecond), f.describe(roles))
			return b.String()
		}
		time.Sleep(failoverPoll)
	}
	fmt.Fprintf(&b, "still unsettled 10 s later: %s", f.describe(f.roles()))
	return b.String()
}

func (f *fleet) waitFor(what string, timeout time.Duration, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out after %v waiting for %s\nevents:\n%s", timeout, what, strings.Join(f.events, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (f *fleet) slowest() time.Duration {
	var m time.Duration
	for _, d := range f.takeovers {
		m = max(m, d)
	}
	return m.Round(time.Millisecond)
}

// failoverHistory is what the processes said in their logs.
type failoverHistory struct {
	// runs: operation id -> "probe | outcome" of the "probe run" lines
	// that say the run was recorded, and of "probe run recorded late".
	runs map[string]string
	// late: the operation ids of "probe run recorded late", written from
	// a write queue under the term then current.
	late map[string]bool
	// delivered: alert id -> when each process logged its delivery.
	delivered map[int64][]time.Time
}

// history reads every process's log. A line a kill cut short is ignored.
func (f *fleet) history() *failoverHistory {
	h := &failoverHistory{runs: map[string]string{}, late: map[string]bool{}, delivered: map[int64][]time.Time{}}
	for _, p := range f.procs {
		for _, line := range completeLines(p.proc.Log.String()) {
			kv := parseLogLine(line)
			switch {
			case kv["msg"] == "probe run" && kv["recorded"] != "false", kv["msg"] == "probe run recorded late":
				h.runs[kv["operation_id"]] = kv["probe"] + " | " + kv["outcome"]
				if kv["msg"] == "probe run recorded late" {
					h.late[kv["operation_id"]] = true
				}
			case kv["msg"] == "alert delivered":
				id, err := strconv.ParseInt(kv["alert_id"], 10, 64)
				at, terr := time.Parse(time.RFC3339Nano, kv["time"])
				if err != nil || terr != nil {
					f.t.Errorf("%s: an alert delivered line without an alert id or time: %s", p.name, line)
					continue
				}
				h.delivered[id] = append(h.delivered[id], at)
			}
		}
	}
	return h
}

// checkFailoverStore checks the shared database after the faults.
func checkFailoverStore(t *testing.T, pg *testPostgres, dsn string, h *failoverHistory) {
	t.Helper()
	for _, check := range []struct{ name, query string }{
		{"operation ids stored twice", "SELECT operation_id, count(*) FROM results GROUP BY operation_id HAVING count(*) > 1"},
		// A node never runs a probe while its previous run goes on (the
		// limiter's claim): two runs of one node overlapping in time are a
		// probe scheduled twice on it.
		{"runs of one probe by one node overlapping in time: scheduled twice on it (node, probe, each run's start, ms, epoch, handover, operation id)", `
			SELECT node, probe, prev_start || ' ' || prev_ms || 'ms epoch ' || prev_epoch || CASE WHEN prev_handover THEN ' handover ' ELSE ' ' END || prev_op,
			       started_at || ' ' || duration_ms || 'ms epoch ' || epoch || CASE WHEN handover THEN ' handover ' ELSE ' ' END || operation_id
			FROM (SELECT node, probe, started_at, duration_ms, epoch, handover, operation_id,
			             lag(started_at) OVER w AS prev_start, lag(duration_ms) OVER w AS prev_ms, lag(epoch) OVER w AS prev_epoch,
			             lag(handover) OVER w AS prev_handover, lag(operation_id) OVER w AS prev_op
			      FROM results WINDOW w AS (PARTITION BY node, probe ORDER BY started_at, id)) r
			WHERE prev_start IS NOT NULL AND started_at < prev_start + (prev_ms - 1) * interval '1 millisecond'`},
		{"results whose attempts are not all stored (operation_id, attempts, stored)", `
			SELECT r.operation_id, r.attempts, count(a.number) FROM results r
			LEFT JOIN attempts a ON a.operation_id = r.operation_id
			GROUP BY r.id, r.operation_id, r.attempts HAVING count(a.number) <> r.attempts`},
		{"alerts without their run (id, kind, operation_id)",
			"SELECT id, kind, operation_id FROM alerts WHERE operation_id NOT IN (SELECT operation_id FROM results)"},
		{"drifts without their run (id, operation_id)",
			"SELECT id, operation_id FROM drifts WHERE operation_id NOT IN (SELECT operation_id FROM results)"},
		{"alerts of a handed-over run (id, kind, operation_id)",
			"SELECT a.id, a.kind, a.operation_id FROM alerts a JOIN results r USING (operation_id) WHERE r.handover"},
		{"results without a node (id, operation_id)", "SELECT id, operation_id FROM results WHERE node IS NULL OR node = ''"},
	} {
		if got := pg.query(t, dsn, check.query); got != "" {
			t.Errorf("%s:\n%s", check.name, got)
		}
	}

	checkFailoverOverlaps(t, pg, dsn, h)

	// No write of a deposed epoch: in the order they committed (id), the
	// epochs of a location's leader-made results and alerts never go down.
	for _, q := range []struct{ what, query string }{
		{"results", "SELECT id, location, epoch FROM results WHERE NOT handover ORDER BY id"},
		{"alerts", "SELECT a.id, r.location, a.epoch FROM alerts a JOIN results r USING (operation_id) ORDER BY a.id"},
	} {
		last := map[string][2]int64{}
		rows := 0
		for _, row := range strings.Split(pg.query(t, dsn, q.query), "\n") {
			if row == "" {
				continue
			}
			rows++
			f := strings.Split(row, "|")
			id, _ := strconv.ParseInt(f[0], 10, 64)
			epoch, _ := strconv.ParseInt(f[2], 10, 64)
			if epoch <= 0 {
				t.Errorf("%s %d of location %s has epoch %d: a fleet's leader writes under its lease", q.what, id, f[1], epoch)
			}
			if prev, ok := last[f[1]]; ok && epoch < prev[1] {
				t.Errorf("%s %d of location %s was written under epoch %d after %s %d under epoch %d: a deposed leader's write was accepted",
					q.what, id, f[1], epoch, q.what, prev[0], prev[1])
			}
			last[f[1]] = [2]int64{id, epoch}
		}
		if q.what == "results" && rows == 0 {
			t.Error("no results stored by a leader")
		}
	}

	// Every run logged as recorded is stored, as logged.
	stored := map[string]string{}
	for _, row := range strings.Split(pg.query(t, dsn, "SELECT operation_id, probe, outcome FROM results"), "\n") {
		if op, rest, ok := strings.Cut(row, "|"); ok {
			stored[op] = strings.ReplaceAll(rest, "|", " | ")
		}
	}
	var missing []string
	for op, want := range h.runs {
		got, ok := stored[op]
		switch {
		case !ok:
			missing = append(missing, op+" ("+want+")")
		case got != want:
			t.Errorf("operation %s logged as %s, stored as %s", op, want, got)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%d of %d runs logged as recorded are not stored:\n%s", len(missing), len(h.runs), strings.Join(missing, "\n"))
	}
	if len(h.runs) == 0 {
		t.Error("no run was logged as recorded")
	}

	// search's one failure episode: one firing and one resolved alert, no
	// reminder, and its state closed.
	kinds := map[string]int{}
	for _, row := range strings.Split(pg.query(t, dsn, "SELECT kind, count(*) FROM alerts WHERE probe = 'search' GROUP BY kind"), "\n") {
		if k, n, ok := strings.Cut(row, "|"); ok {
			kinds[k], _ = strconv.Atoi(n)
		}
	}
	if kinds["firing"] != 1 || kinds["resolved"] != 1 || kinds["reminder"] != 0 {
		t.Errorf("search's one failure episode is %v in the outbox, want one firing and one resolved alert", kinds)
	}
	if got := pg.query(t, dsn, "SELECT firing FROM alert_state WHERE probe = 'search'"); got != "f" && got != "0" {
		t.Errorf("alert_state.firing of search is %q after its recovery", got)
	}
	if got := pg.query(t, dsn, "SELECT kind, probe FROM alerts WHERE probe <> 'search'"); got != "" {
		t.Errorf("alerts of probes that always passed:\n%s", got)
	}
}

// checkFailoverOverlaps checks the runs of one probe by two nodes at
// once. Only a leader's runs decide (alerts, drift): two of them
// overlapping in time mean two leaders, unless one waited in its node's
// write queue and was written later under the term then current (logged
// "probe run recorded late"). A leader's run overlapping another node's
// handover is allowed and documented: a lapsed, paused or cut-off node
// probing on while another leads (on SIGCONT a paused leader runs every
// probe it missed before it finds its lease gone); those are counted and
// reported.
func checkFailoverOverlaps(t *testing.T, pg *testPostgres, dsn string, h *failoverHistory) {
	t.Helper()
	rows := pg.query(t, dsn, `
		SELECT a.probe, a.operation_id, b.operation_id, a.handover OR b.handover,
		       a.node || ' epoch ' || a.epoch || CASE WHEN a.handover THEN ' handover' ELSE '' END || ' started ' || a.started_at || ' for ' || a.duration_ms || 'ms',
		       b.node || ' epoch ' || b.epoch || CASE WHEN b.handover THEN ' handover' ELSE '' END || ' started ' || b.started_at || ' for ' || b.duration_ms || 'ms'
		FROM results a JOIN results b ON a.probe = b.probe AND a.id < b.id AND a.node <> b.node
		WHERE b.started_at < a.started_at + (a.duration_ms - 1) * interval '1 millisecond'
		  AND a.started_at < b.started_at + (b.duration_ms - 1) * interval '1 millisecond'
		ORDER BY a.started_at`)
	handovers := 0
	for _, row := range strings.Split(rows, "\n") {
		f := strings.Split(row, "|")
		if len(f) != 6 {
			continue
		}
		switch {
		case f[3] == "t":
			handovers++
		case h.late[f[1]] || h.late[f[2]]:
			t.Logf("%s: two leaders' runs overlap, one written late from a write queue (allowed): %s (%s); %s (%s)", f[0], f[4], f[1], f[5], f[2])
		default:
			t.Errorf("%s: two runs decided by two leaders at once: %s (operation %s) and %s (operation %s)", f[0], f[4], f[1], f[5], f[2])
		}
	}
	t.Logf("runs of one probe by two nodes at once, one of them a handover (a lapsed or paused node probing on while another led): %d", handovers)
}

// checkFailoverSlack checks what reached Slack: each post is an alert of
// the outbox, search's episode arrived as one firing and one resolved
// message, and an alert reached Slack twice only when no process had
// logged its delivery before the second copy (the sender was lost between
// Slack's answer and marking the row: the documented window, counted and
// reported; a copy after a marked delivery is a bug).
func checkFailoverSlack(t *testing.T, pg *testPostgres, dsn string, slack *harness.Slack, h *failoverHistory) {
	t.Helper()
	sent := map[int64][]time.Time{}
	kinds := map[string]map[int64]bool{}
	for _, m := range slack.Messages() {
		row := pg.query(t, dsn, fmt.Sprintf("SELECT id FROM alerts WHERE kind = '%s' AND probe = '%s' AND operation_id = '%s'",
			m.Kind, m.Probe, m.OperationID))
		id, err := strconv.ParseInt(row, 10, 64)
		if err != nil {
			t.Errorf("Slack got %q (operation %s), which is not one alert of the outbox (%q)", m.Text, m.OperationID, row)
			continue
		}
		sent[id] = append(sent[id], m.At)
		if kinds[string(m.Kind)] == nil {
			kinds[string(m.Kind)] = map[int64]bool{}
		}
		kinds[string(m.Kind)][id] = true
	}
	if len(kinds["firing"]) != 1 || len(kinds["resolved"]) != 1 || len(kinds["reminder"]) != 0 {
		t.Errorf("search's one failure episode reached Slack as %v, want one firing and one resolved alert", kinds)
	}
	duplicates := 0
	for id, at := range sent {
		if len(at) < 2 {
			continue
		}
		duplicates += len(at) - 1
		marked := h.delivered[id]
		sort.Slice(marked, func(i, j int) bool { return marked[i].Before(marked[j]) })
		for _, again := range at[1:] {
			if len(marked) > 0 && marked[0].Before(again) {
				t.Errorf("alert %d reached Slack again at %v, after its delivery was recorded at %v", id,
					again.Format(time.RFC3339Nano), marked[0].Format(time.RFC3339Nano))
			}
		}
		t.Logf("alert %d reached Slack %d times: its sender was lost before it recorded the delivery (the documented window)", id, len(at))
	}
	t.Logf("duplicate Slack posts in the documented window: %d", duplicates)
	for id := range h.delivered {
		if len(sent[id]) == 0 {
			t.Errorf("alert %d was logged as delivered, but Slack never got it", id)
		}
	}
}

// healthzBodyWithin is healthzBody with its own timeout.
func healthzBodyWithin(url string, timeout time.Duration) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan struct{})
	var code int
	var body string
	go func() {
		code, body = healthzBody(url)
		close(done)
	}()
	select {
	case <-done:
		return code, body
	case <-ctx.Done():
		return 0, "no answer within " + timeout.String()
	}
}

// testPostgres is a Postgres server of a test's own: a throwaway cluster
// on a loopback port in a temporary directory, as .ci/postgres starts
// one, that the test may restart and whose backends it may terminate.
type testPostgres struct {
	bin, dir string
	port     int
	dsn      string // of the maintenance database
}

// startTestPostgres starts one, skipping without Debian's postgresql
// (failing under CI=true or TOOLPULSE_PG_TEST=required).
func startTestPostgres(t *testing.T) *testPostgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		if os.Getenv("CI") == "true" || os.Getenv("TOOLPULSE_PG_TEST") == "required" {
			t.Fatal("no Postgres server binaries (/usr/lib/postgresql/*/bin, Debian package postgresql)")
		}
		t.Skip("no Postgres server binaries (/usr/lib/postgresql/*/bin, Debian package postgresql; TOOLPULSE_PG_TEST=required fails instead)")
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatalf("Postgres is installed but psql is not on PATH: %v", err)
	}
	sort.Strings(bins)
	pg := &testPostgres{bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "toolpulse-failover-pg-")
	if err != nil {
		t.Fatal(err)
	}
	pg.dir = dir
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Getuid() == 0 { // initdb refuses root: the cluster is postgres's
		pg.run(t, "chown", "postgres", dir)
	}
	addr := e2e.FreeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	pg.port, _ = strconv.Atoi(port)
	pg.run(t, pg.bin+"/initdb", "--pgdata="+dir+"/data", "--username=toolpulse", "--auth=trust", "--encoding=UTF8")
	pg.run(t, pg.bin+"/pg_ctl", "--pgdata="+dir+"/data", "--log="+dir+"/log", "--wait", "-o",
		fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off", pg.port, dir), "start")
	t.Cleanup(func() {
		_ = pg.command(pg.bin+"/pg_ctl", "--pgdata="+dir+"/data", "--mode=immediate", "stop").Run()
	})
	pg.dsn = fmt.Sprintf("postgres://toolpulse@127.0.0.1:%d/postgres?sslmode=disable", pg.port)
	return pg
}

// command runs as the cluster's owner.
func (pg *testPostgres) command(name string, args ...string) *exec.Cmd {
	if os.Getuid() == 0 && name != "chown" {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

func (pg *testPostgres) run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := pg.command(name, args...).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(pg.dir, "log"))
		t.Fatalf("%s %s: %v\n%s\nserver log:\n%s", filepath.Base(name), strings.Join(args, " "), err, out, log)
	}
}

// database creates a database and returns its DSN.
func (pg *testPostgres) database(t *testing.T, name string) string {
	t.Helper()
	pg.query(t, pg.dsn, `CREATE DATABASE "`+name+`"`)
	u, _ := url.Parse(pg.dsn)
	u.Path = "/" + name
	return u.String()
}

// restart restarts the server (fast shutdown: every session is ended, as
// when the database fails over or is upgraded) and waits for it.
func (pg *testPostgres) restart(t *testing.T) {
	t.Helper()
	pg.run(t, pg.bin+"/pg_ctl", "--pgdata="+pg.dir+"/data", "--log="+pg.dir+"/log", "--wait", "--mode=fast", "restart")
}

// query runs SQL with psql and returns its rows, columns split by |.
func (pg *testPostgres) query(t *testing.T, dsn, sql string) string {
	t.Helper()
	cmd := exec.Command("psql", "--no-psqlrc", "--quiet", "--tuples-only", "--no-align", "-v", "ON_ERROR_STOP=1",
		"--dbname", dsn, "--command", sql)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("psql %q: %v: %s", sql, err, stderr)
	}
	return strings.TrimSpace(string(out))
}

func (pg *testPostgres) count(t *testing.T, dsn, sql string) int {
	t.Helper()
	n, err := strconv.Atoi(pg.query(t, dsn, sql))
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// terminate ends the server's backends of process pid's connections and
// returns how many it ended. A backend is found by its client's port,
// which the kernel's socket table ties to pid's sockets: no guessing from
// application names.
func (pg *testPostgres) terminate(t *testing.T, pid int) int {
	t.Helper()
	ports := pg.clientPortList(t, pid)
	if ports == "" {
		return 0
	}
	n, _ := strconv.Atoi(pg.query(t, pg.dsn, "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE client_port IN ("+
		ports+") AND client_addr = '127.0.0.1') t"))
	return n
}

// openTransactions is how many of process pid's sessions are inside a
// transaction, waiting for it.
func (pg *testPostgres) openTransactions(t *testing.T, pid int) int {
	t.Helper()
	ports := pg.clientPortList(t, pid)
	if ports == "" {
		return 0
	}
	return pg.count(t, pg.dsn, "SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND client_port IN ("+
		ports+")")
}

// clientPortList is the local ports of process pid's connections to the
// server, comma-separated for SQL's IN (...); "" when it has none.
func (pg *testPostgres) clientPortList(t *testing.T, pid int) string {
	t.Helper()
	ports := clientPorts(t, pid, pg.port)
	list := make([]string, len(ports))
	for i, p := range ports {
		list[i] = strconv.Itoa(p)
	}
	return strings.Join(list, ",")
}

// clientPorts returns the local ports of pid's TCP connections to
// 127.0.0.1:serverPort: its sockets' inodes (/proc/PID/fd) looked up in
// the kernel's table of IPv4 connections (/proc/PID/net/tcp).
func clientPorts(t *testing.T, pid, serverPort int) []int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil // exited
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	file, err := os.Open(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return nil
	}
	defer file.Close()
	remote := fmt.Sprintf("0100007F:%04X", serverPort)
	var ports []int
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[2] != remote || !inodes[f[9]] {
			continue
		}
		_, hexPort, _ := strings.Cut(f[1], ":")
		if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
			ports = append(ports, int(p))
		}
	}
	return ports
}

// TestFailoverHarness checks the tools TestFailover hurts the fleet with,
// on one instance of today's daemon: the backends of a process's
// connections are found by their client ports and terminated, Postgres
// restarts, and the instance records runs before and after each.
func TestFailoverHarness(t *testing.T) {
	pg := startTestPostgres(t)
	prov := e2e.Serve(t, provider.New().Handler())
	dsn := pg.database(t, "harness")
	cfg := harness.Fast(prov, "", "search")
	cfg.Storage.Path = "FLEET-STORAGE"
	cfg.Server.Listen = "${TOOLPULSE_LISTEN}"
	config := e2e.Config(t, t.TempDir(), cfg)
	if err := os.WriteFile(config, []byte(failoverYAML(t, config)), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fleet{t: t, config: config, dsn: dsn, began: time.Now()}
	f.start(0)
	runs := func() int {
		if pg.count(t, dsn, "SELECT count(*) FROM pg_tables WHERE tablename = 'results'") == 0 {
			return 0 // not migrated yet
		}
		return pg.count(t, dsn, "SELECT count(*) FROM results")
	}
	f.waitFor("a recorded run", 15*time.Second, func() bool { return runs() > 0 })
	if got := clientPorts(t, f.nodes[0].proc.Pid(), pg.port); len(got) == 0 {
		t.Fatalf("no connection of pid %d to port %d found", f.nodes[0].proc.Pid(), pg.port)
	}
	if n := pg.terminate(t, f.nodes[0].proc.Pid()); n == 0 {
		t.Fatal("terminated no backend of the instance")
	}
	f.logf("cut")
	before := runs()
	f.waitFor("runs recorded after the cut", 15*time.Second, func() bool { return runs() > before+2 })
	f.logf("runs recorded after the cut")
	pg.restart(t)
	f.logf("Postgres restarted")
	before = runs()
	f.waitFor("runs recorded after the restart", 15*time.Second, func() bool { return runs() > before+2 })
	f.logf("runs recorded after the restart")
	if n := pg.terminate(t, os.Getpid()); n != 0 {
		t.Errorf("terminated %d backends of the test itself, which has no connection", n)
	}
	if err := f.nodes[0].proc.Stop(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM: %v, want exit 0", err)
	}
}
