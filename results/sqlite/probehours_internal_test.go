package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/hourly"
)

// boundaryDurations are the durations around every power of two, where
// bucket widths change, and the extremes.
func boundaryDurations() []int64 {
	ds := []int64{0, 1, math.MaxInt64 - 1, math.MaxInt64}
	for k := 1; k < 63; k++ {
		ds = append(ds, 1<<k-1, 1<<k, 1<<k+1)
	}
	return ds
}

func TestParseBuckets(t *testing.T) {
	type pair struct{ bucket, runs int64 }
	for _, tt := range []struct {
		text string
		want []pair // nil: malformed
	}{
		{`{"20":1}`, []pair{{20, 1}}},
		{`{"20":1,"130":2},{"5":3}`, []pair{{20, 1}, {130, 2}, {5, 3}}},
		{`{}`, []pair{}},
		{`{},{"1":1}`, []pair{{1, 1}}},
		{`{"4611686018427387904":9}`, []pair{{1 << 62, 9}}},
		{``, nil},
		{`{`, nil},
		{`{"20":1`, nil},
		{`{"20":1,}`, nil},
		{`{"20":-1}`, nil},
		{`{"20":1.5}`, nil},
		{`{"20":1e3}`, nil},
		{`{"129":1}`, nil}, // 129 is inside bucket 128
		{`{20:1}`, nil},
		{`{"20" :1}`, nil},
		{`{"20":1} `, nil},
		{`{"20":1}{"5":1}`, nil},
		{`{"20":1},`, nil},
		{`{"99999999999999999999":1}`, nil},
		{`[1,2]`, nil},
	} {
		got := []pair{}
		err := parseBuckets([]byte(tt.text), func(b, n int64) { got = append(got, pair{b, n}) })
		switch {
		case tt.want == nil && err == nil:
			t.Errorf("parseBuckets(%q): %v, want an error", tt.text, got)
		case tt.want != nil && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("parseBuckets(%q): %v, %v, want %v", tt.text, got, err, tt.want)
		}
	}
}

func TestParseDurations(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []int64 // nil: malformed
	}{
		{`7`, []int64{7}},
		{`20,0,130,9223372036854775807`, []int64{20, 0, 130, math.MaxInt64}},
		{``, nil},
		{`1,`, nil},
		{`,1`, nil},
		{`1;2`, nil},
		{`-1`, nil},
		{`1.5`, nil},
		{`9223372036854775808`, nil},
	} {
		var got []int64
		err := parseDurations([]byte(tt.text), func(ms int64) { got = append(got, ms) })
		switch {
		case tt.want == nil && err == nil:
			t.Errorf("parseDurations(%q): %v, want an error", tt.text, got)
		case tt.want != nil && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("parseDurations(%q): %v, %v, want %v", tt.text, got, err, tt.want)
		}
	}
}

