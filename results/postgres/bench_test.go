package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// BenchmarkRecordRunConcurrent records runs from many goroutines at once,
// as the daemon's probes do, and reports how many runs shared a commit.
func BenchmarkRecordRunConcurrent(b *testing.B) {
	dsn := pgtest.Database(b)
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("op-%d", n.Add(1))
			rec := runWithID(id, n.Load()%2 == 0)
			if err := s.RecordRun(context.Background(), rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	commits, runs := postgres.Commits(s)
	b.ReportMetric(float64(runs)/float64(max(commits, 1)), "runs/commit")
}

// BenchmarkStats24h is `toolpulse stats --since 24h` (until now, as the
// command asks) on a history of
// TOOLPULSE_BENCH_RESULTS results (default 1,000,000) of 1,000 probes
// that ran every second, written in bulk and rolled up with
// RollupStatements.
func BenchmarkStats24h(b *testing.B) {
	total := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("TOOLPULSE_BENCH_RESULTS")); err == nil && v > 0 {
		total = v
	}
	const probes = 1000
	dsn := pgtest.Database(b)
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	start := time.Now()
	pgtest.Exec(b, dsn, fmt.Sprintf(`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome, code, message,
    retryable, attempts, consumer, consumer_version, rule_hash)
SELECT 'op-' || g, 'probe-' || lpad((g %% %[1]d)::text, 4, '0'),
    timestamptz '%[2]s' - (g / %[1]d) * interval '1 second',
    40 + (g * 7919) %% 400,
    CASE WHEN g %% 50 = 0 THEN 'unavailable' ELSE 'pass' END,
    CASE WHEN g %% 50 = 0 THEN 'timeout' END,
    CASE WHEN g %% 50 = 0 THEN 'no response within 5s' END,
    g %% 50 = 0, 1 + (g %% 97 = 0)::int, 'c', '1', 'h'
FROM generate_series(1::bigint, %[3]d) g`, probes, now.Format(time.RFC3339Nano), total))
	for _, stmt := range postgres.RollupStatements() {
		pgtest.Exec(b, dsn, stmt)
	}
	pgtest.Exec(b, dsn, `VACUUM ANALYZE`)
	b.Logf("%d results written and rolled up in %s", total, time.Since(start).Round(time.Millisecond))
	b.ResetTimer()
	for b.Loop() {
		st, err := s.Stats(context.Background(), now.Add(-24*time.Hour), now.Add(time.Millisecond))
		if err != nil {
			b.Fatal(err)
		}
		if len(st) != probes {
			b.Fatalf("%d probes in stats, want %d", len(st), probes)
		}
	}
}
