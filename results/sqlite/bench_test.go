package sqlite_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
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