// readProbeHours returns probe_hours as a map.
func readProbeHours(t *testing.T, db *sql.DB) map[hourKey]hourly.Sums {
	t.Helper()
	rows, err := db.Query(`SELECT probe, hour, location, runs, pass, contract_error, unavailable,
		passed_after_retries, retries, duration_buckets FROM probe_hours`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[hourKey]hourly.Sums{}
	for rows.Next() {
		var (
			k    hourKey
			h    hourly.Sums
			text []byte
		)
		if err := rows.Scan(&k.probe, &k.hour, &k.location, &h.Runs, &h.Pass, &h.ContractError, &h.Unavailable,
			&h.PassedAfterRetries, &h.Retries, &text); err != nil {
			t.Fatal(err)
		}
		h.Buckets = map[int64]int64{}
		if err := parseBuckets(text, func(b, n int64) { h.Buckets[b] += n }); err != nil {
			t.Fatalf("%v: %q: %v", k, text, err)
		}
		out[k] = h
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// recountProbeHours sums results up as probe_hours should.
func recountProbeHours(t *testing.T, db *sql.DB) map[hourKey]hourly.Sums {
	t.Helper()
	rows, err := db.Query(`SELECT probe, started_at, duration_ms, outcome, attempts, location FROM results`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[hourKey]hourly.Sums{}
	for rows.Next() {
		var (
			probe, at, outcome, location string
			ms, attempts                 int64
		)
		if err := rows.Scan(&probe, &at, &ms, &outcome, &attempts, &location); err != nil {
			t.Fatal(err)
		}
		k := hourKey{probe, at[:13], location}
		h := out[k]
		h.Add(outcome, attempts, ms)
		out[k] = h
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func equalHours(a, b map[hourKey]hourly.Sums) bool {
	return maps.EqualFunc(a, b, func(x, y hourly.Sums) bool {
		return x.Runs == y.Runs && x.Pass == y.Pass && x.ContractError == y.ContractError &&
			x.Unavailable == y.Unavailable && x.PassedAfterRetries == y.PassedAfterRetries &&
			x.Retries == y.Retries && maps.Equal(x.Buckets, y.Buckets)
	})
}

// TestUpgradeTo0005BackfillsProbeHours fills a database the way the
// release that shipped migrations 0001 to 0004 did, with durations around
// every power of two (where the SQL spelling of the buckets in migration
// 0005 could part from hourly.Bucket), several probes, hours with gaps and runs
// on hour boundaries, then opens it with this release: probe_hours must
// hold what RecordRun would have written. Runs recorded afterwards add to
// the backfilled rows.
func TestUpgradeTo0005BackfillsProbeHours(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	before := fstest.MapFS{}
	for _, name := range []string{"0001_init.sql", "0002_drifts_alerts.sql", "0003_operator_views.sql", "0004_shape_samples.sql"} {
		text, err := fs.ReadFile(embedded, name)
		if err != nil {
			t.Fatal(err)
		}
		before[name] = &fstest.MapFile{Data: text}
	}
	old := writerDB(t, path, writeParams)
	if err := migrate(ctx, old, before); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 10, 26, 10, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(7, 8))
	tx, err := old.Begin()
	if err != nil {
		t.Fatal(err)
	}
	outcomes := []string{"pass", "contract_error", "unavailable"}
	n := 0
	insert := func(probe string, at time.Time, ms int64) {
		t.Helper()
		n++
		outcome := outcomes[rng.IntN(3)]
		var code any
		if outcome != "pass" {
			code = "timeout"
		}
		_, err := tx.Exec(`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome, code,
			attempts, consumer, consumer_version, rule_hash) VALUES (?, ?, ?, ?, ?, ?, ?, 'c', '1', 'h')`,
			fmt.Sprint("op-", n), probe, results.FormatTime(at), ms, outcome, code, rng.IntN(4))
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, d := range boundaryDurations() {
		// p1: hours 0, 1 and 5 after base; p2: hour 2; p3: every hour of
		// the first 8, each on its first and last millisecond.
		insert("p1", base.Add(time.Duration([]int{0, 1, 5}[i%3])*time.Hour+time.Duration(i)*time.Second), d)
		insert("p2", base.Add(2*time.Hour+time.Duration(i)*time.Second), d)
		edge := base.Add(time.Duration(i%8) * time.Hour)
		if i%2 == 1 {
			edge = edge.Add(time.Hour - time.Millisecond)
		}
		insert("p3", edge, d)
	}
	if err := tx.Commit(); err != nil {
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
	got, want := readProbeHours(t, s.writer), recountProbeHours(t, s.writer)
	if len(want) != 3+1+8 || !equalHours(got, want) {
		t.Fatalf("probe_hours after the upgrade:\n got  %v\n want %v", got, want)
	}

	for i, d := range []int64{5, 200, 70_000, 1 << 40} {
		r := results.Result{OperationID: fmt.Sprint("new-", i), Probe: "p1", StartedAt: base.Add(time.Duration(i) * time.Hour),
			Duration: time.Duration(d) * time.Millisecond, Outcome: results.Pass, Consumer: results.ConsumerRef{Name: "c"}}
		if err := s.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := readProbeHours(t, s.writer), recountProbeHours(t, s.writer); !equalHours(got, want) {
		t.Errorf("probe_hours after recording on the backfilled rows:\n got  %v\n want %v", got, want)
	}
}

// TestBackfillSearchesRanges checks the plan of migration 0005's
// backfill: it walks the probes and hours through the covering index and
// sums each up from an index range, never scanning results or sorting
// all of it.
func TestBackfillSearchesRanges(t *testing.T) {
	s := openInternal(t)
	plan := explain(t, s, ProbeHoursBackfill())
	joined := strings.Join(plan, "; ")
	for _, want := range []string{
		"SEARCH results USING COVERING INDEX results_probe_location_started (probe>?)",
		"SEARCH results USING COVERING INDEX results_probe_started_covering (probe=? AND started_at>?)",
		"SEARCH results USING COVERING INDEX results_probe_started_covering (probe=? AND started_at>? AND started_at<?)",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("plan %q, want it to contain %q", joined, want)
		}
	}
	for _, step := range plan {
		if strings.HasPrefix(step, "SCAN results") {
			t.Errorf("plan %q: step %q reads all of results", joined, step)
		}
	}
}

// TestRefusedCommitLeavesProbeHours records a run whose commit SQLite
// refuses, after every statement of it ran, as a crash before the commit
// would leave it: neither the result nor its share of probe_hours is
// stored. Only a commit that stores a result is refused, so a probe hour
// written in a transaction of its own would show.
func TestRefusedCommitLeavesProbeHours(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	if err := s.Record(ctx, passAt("op-1", pruneBase)); err != nil {
		t.Fatal(err)
	}
	before := readProbeHours(t, s.writer)

	hooks := func(refuse bool) {
		t.Helper()
		conn, err := s.writer.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close() // back to the pool: the writer's only connection, hooks and all
		err = conn.Raw(func(dc any) error {
			c := dc.(*sqlite3.SQLiteConn)
			if !refuse {
				c.RegisterUpdateHook(nil)
				c.RegisterCommitHook(nil)
				return nil
			}
			inserted := false
			c.RegisterUpdateHook(func(op int, _, table string, _ int64) {
				inserted = inserted || (op == sqlite3.SQLITE_INSERT && table == "results")
			})
			c.RegisterCommitHook(func() int {
				if inserted {
					return 1 // a rollback, which SQLite then does
				}
				return 0
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	hooks(true)
	later := passAt("op-2", pruneBase.Add(time.Minute))
	later.Duration = 300 * time.Millisecond
	if err := s.Record(ctx, later); err == nil {
		t.Fatal("Record with its commit refused: no error")
	}
	hooks(false)

	if got := readProbeHours(t, s.writer); !equalHours(got, before) {
		t.Errorf("probe_hours after a refused commit:\n got  %v\n want %v", got, before)
	}
	if got := recountProbeHours(t, s.writer); !equalHours(got, before) {
		t.Errorf("results after a refused commit:\n got  %v\n want %v", got, before)
	}
	// The same run goes in once the store commits again.
	if err := s.Record(ctx, later); err != nil {
		t.Fatal(err)
	}
	if got, want := readProbeHours(t, s.writer), recountProbeHours(t, s.writer); !equalHours(got, want) || got[hourKey{"p", "2026-10-26T13", "default"}].Runs != 2 {
		t.Errorf("probe_hours after recording again:\n got  %v\n want %v with 2 runs", got, want)
	}
}

// TestSplitWindow checks how Stats splits its window: every whole UTC hour
// inside it comes from probe_hours, and only what is left at either end
// from results.
func TestSplitWindow(t *testing.T) {
	h := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for _, tt := range []struct {
		name         string
		since, until time.Time
		want         statsWindow
	}{
		{"on the hour", h, h.Add(2 * time.Hour), statsWindow{"2026-10-26T13", "2026-10-26T15",
			[2]string{"2026-10-26T13:00:00.000Z", "2026-10-26T13:00:00.000Z"},
			[2]string{"2026-10-26T15:00:00.000Z", "2026-10-26T15:00:00.000Z"}}},
		{"off the hour", h.Add(-ms), h.Add(2*time.Hour + ms), statsWindow{"2026-10-26T13", "2026-10-26T15",
			[2]string{"2026-10-26T12:59:59.999Z", "2026-10-26T13:00:00.000Z"},
			[2]string{"2026-10-26T15:00:00.000Z", "2026-10-26T15:00:00.001Z"}}},
		// Rounded up to the millisecond, as stored times have it: until
		// takes in all of the hour before 15:00.
		{"below a millisecond", h.Add(time.Nanosecond), h.Add(2*time.Hour - time.Nanosecond), statsWindow{"2026-10-26T14", "2026-10-26T15",
			[2]string{"2026-10-26T13:00:00.001Z", "2026-10-26T14:00:00.000Z"},
			[2]string{"2026-10-26T15:00:00.000Z", "2026-10-26T15:00:00.000Z"}}},
		{"open ends", time.Time{}, time.Time{}, statsWindow{"", "~", [2]string{}, [2]string{}}},
		{"since only", h.Add(30 * time.Minute), time.Time{}, statsWindow{"2026-10-26T14", "~",
			[2]string{"2026-10-26T13:30:00.000Z", "2026-10-26T14:00:00.000Z"}, [2]string{}}},
		{"no whole hour, across a boundary", h.Add(30 * time.Minute), h.Add(90 * time.Minute), statsWindow{
			head: [2]string{"2026-10-26T13:30:00.000Z", "2026-10-26T14:30:00.000Z"}}},
		{"within one hour", h.Add(10 * time.Minute), h.Add(20 * time.Minute), statsWindow{
			head: [2]string{"2026-10-26T13:10:00.000Z", "2026-10-26T13:20:00.000Z"}}},
		{"until before since", h.Add(2 * time.Hour), h, statsWindow{
			head: [2]string{"2026-10-26T15:00:00.000Z", "2026-10-26T13:00:00.000Z"}}},
	} {
		if got := splitWindow(tt.since, tt.until); got != tt.want {
			t.Errorf("%s: splitWindow(%v, %v):\n got  %+v\n want %+v", tt.name, tt.since, tt.until, got, tt.want)
		}
	}
}
