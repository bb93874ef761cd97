package sqlite_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
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
// in its own durable transaction: a contract_error with its attempt and
// shape counts, the probe's alert state and a firing alert; with a drift,
// also the drift row and its linked shape_drift alert.
func BenchmarkRecordRun(b *testing.B) {
	for _, bb := range []struct {
		name  string
		drift bool
	}{{"state+alert", false}, {"drift+state+2alerts", true}} {
		b.Run(bb.name, func(b *testing.B) {
			ctx := context.Background()
			s, _ := newStore(b)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				rec := driftRun("op-" + strconv.Itoa(i))
				if !bb.drift {
					rec.Drift, rec.Alerts = nil, rec.Alerts[:1]
				}
				if err := s.RecordRun(ctx, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDominantShape asks for a probe's dominant shape of the last 24
// hours in a database holding 24 hours of results of 50 probes, one run
// every 10 s each (432,000 results). "results scan" is the same question
// asked of the results table, for comparison: what shape_counts saves.
func BenchmarkDominantShape(b *testing.B) {
	const (
		probes = 50
		every  = 10 * time.Second
		window = 24 * time.Hour
	)
	ctx := context.Background()
	s, path := newStore(b)
	end := t0
	start := end.Add(-window)
	fillDay(b, path, probes, start, end, every)
	since := start

	b.Run("shape_counts", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			fp, n, err := s.DominantShape(ctx, "probe-"+strconv.Itoa(i%probes), since)
			if err != nil || fp != fpList || n < int(window/every)*9/10 {
				b.Fatalf("DominantShape: %q %d %v", fp, n, err)
			}
		}
	})
	b.Run("results scan", func(b *testing.B) {
		op := operatorDB(b, path, "mode=ro")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			var fp string
			var n int
			err := op.QueryRowContext(ctx, `SELECT shape_fingerprint, count(*) AS n FROM results
				WHERE probe = ? AND started_at >= ? AND shape_fingerprint IS NOT NULL
				GROUP BY shape_fingerprint ORDER BY n DESC LIMIT 1`,
				"probe-"+strconv.Itoa(i%probes), results.FormatTime(since)).Scan(&fp, &n)
			if err != nil || fp != fpList {
				b.Fatalf("scan: %q %d %v", fp, n, err)
			}
		}
	})
}

// fillDay writes a run of every probe every interval from start to end, as
// RecordRun would have (results rows and their shape_counts buckets), in
// one transaction: recording 432,000 runs one by one would take minutes.
// One run in ten has the map layout, the rest the list layout.
func fillDay(b *testing.B, path string, probes int, start, end time.Time, every time.Duration) {
	b.Helper()
	db := operatorDB(b, path, "_busy_timeout=5000")
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	for _, sh := range []*results.Shape{listShape(), mapShape()} {
		at := results.FormatTime(start)
		if _, err := tx.Exec(`INSERT INTO shapes VALUES (?, ?, ?, ?, 1)`, sh.Fingerprint, sh.Canonical, at, at); err != nil {
			b.Fatal(err)
		}
	}
	ins, err := tx.Prepare(`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome,
		attempts, http_status, consumer, consumer_version, rule_hash, shape_fingerprint)
		VALUES (?, ?, ?, 41, 'pass', 1, 200, 'select_results', '2', 'h', ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer ins.Close()
	n := 0
	for tick := 0; start.Add(time.Duration(tick) * every).Before(end); tick++ {
		at := start.Add(time.Duration(tick) * every)
		for p := range probes {
			n++
			fp := fpList
			if (tick+p)%10 == 0 {
				fp = fpMap
			}
			if _, err := ins.Exec("op-"+strconv.Itoa(n), "probe-"+strconv.Itoa(p), results.FormatTime(at), fp); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The same buckets RecordRun keeps, computed as migration 0002 does.
	if _, err := tx.Exec(`INSERT INTO shape_counts (probe, hour, fingerprint, runs, last_seen)
		SELECT probe, substr(started_at, 1, 13), shape_fingerprint, count(*), max(started_at)
		FROM results WHERE shape_fingerprint IS NOT NULL
		GROUP BY probe, substr(started_at, 1, 13), shape_fingerprint`); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
