package sqlite_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// BenchmarkRecord stores one contract_error with one attempt and a shape
// per iteration, each in its own durable (WAL, synchronous=NORMAL)
// transaction.
func BenchmarkRecord(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := s.Record(ctx, contractError("op-"+strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordWithRetries stores a pass that took two attempts.
func BenchmarkRecordWithRetries(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := s.Record(ctx, passAfterRetry("op-"+strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordParallel has many goroutines record at once, as the
// runner's concurrent probes do; they queue for the one writer.
func BenchmarkRecordParallel(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	b.ReportAllocs()
	var n atomic.Int64
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Record(ctx, contractError("op-"+strconv.FormatInt(n.Add(1), 10))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkResult reads one result with its attempts and shape back.
func BenchmarkResult(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	if err := s.Record(ctx, passAfterRetry("op-1")); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Result(ctx, "op-1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordRun stores what a failing run with alerting changes, each
// in its own durable transaction: a contract_error with its attempt, shape
// counts and probe hour, the probe's alert state and a firing alert; with
// a drift, also the drift row and its linked shape_drift alert. "busy
// hour" records the first case with durations spread over 20 ms to 2 s,
// all in one hour of one probe, so that its row of probe_hours holds
// some 200 buckets, as an hour of a probe run every second does. It also
// reports the process's CPU time per run (cpu-ns/op), which a busy
// machine does not inflate as it does ns/op.
func BenchmarkRecordRun(b *testing.B) {
	for _, bb := range []struct {
		name        string
		drift, busy bool
	}{{"state+alert", false, false}, {"drift+state+2alerts", true, false}, {"busy hour", false, true}} {
		b.Run(bb.name, func(b *testing.B) {
			ctx := context.Background()
			s, _ := newStore(b)
			b.ReportAllocs()
			i := 0
			cpu := processCPU()
			for b.Loop() {
				i++
				rec := driftRun("op-" + strconv.Itoa(i))
				if !bb.drift {
					rec.Drift, rec.Alerts = nil, rec.Alerts[:1]
				}
				if bb.busy {
					rec.Result.Duration = time.Duration(20+i*7919%1981) * time.Millisecond
				}
				if err := s.RecordRun(ctx, rec); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkRecordRunConcurrent records BenchmarkRecordRun's "state+alert"
// run from many goroutines at once, as the daemon's probes do. "16
// goroutines" records as fast as it can, each goroutine waiting for its run
// to be committed before it records the next; "1000 per s" starts a
// goroutine for one run every millisecond, of 1,000 probes in turn, as
// 1,000 probes run every second do, so its ns/op is the interval and its
// cpu-ns/op what matters. Both report the process's CPU time per run
// (cpu-ns/op) as BenchmarkRecordRun does, and how many runs a commit held
// on average (runs/commit).
func BenchmarkRecordRunConcurrent(b *testing.B) {
	ctx := context.Background()
	b.Run("16 goroutines", func(b *testing.B) {
		const goroutines = 16
		s, _ := newStore(b)
		b.ReportAllocs()
		var n atomic.Int64
		b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		cpu := processCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := s.RecordRun(ctx, stateAlertRun("op-"+strconv.FormatInt(n.Add(1), 10))); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportRecording(b, s, processCPU()-cpu)
	})
	b.Run("1000 per s", func(b *testing.B) {
		s, _ := newStore(b)
		b.ReportAllocs()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var wg sync.WaitGroup
		i := 0
		cpu := processCPU()
		for b.Loop() {
			<-tick.C
			i++
			rec := stateAlertRun("op-" + strconv.Itoa(i))
			spreadProbe(rec, "probe-"+strconv.Itoa(i%1000))
			wg.Go(func() {
				if err := s.RecordRun(ctx, rec); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		reportRecording(b, s, processCPU()-cpu)
	})
}

// stateAlertRun is BenchmarkRecordRun's "state+alert" run: a contract_error
// with its attempt and shape, the probe's alert state and a firing alert.
func stateAlertRun(id string) *results.RunRecord {
	rec := driftRun(id)
	rec.Drift, rec.Alerts = nil, rec.Alerts[:1]
	return rec
}

// spreadProbe makes rec a run of probe, as the daemon's runs come from
// many probes, each with its own rows of probe_hours, shape_counts and
// alert_state.
func spreadProbe(rec *results.RunRecord, probe string) {
	rec.Result.Probe = probe
	rec.AlertState.Probe = probe
	for i := range rec.Alerts {
		rec.Alerts[i].Probe = probe
	}
}

// reportRecording reports the CPU time per run and the runs per commit.
func reportRecording(b *testing.B, s *sqlite.Store, cpu time.Duration) {
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	if commits, runs := sqlite.Commits(s); commits > 0 {
		b.ReportMetric(float64(runs)/float64(commits), "runs/commit")
	}
}

// fillDay writes a run of every probe every interval from start to end, as
// RecordRun would have (results rows with their attempts, their
// shape_counts buckets and probe_hours), in one transaction: recording
// 432,000 runs one by one would take minutes. One run in ten has the map layout, the rest the
// list layout. Durations are scattered over 20..531 ms; one run in 13 passed on
// its second attempt, one in 53 is a contract_error, and one in 70 of the
// map-layout runs timed out three times (unavailable, no shape).
func fillDay(b testing.TB, path string, probes int, start, end time.Time, every time.Duration) {
	b.Helper()
	db := operatorDB(b, path, "_busy_timeout=5000&_foreign_keys=on")
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	for _, sh := range []*results.Shape{listShape(), mapShape()} {
		at := results.FormatTime(start)
		if _, err := tx.Exec(`INSERT INTO shapes (fingerprint, canonical, first_seen, last_seen, seen_count)
			VALUES (?, ?, ?, ?, 1) ON CONFLICT DO NOTHING`, sh.Fingerprint, sh.Canonical, at, at); err != nil {
			b.Fatal(err)
		}
	}
	ins, err := tx.Prepare(`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome,
		code, message, retryable, attempts, http_status, consumer, consumer_version, rule_hash,
		shape_fingerprint, response_sample)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'select_results', '2', 'h', ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer ins.Close()
	att, err := tx.Prepare(`INSERT INTO attempts (operation_id, number, started_at, duration_ms,
		http_status, code, message, wait_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer att.Close()
	// Operation ids continue from what is stored, so that fillDay can
	// add a day to a database that already holds some.
	n := 0
	if err := tx.QueryRow(`SELECT count(*) FROM results`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	for tick := 0; start.Add(time.Duration(tick) * every).Before(end); tick++ {
		at := start.Add(time.Duration(tick) * every)
		for p := range probes {
			n++
			var (
				fp                    any = fpList
				outcome                   = "pass"
				code, message, sample any
				status                any = 200
				retryable, attempts       = 0, 1
				duration                  = 20 + int(uint32(n)*2654435761>>23) // 20..531 ms, scattered
			)
			if (tick+p)%10 == 0 {
				fp = fpMap
			}
			switch {
			case fp == fpMap && n%7 == 0:
				fp, outcome, code, message, status = nil, "unavailable", "timeout", "no response within 5s", nil
				retryable, attempts = 1, 3
			case n%53 == 0:
				outcome, code, message, sample = "contract_error", "invalid_item", "item 0: score is string", `{"results":[]}`
			case n%13 == 0:
				attempts = 2
			}
			id := "op-" + strconv.Itoa(n)
			started := results.FormatTime(at)
			if _, err := ins.Exec(id, "probe-"+strconv.Itoa(p), started, duration, outcome,
				code, message, retryable, attempts, status, fp, sample); err != nil {
				b.Fatal(err)
			}
			for a := 1; a <= attempts; a++ {
				var aStatus, aCode any = status, code
				if a < attempts {
					aStatus, aCode = 503, "server_error"
				}
				if _, err := att.Exec(id, a, started, duration/attempts, aStatus, aCode, nil, 0); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// The same buckets RecordRun keeps, computed as migration 0002 does.
	if _, err := tx.Exec(`INSERT INTO shape_counts (probe, hour, fingerprint, runs, last_seen)
		SELECT probe, substr(started_at, 1, 13), shape_fingerprint, count(*), max(started_at)
		FROM results WHERE shape_fingerprint IS NOT NULL AND started_at >= ? AND started_at < ?
		GROUP BY probe, substr(started_at, 1, 13), shape_fingerprint
		ON CONFLICT (probe, hour, fingerprint) DO UPDATE SET
		    runs = runs + excluded.runs, last_seen = max(last_seen, excluded.last_seen)`,
		results.FormatTime(start), results.FormatTime(end)); err != nil {
		b.Fatal(err)
	}
	// probe_hours as migration 0005 sums it up, from every stored run.
	if _, err := tx.Exec(`DELETE FROM probe_hours`); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(sqlite.ProbeHoursBackfill()); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// benchDay is the database of the read benchmarks: 24 hours of 50
// probes, one run every 10 s each (432,000 results, 470,000 attempts).
func benchDay(b *testing.B) (s *sqlite.Store, path string, start, end time.Time) {
	b.Helper()
	s, path = newStore(b)
	end = t0
	start = end.Add(-24 * time.Hour)
	fillDay(b, path, 50, start, end, 10*time.Second)
	return s, path, start, end
}

// BenchmarkHistory lists recorded results as toolpulse history and the
// API do, on benchDay's database: each page with its attempts.
func BenchmarkHistory(b *testing.B) {
	ctx := context.Background()
	s, _, start, end := benchDay(b)
	for _, bb := range []struct {
		name string
		q    results.HistoryQuery
	}{
		{"one probe limit 100", results.HistoryQuery{Probes: []string{"probe-7"}, Limit: 100}},
		{"one probe since 1h", results.HistoryQuery{Probes: []string{"probe-7"}, Since: end.Add(-time.Hour), Limit: 1000}},
		{"one probe contract_error limit 100", results.HistoryQuery{Probes: []string{"probe-7"},
			Outcomes: []results.Outcome{results.ContractError}, Limit: 100}},
		{"all probes limit 50", results.HistoryQuery{}},
		{"all probes 12h ago limit 100", results.HistoryQuery{Until: start.Add(12 * time.Hour), Limit: 100}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rs, err := s.History(ctx, bb.q)
				if err != nil || len(rs) == 0 {
					b.Fatalf("History: %d results, %v", len(rs), err)
				}
			}
		})
	}
}

// BenchmarkStats sums up every probe's runs, as toolpulse stats does, on
// benchDay's database: over the whole day (432,000 runs) and its last
// hour.
func BenchmarkStats(b *testing.B) {
	ctx := context.Background()
	s, _, start, end := benchDay(b)
	for _, bb := range []struct {
		name        string
		since, till time.Time
	}{
		{"24h", start, time.Time{}},
		{"1h", end.Add(-time.Hour), time.Time{}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st, err := s.Stats(ctx, bb.since, bb.till)
				if err != nil || len(st) != 50 {
					b.Fatalf("Stats: %d probes, %v", len(st), err)
				}
			}
		})
	}
}

// BenchmarkLatest reads the latest result of each of benchDay's 50 probes.
func BenchmarkLatest(b *testing.B) {
	ctx := context.Background()
	s, _, _, _ := benchDay(b)
	b.ReportAllocs()
	for b.Loop() {
		rs, err := s.Latest(ctx)
		if err != nil || len(rs) != 50 {
			b.Fatalf("Latest: %d results, %v", len(rs), err)
		}
	}
}
