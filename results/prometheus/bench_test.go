package prometheus_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	metrics "github.com/toolpulse/toolpulse/results/prometheus"
)

// benchProbes is the fleet size the memory and scrape targets are set for.
const benchProbes = 10_000

// fleet returns n probe names and one result for each: a third pass, a
// third fail their contract, a third are unavailable after retries.
func fleet(n int) ([]string, []*results.Result) {
	names := make([]string, n)
	rs := make([]*results.Result, n)
	for i := range names {
		names[i] = fmt.Sprintf("probe-%05d", i)
		switch i % 3 {
		case 0:
			rs[i] = run(names[i], "", 120*time.Millisecond, 1, 5)
		case 1:
			rs[i] = run(names[i], results.CodeEmptySelection, 80*time.Millisecond, 1, 0)
		default:
			rs[i] = run(names[i], results.CodeTimeout, 5*time.Second, 3, 0)
		}
	}
	return names, rs
}

// heapInUse returns the bytes of live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMetricsMemory measures the heap the metrics keep per probe for
// a fleet of 10,000 probes after SetProbes and one run each. The probe
// names and results exist before the measurement starts, as they do in
// the daemon, where the config and the store own them.
func BenchmarkMetricsMemory(b *testing.B) {
	names, rs := fleet(benchProbes)
	var perProbe float64
	for b.Loop() {
		before := heapInUse()
		reg := metrics.NewRegistry()
		m, err := metrics.New(reg)
		if err != nil {
			b.Fatal(err)
		}
		m.SetProbes(names)
		for _, r := range rs {
			m.RunFinished(r)
		}
		after := heapInUse()
		perProbe = (float64(after) - float64(before)) / benchProbes
		runtime.KeepAlive(m)
		runtime.KeepAlive(reg)
	}
	b.ReportMetric(perProbe, "B/probe")
}

// BenchmarkScrape10k measures one scrape of 10,000 probes that each ran
// three times: Gather alone, the heap its result holds, and the whole
// /metrics response in text.
func BenchmarkScrape10k(b *testing.B) {
	names, rs := fleet(benchProbes)
	reg := metrics.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		b.Fatal(err)
	}
	m.SetProbes(names)
	for range 3 {
		for _, r := range rs {
			m.RunFinished(r)
		}
	}
	b.Run("gather", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("live", func(b *testing.B) {
		// The heap a scrape holds at its peak, until it is encoded.
		var live float64
		for b.Loop() {
			before := heapInUse()
			mfs, err := reg.Gather()
			if err != nil {
				b.Fatal(err)
			}
			live = float64(heapInUse()) - float64(before)
			runtime.KeepAlive(mfs)
		}
		b.ReportMetric(live/benchProbes, "B/probe")
	})
	b.Run("http", func(b *testing.B) {
		b.ReportAllocs()
		h := metrics.Handler(reg)
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if rec.Code != 200 {
				b.Fatalf("HTTP %d", rec.Code)
			}
			_, _ = io.Copy(io.Discard, rec.Body)
		}
	})
	b.Run("streamed", func(b *testing.B) {
		// The daemon's /metrics: the per-probe families written as the
		// text goes out (stream.go).
		b.ReportAllocs()
		h := m.Handler(reg)
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if rec.Code != 200 {
				b.Fatalf("HTTP %d", rec.Code)
			}
			_, _ = io.Copy(io.Discard, rec.Body)
		}
	})
}
